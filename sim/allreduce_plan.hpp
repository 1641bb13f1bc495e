// The pipelined all-reduce algorithms as plain values: which GPU sends how many bytes to which in each step.
// Both timing fidelities read the same plan — the fast path simulates each distinct step once, full fidelity
// runs one actor per GPU through every step — so they cannot disagree on the algorithm, only on timing.
#pragma once

#include <array>
#include <string>
#include <vector>

#include "sim/platform.hpp"

namespace dbench::sim {

/// A binary tree over GPUs 0..n-1: each GPU's parent (-1 at the root), children (-1 where absent), height
/// (leaves 0) and depth (root 0).
struct BinaryTree {
  int root = 0;                              ///< the GPU at depth 0
  int levels = 0;                            ///< the root's height
  std::vector<int> parent;                   ///< -1 at the root
  std::vector<std::array<int, 2>> children;  ///< -1 where absent
  std::vector<int> height;                   ///< longest path down to a leaf
  std::vector<int> depth;                    ///< path length up to the root
};

/// NCCL's double binary tree over n GPUs (numbered node by node). Tree 0 is the in-order binary tree on
/// ranks (rank r with lowest set bit b has children r -+ b/2 and its parent at r -+ b; rank 0 is the root
/// with one child, the largest power of two below n):
///
///            0                  n = 8, tree 0        7     tree 1: the mirror (n - 1 - r), so that tree
///            4                                       3     0's leaves (odd ranks) are tree 1's inner
///        2       6                               5       1 GPUs; odd n: shifted by one instead
///      1   3   5   7                           6   4   2   0
///
/// Neighbours differ by small powers of two at the bottom, so the lower levels stay inside a node and only
/// the top log2(nodes) levels cross NICs. Throws PlatformError("train.workers") for n < 1.
std::array<BinaryTree, 2> double_binary_tree(int n);

/// The double-tree all-reduce of S bytes per GPU: each tree reduces and broadcasts half of S, split into
/// `chunks` chunks that stream through it, reduction and broadcast at once. A chunk leaves GPU v upwards at
/// step height(v) + k and reaches v from above at step levels + depth(v) - 1 + k: each GPU forwards in step
/// s what it received in step s - 1, so an all-reduce takes chunks + 2 levels - 1 steps.
///
/// Across nodes the data is striped over `channels` (one per NIC link, allreduce_channels()), each a double
/// tree of its own carrying S / channels: channel c's trees are the double binary tree with every node's
/// GPUs rotated by c * gpus_per_node / channels, so its inter-node edges (the top levels, between GPUs of the
/// same local rank) leave through NIC link c, as NCCL spreads its channels' trees over the NICs.
struct TreePlan {
  std::vector<BinaryTree> trees;  ///< 2 per channel: channel c's at 2c and 2c + 1
  int chunks = 1;                 ///< K, per tree
  double chunk_bytes = 0.0;       ///< S / (2 K channels): one message

