// Gossip mixing of N replicas, x_i <- sum_j W_ij x_j, for a sparse W given in compressed rows.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "core/aligned_buffer.hpp"
#include "core/replica_view.hpp"

namespace dbench::topology {
class Graph;
}

namespace dbench::core {

/// W in compressed rows, as views: row i lists i's in-neighbours (itself included) and their weights.
struct MixingRows {
  /// Start of each row in `from` and `weight`: N + 1 increasing values, the first 0.
  std::span<const std::int32_t> offsets;
  /// Source replica of each term, in [0, N).
  std::span<const std::int32_t> from;
  /// Weight of each term.
  std::span<const float> weight;
};

/// Owns a W in compressed rows with float weights, e.g. converted from a topology::Graph's double weights.
class MixingMatrix {
 public:
  /// Rows from double weights (e.g. a topology::Graph's); throws MixingError when malformed.
  MixingMatrix(std::vector<std::int32_t> offsets, std::vector<std::int32_t> from,
               std::span<const double> weight);

  /// Number of replicas N.
  std::size_t nodes() const noexcept { return offsets_.size() - 1; }
  /// Number of terms (edges plus self loops).
  std::size_t entries() const noexcept { return from_.size(); }
  /// The view mix() takes, valid while this object lives.
  MixingRows rows() const noexcept { return {offsets_, from_, weight_}; }

 private:
  std::vector<std::int32_t> offsets_;
  std::vector<std::int32_t> from_;
  std::vector<float> weight_;
};

/// A graph's sparse rows in the float form the mixing kernel reads.
MixingMatrix to_mixing_matrix(const topology::Graph& graph);

/// Scratch mix() keeps between calls: one tile of copied columns per worker thread. Passing the same one to
/// every step (MixOptions::workspace) allocates and first touches the tiles once; without one, mix()
/// allocates them per call. One workspace serves one mix() at a time.
class MixWorkspace {
 public:
  /// The first `count` tiles, each of at least `floats` floats, grown where smaller.
  std::span<AlignedBuffer> tiles(std::size_t count, std::size_t floats);

 private:
  std::vector<AlignedBuffer> tiles_;
};

/// How mix() walks the columns of the matrices.
enum class MixWalk {
  /// In place or from tiles, picked from N and d (see MixOptions::block_cols).
  automatic,
  /// Column blocks of the matrices where they are, each thread prefetching its next block.
  in_place,
  /// Each column block first copied into a tile of contiguous rows, one per thread, and mixed from there: a
  /// row's readers find it in L2 however far apart in the matrix they are.
  tiles,
};

/// How mix()'s AVX-512 kernel stores its outputs (the same bits either way).
enum class MixStores {
  /// Streaming on Intel CPUs, through the caches elsewhere: measured on the exponential graph's mixing of
  /// 1008 replicas on 2 threads, streaming took 0.021-0.024 s against 0.044-0.052 s on an Intel Xeon
  /// (AVX-512, 2 MB L2 per core), and was 15-30 % slower than cached stores on an AMD EPYC (Zen 5).
  automatic,
  /// Plain stores: each output line is read into the cache before it is written.
  cached,
  /// Streaming stores past the caches, for rows that start on a cache line: no read of the output lines.
  streaming,
};

/// How mix() walks the matrices.
struct MixOptions {
  /// Columns per block: all N replicas' slices of one block are read from memory once and then served from
  /// cache to their d+1 readers; >= P disables blocking. 0 picks one from N and d: for d <= 2, long slices up
  /// to a 32 MB block; for larger d, a block of about 256 KB in slices of 64 to 512 columns while that block
  /// stays within 512 KB, else (automatic walk) tiles of 128 columns; tiles too above 768 replicas where
  /// those slices are down to 64 columns and a tile leaves at least 1 MB of L2 free. The results are the same
  /// bits whichever block size and walk compute them.
  std::size_t block_cols = 0;
  /// Worker threads (0: all hardware threads); each column block is computed by one thread.
  unsigned threads = 1;
  /// False forces the portable kernel even where AVX-512 is available (to compare the two).
  bool allow_avx512 = true;
  /// In place or from tiles.
  MixWalk walk = MixWalk::automatic;
  /// Where the tiles are kept between calls (nullptr: allocated per call).
  MixWorkspace* workspace = nullptr;
  /// Cached or streaming output stores.
  MixStores stores = MixStores::automatic;
};

/// out_i = sum_j W_ij in_j for every replica, computed as s_i in_i + sum_{j != i} W_ij (in_j - in_i) with s_i
/// the row sum (taken as exactly 1 when the float weights sum to 1 up to their rounding). That form is exact
/// at consensus and its rounding error scales with the disagreement, not with the values: a doubly-stochastic
/// W keeps the replica average over thousands of steps. Each element's terms are added in row order, so
/// results do not depend on the block size or thread count. `in` and `out` must not overlap.
void mix(const MixingRows& rows, ConstReplicaView in, ReplicaView out, const MixOptions& options = {});

/// mix() from a column-blocked input (BlockedView): each block already lies in memory as the tile the tiled
/// walk copies it into, so nothing is copied. The same bits as mix() of the row-major matrix, whatever the
/// block width and thread count. `in` and `out` must not overlap.
void mix_from_blocks(const MixingRows& rows, ConstBlockedView in, ReplicaView out,
                     const MixOptions& options = {});

/// How many terms of `rows` read another replica than their own row's (W's off-diagonal non-zeros): the
/// neighbour rows gossip reads. Throws MixingError on malformed rows.
std::size_t off_diagonal_terms(const MixingRows& rows);

/// The block width at which a column-blocked input pays for `rows` and `options`: the tile width where mix()
/// would mix from tiles (the exponential graph on enough replicas, with 2 MB of L2), else 0, where the
/// row-major input is the faster one. Throws MixingError on malformed rows.
std::size_t blocked_input_width(const MixingRows& rows, const MixOptions& options = {});

/// One output row of mix() for a replica that holds only its own row and its in-neighbours' (a real worker):
/// out = sum_k weight[k] src_k with src_k = sources[k], sources[self_term] being the replica itself. Same
/// arithmetic, term order and kernels as mix(), so a worker's row equals the simulator's bit for bit. Throws
/// ShapeError on mismatched sizes or overlapping `out`.
void mix_row(std::span<const float> weight, std::span<const float* const> sources, std::size_t self_term,
             std::span<float> out, const MixOptions& options = {});

/// Throws MixingError unless `rows` is a well-formed W on `nodes` replicas.
void validate(const MixingRows& rows, std::size_t nodes);

}  // namespace dbench::core
