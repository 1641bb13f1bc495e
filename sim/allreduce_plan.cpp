#include "sim/allreduce_plan.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <numeric>

namespace dbench::sim {
namespace {

// Rank r's place in the in-order binary tree on ranks 0..n-1 (see double_binary_tree).
void btree_links(int n, int r, int& parent, std::array<int, 2>& children) {
  children = {-1, -1};
  if (r == 0) {
    parent = -1;
    if (n > 1) {
      children[0] = static_cast<int>(std::bit_floor(static_cast<unsigned>(n - 1)));
    }
    return;
  }
  const int low = r & -r;
  // The parent has the next bit as its lowest: r - low or r + low; past the end, the one below.
  parent = (r ^ low) | (low << 1);
  if (parent >= n) {
    parent = r ^ low;
  }
  if (low > 1) {
    children[0] = r - low / 2;
    // The right subtree may be cut by the end: its root is the largest r + h that exists.
    for (int h = low / 2; h > 0; h /= 2) {
      if (r + h < n) {
        children[1] = r + h;
        break;
      }
    }
  }
}

// The tree on ranks, its GPUs renumbered by gpu_of(rank); heights and depths filled in.
template <class GpuOf>
BinaryTree relabelled_btree(int n, GpuOf gpu_of) {
  BinaryTree tree;
  const auto size = static_cast<std::size_t>(n);
  tree.parent.assign(size, -1);
  tree.children.assign(size, {-1, -1});
  tree.height.assign(size, 0);
  tree.depth.assign(size, 0);
  const auto relabel = [&](int rank) { return rank < 0 ? -1 : gpu_of(rank); };
  for (int r = 0; r < n; ++r) {
    int parent = -1;
    std::array<int, 2> children{};
    btree_links(n, r, parent, children);
    const auto g = static_cast<std::size_t>(gpu_of(r));
    tree.parent[g] = relabel(parent);
    tree.children[g] = {relabel(children[0]), relabel(children[1])};
  }
  tree.root = gpu_of(0);
  std::vector<int> order(size);
  std::iota(order.begin(), order.end(), 0);
  for (int g = 0; g < n; ++g) {
    for (int p = tree.parent[static_cast<std::size_t>(g)]; p >= 0;
         p = tree.parent[static_cast<std::size_t>(p)]) {
      ++tree.depth[static_cast<std::size_t>(g)];
    }
  }
  // Deepest first: a GPU's height is final before its parent's is raised by it.
  std::sort(order.begin(), order.end(), [&](int a, int b) {
    return tree.depth[static_cast<std::size_t>(a)] > tree.depth[static_cast<std::size_t>(b)];
  });
  for (const int g : order) {
    const int p = tree.parent[static_cast<std::size_t>(g)];
    if (p >= 0) {
      auto& h = tree.height[static_cast<std::size_t>(p)];
      h = std::max(h, tree.height[static_cast<std::size_t>(g)] + 1);
    }
  }
  tree.levels = tree.height[static_cast<std::size_t>(tree.root)];
  return tree;
}

// Length of the overlap of [a0, a1) and [b0, b1).
int overlap(int a0, int a1, int b0, int b1) {
  return std::max(0, std::min(a1, b1) - std::max(a0, b0));
}

// One hop's latency: inside a node two GPU ports; between nodes also two NICs and the fabric's longest route
// (fabric_latency_s(): a pipelined step waits for its slowest message, the one between buildings where
// there are several).
double hop_latency_s(const PlatformSpec& p, int gpus, bool crosses_nodes) {
  const double intra = 2.0 * p.intra_node_latency_s;
  return crosses_nodes ? intra + 2.0 * p.nic_latency_s + fabric_latency_s(p, gpus) : intra;
}

std::string range_key(int lo, int hi) {
  return lo > hi ? std::string("x") : fmt::format("{}-{}", lo, hi);
}

}  // namespace

std::array<BinaryTree, 2> double_binary_tree(int n) {
  if (n < 1) {
    throw PlatformError("train.workers", fmt::format("must be >= 1 GPU, got {}", n));
  }
  // Even n: the mirror turns odd ranks (tree 0's leaves) into even ones (inner); odd n: a shift does.
  const auto second = [n](int rank) { return n % 2 == 0 ? n - 1 - rank : (rank + 1) % n; };
  return {relabelled_btree(n, [](int rank) { return rank; }), relabelled_btree(n, second)};
}

int TreePlan::steps() const {
  int levels = 0;
  for (const BinaryTree& tree : trees) {
    levels = std::max(levels, tree.levels);
  }
  return chunks + 2 * levels - 1;
}

bool TreePlan::up_active(int t, int gpu, int step) const {
  const BinaryTree& tree = trees[static_cast<std::size_t>(t)];
  const int h = tree.height[static_cast<std::size_t>(gpu)];
  return gpu != tree.root && step >= h && step < h + chunks;
}

bool TreePlan::down_active(int t, int gpu, int step) const {
  const BinaryTree& tree = trees[static_cast<std::size_t>(t)];
  const int first = tree.levels + tree.depth[static_cast<std::size_t>(gpu)] - 1;
  return gpu != tree.root && step >= first && step < first + chunks;
}

std::string TreePlan::step_key(int step) const {
  std::string key;
  for (const BinaryTree& tree : trees) {
    const int levels = tree.levels;
    // Up: heights h with h <= step < h + K; down: depths d with levels + d - 1 <= step < levels + d - 1 + K.
    key += range_key(std::max(0, step - chunks + 1), std::min(step, levels - 1)) + "/" +
           range_key(std::max(1, step - levels - chunks + 2), std::min(levels, step - levels + 1)) + ";";
  }
  return key;
}

TreePlan tree_plan(int gpus, double bytes, int chunks, int gpus_per_node, int channels) {
  TreePlan plan;
  const std::array<BinaryTree, 2> base = double_binary_tree(gpus);
  const int g = std::max(1, gpus_per_node);
  plan.chunks = std::max(1, chunks);
  channels = std::max(1, channels);
  plan.chunk_bytes = bytes / (2.0 * plan.chunks * channels);
  for (int c = 0; c < channels; ++c) {
    // Every node's GPUs rotated by c g / channels (whole nodes: gpus is a multiple of g across nodes).
    const int shift = c * g / channels;
    const auto rotate = [&](int gpu) { return gpu < 0 ? -1 : gpu / g * g + (gpu % g + shift) % g; };
    for (const BinaryTree& tree : base) {
      BinaryTree moved = tree;
      moved.root = rotate(tree.root);
      for (int v = 0; v < gpus; ++v) {
        const auto from = static_cast<std::size_t>(v);
        const auto to = static_cast<std::size_t>(rotate(v));
        moved.parent[to] = rotate(tree.parent[from]);
        moved.children[to] = {rotate(tree.children[from][0]), rotate(tree.children[from][1])};
        moved.height[to] = tree.height[from];
        moved.depth[to] = tree.depth[from];
      }
      plan.trees.push_back(std::move(moved));
    }
  }
  return plan;
}

int HierarchicalPlan::inter_steps() const {
  if (nodes < 2) {
    return 0;
  }
  return in_network ? 1 : 2 * (nodes - 1);
}

int HierarchicalPlan::chunk_steps() const {
  return 2 * (gpus_per_node - 1) + inter_steps();
}

int HierarchicalPlan::steps() const {
  return chunks + chunk_steps() - 1;
}

int HierarchicalPlan::intra_chunks(int step) const {
  // Chunk k is at its own step step - k; its intra-node steps are [0, g - 1) and [g - 1 + inter, P).
  const int first = step - chunks + 1;
  const int inter_end = gpus_per_node - 1 + inter_steps();
  return overlap(first, step + 1, 0, gpus_per_node - 1) + overlap(first, step + 1, inter_end, chunk_steps());
}

int HierarchicalPlan::inter_chunks(int step) const {
  const int first = step - chunks + 1;
  return overlap(first, step + 1, gpus_per_node - 1, gpus_per_node - 1 + inter_steps());
}

double HierarchicalPlan::intra_bytes(int step) const {
  return intra_chunks(step) * chunk_bytes / gpus_per_node;
}

double HierarchicalPlan::inter_bytes(int step) const {
  if (in_network) {
    return inter_chunks(step) * chunk_bytes / gpus_per_node * inter_scale;
  }
  return inter_chunks(step) * chunk_bytes / (static_cast<double>(gpus_per_node) * nodes);
}

int HierarchicalPlan::intra_next(int gpu) const {
  return gpu / gpus_per_node * gpus_per_node + (gpu % gpus_per_node + 1) % gpus_per_node;
}

int HierarchicalPlan::inter_next(int gpu) const {
  return (gpu + gpus_per_node) % gpus;
}

HierarchicalPlan hierarchical_plan(const PlatformSpec& platform, int gpus, double bytes, int chunks,
                                   bool in_network) {
  HierarchicalPlan plan;
  plan.in_network = in_network;
  plan.inter_scale = in_network ? platform.network_efficiency / platform.collnet_efficiency : 1.0;
  plan.gpus = gpus;
  plan.gpus_per_node = std::min(platform.gpus_per_node, gpus);
  plan.nodes = gpus / plan.gpus_per_node;
  plan.chunks = std::max(1, chunks);
  plan.chunk_bytes = bytes / plan.chunks;
  return plan;
}

int tree_chunks(const PlatformSpec& platform, int gpus, double bytes, double step_overhead_s) {
  if (gpus < 2) {
    return 1;
  }
  // The trees' depth: ceil(log2 n) levels.
  const int levels = std::bit_width(static_cast<unsigned>(gpus - 1));
  const double fill_steps = 2.0 * levels - 1.0;
  const double alpha = hop_latency_s(platform, gpus, gpus > platform.gpus_per_node) + step_overhead_s;
  const double busiest_s = 2.0 * bytes / (platform.intra_node_bandwidth_Bps * platform.intra_node_efficiency);
  if (alpha <= 0.0) {
    return 256;
  }
  const double k = std::sqrt(0.5 * fill_steps * busiest_s / alpha);
  return static_cast<int>(std::clamp(std::round(k), 1.0, 256.0));
}

int hierarchical_chunks(const PlatformSpec& platform, int gpus, double bytes, double step_overhead_s,
                        bool in_network) {
  const int g = std::min(platform.gpus_per_node, gpus);
  const int nodes = gpus / g;
  if (g < 2 || nodes < 2) {
    return 1;  // one phase: nothing to overlap
  }
  const double port = platform.intra_node_bandwidth_Bps * platform.intra_node_efficiency;
  // The inter-node ring's share of a node's NICs, one ring per local rank.
  const double nic_share =
      std::min(port, platform.nic_bandwidth_Bps * platform.network_efficiency * platform.nics_per_node / g);
  const double intra_s = 2.0 * (g - 1) / g * bytes / port;
  const double inter_s =
      in_network ? bytes / g / (nic_share * platform.collnet_efficiency / platform.network_efficiency)
                 : 2.0 * (nodes - 1) / (static_cast<double>(g) * nodes) * bytes / nic_share;
  const double alpha_intra = hop_latency_s(platform, gpus, false) + step_overhead_s;
  const double alpha_inter = hop_latency_s(platform, gpus, true) + step_overhead_s;
  const int inter_steps = in_network ? 1 : 2 * (nodes - 1);
  const int steps = 2 * (g - 1) + inter_steps;
  const double unpipelined = 2.0 * (g - 1) * alpha_intra + inter_steps * alpha_inter + intra_s + inter_s;
  if (alpha_inter <= 0.0) {
    return 64;
  }
  const double hidden = std::min(intra_s, inter_s);
  const int k = static_cast<int>(std::clamp(std::round(std::sqrt(hidden / alpha_inter)), 1.0, 64.0));
  // Every pipelined step carries inter-node messages, so it pays the inter-node latency.
  const double pipelined = (k + steps - 1) * alpha_inter + std::max(intra_s, inter_s) + hidden / k;
  return pipelined < unpipelined ? k : 1;
}

}  // namespace dbench::sim