  /// chunks + 2 max(levels) - 1.
  int steps() const;
  /// Whether `gpu` sends a chunk up tree t to its parent in `step`.
  bool up_active(int t, int gpu, int step) const;
  /// Whether `gpu` receives a chunk down tree t from its parent in `step`.
  bool down_active(int t, int gpu, int step) const;
  /// The set of edges active in `step`, as a key: steps with the same key move the same messages.
  std::string step_key(int step) const;
};

/// Builds the plan of a tree all-reduce of `bytes` per GPU in `chunks` chunks over `channels` channels
/// (nodes of `gpus_per_node` GPUs; one channel: the double binary tree itself).
TreePlan tree_plan(int gpus, double bytes, int chunks, int gpus_per_node = 1, int channels = 1);

/// The hierarchical all-reduce of S bytes per GPU, pipelined: S is cut into `chunks` chunks, and each chunk
/// goes through g - 1 steps of an intra-node ring reduce-scatter (S/(gK) per message), 2 (nodes - 1) steps
/// of an inter-node ring all-reduce among the GPUs of the same local rank (S/(g nodes K)), and g - 1 steps
/// of an intra-node all-gather. Chunk k is at its step s - k in step s, so the phases of different chunks
/// overlap (intra-node links and NICs busy at once); whatever a GPU sends one neighbour in a step travels as
/// one message. One chunk is the three phases one after the other.
///
/// With in-network reduction (CollNet) the inter-node phase is one step: each GPU sends its node's reduced
/// shard S/(gK) up through its NIC link and receives the fabric's sum back down. As point-to-point traffic
/// that is one message per GPU to the GPU of the same local rank on the next node (each NIC link carries the
/// shard once each way), scaled by `inter_scale` from the NIC's achieved point-to-point rate to the rate it
/// streams at while the switches reduce.
struct HierarchicalPlan {
  int gpus = 1;             ///< n
  int gpus_per_node = 1;    ///< g (min(platform's, n))
  int nodes = 1;            ///< n / g
  int chunks = 1;           ///< K
  double chunk_bytes = 0;   ///< S / K
  bool in_network = false;  ///< CollNet: the inter-node phase is the fabric's reduction
  double inter_scale = 1;   ///< in_network: network_efficiency / collnet_efficiency

  /// Steps of one chunk's inter-node phase: 2 (nodes - 1), or 1 in the network (0 on one node).
  int inter_steps() const;
  /// Steps of one chunk: 2 (g - 1) + inter_steps().
  int chunk_steps() const;
  /// chunks + chunk_steps() - 1.
  int steps() const;
  /// Chunks in an intra-node step (reduce-scatter or all-gather) during `step`.
  int intra_chunks(int step) const;
  /// Chunks in an inter-node step during `step`.
  int inter_chunks(int step) const;
  /// Bytes each GPU sends its intra-node ring neighbour in `step` (0: none).
  double intra_bytes(int step) const;
  /// Bytes each GPU sends its inter-node ring neighbour in `step` (0: none).
  double inter_bytes(int step) const;
  /// The next GPU of `gpu`'s intra-node ring.
  int intra_next(int gpu) const;
  /// The next GPU of `gpu`'s inter-node ring (same local rank, next node).
  int inter_next(int gpu) const;
};

/// Builds the plan of a hierarchical all-reduce of `bytes` per GPU in `chunks` chunks; `in_network`: the
/// CollNet variant (the platform's collnet_efficiency > 0).
HierarchicalPlan hierarchical_plan(const PlatformSpec& platform, int gpus, double bytes, int chunks,
                                   bool in_network = false);

/// The chunk count a pipelined tree uses for `bytes`: the K minimising the alpha-beta estimate
/// (K + 2 levels - 1) alpha + X (1 + (2 levels - 1) / (2K)) (every step pays a hop's latency alpha; X, the
/// busiest GPU port's share of the whole transfer, 2S / port bandwidth, is spread over K steps, and the fill
/// and drain steps carry about half a full step's load), K in [1, 256]. Bandwidths are the achieved ones;
/// `step_overhead_s` (the bulk protocol's handshake) adds to alpha.
int tree_chunks(const PlatformSpec& platform, int gpus, double bytes, double step_overhead_s = 0.0);

/// The chunk count of a pipelined hierarchical all-reduce: K = sqrt(Y / alpha) minimises
/// (K + steps - 1) alpha + max(intra, inter) + min(intra, inter) / K (the smaller phase hides behind the
/// larger one but for one chunk's worth), K in [1, 64]; 1 when the estimate says pipelining does not pay.
/// Bandwidths and `step_overhead_s` as in tree_chunks; `in_network` as in hierarchical_plan.
int hierarchical_chunks(const PlatformSpec& platform, int gpus, double bytes, double step_overhead_s = 0.0,
                        bool in_network = false);

}  // namespace dbench::sim
