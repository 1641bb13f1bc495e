#include "core/mixing.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>

#include "core/errors.hpp"
#include "core/parallel.hpp"
#include "core/simd.hpp"
#include "topology/graph.hpp"

namespace dbench::core {
namespace {

/// One off-diagonal term of an output row, resolved to the source row it reads.
struct Term {
  const float* src;
  float weight;
};

/// Output row i = scale * self + sum of terms[begin, end) applied to (src - self).
struct RowPlan {
  const float* self;
  float scale;
  std::size_t begin;
  std::size_t end;
};

struct Plan {
  std::vector<Term> terms;
  std::vector<RowPlan> rows;
  /// Where the plan is walked from a column block in memory (mix_from_blocks()): the input rows that output
  /// row i reads first of all rows, first_reads[first_offsets[i] .. first_offsets[i + 1]). Empty otherwise.
  std::vector<std::size_t> first_offsets;
  std::vector<const float*> first_reads;
};

/// Fills plan.first_offsets and plan.first_reads for inputs `in`, the rows the plan points at.
void mark_first_reads(Plan& plan, ConstReplicaView in) {
  std::vector<char> seen(in.rows, 0);
  plan.first_offsets.assign(1, 0);
  plan.first_reads.clear();
  const auto read = [&](const float* row) {
    const auto k = static_cast<std::size_t>(row - in.data) / in.stride;
    if (seen[k] == 0) {
      seen[k] = 1;
      plan.first_reads.push_back(row);
    }
  };
  for (const RowPlan& r : plan.rows) {
    read(r.self);
    for (std::size_t k = r.begin; k < r.end; ++k) {
      read(plan.terms[k].src);
    }
    plan.first_offsets.push_back(plan.first_reads.size());
  }
}

/// Appends one row's plan: the terms k that are not the row's own replica (is_self(k) false), in row order;
/// `source(k)` gives term k's data.
template <class IsSelf, class Source>
void plan_row(Plan& plan, const float* self, std::span<const float> weight, IsSelf&& is_self,
              Source&& source) {
  const std::size_t begin = plan.terms.size();
  double sum = 0.0;
  for (std::size_t k = 0; k < weight.size(); ++k) {
    sum += static_cast<double>(weight[k]);
    if (!is_self(k)) {
      plan.terms.push_back({source(k), weight[k]});
    }
  }
  // Float weights of a stochastic row (1/11 has no exact float) sum to 1 only up to their rounding; a scale
  // of exactly 1 keeps consensus a fixed point and the replica average from drifting step after step.
  const double rounding = 4.0 * static_cast<double>(weight.size()) * 0x1.0p-24;
  const float scale = std::abs(sum - 1.0) <= rounding ? 1.0f : static_cast<float>(sum);
  plan.rows.push_back({self, scale, begin, plan.terms.size()});
}

Plan make_plan(const MixingRows& rows, ConstReplicaView in) {
  const std::size_t n = rows.offsets.size() - 1;
  Plan plan;
  plan.terms.reserve(rows.from.size());
  plan.rows.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    const auto k0 = static_cast<std::size_t>(rows.offsets[i]);
    const auto k1 = static_cast<std::size_t>(rows.offsets[i + 1]);
    plan_row(
        plan, in.row_data(i), rows.weight.subspan(k0, k1 - k0),
        [&](std::size_t k) { return static_cast<std::size_t>(rows.from[k0 + k]) == i; },
        [&](std::size_t k) { return in.row_data(static_cast<std::size_t>(rows.from[k0 + k])); });
  }
  return plan;
}

/// Columns [c0, c1) of every output row, plain C++: the compiler vectorises the inner loops for the build
/// target. Every input the plan points at is read `shift` floats further on (see mix_blocked_input()).
void mix_columns_portable(const Plan& plan, ReplicaView out, std::size_t c0, std::size_t c1,
                          std::size_t shift = 0) {
  constexpr std::size_t kChunk = 64;
  float delta[kChunk];
  for (std::size_t i = 0; i < out.rows; ++i) {
    const RowPlan& r = plan.rows[i];
    float* o = out.row_data(i);
    for (std::size_t c = c0; c < c1; c += kChunk) {
      const std::size_t len = std::min(kChunk, c1 - c);
      const float* x = r.self + shift + c;
      std::fill_n(delta, len, 0.0f);
      for (std::size_t k = r.begin; k < r.end; ++k) {
        const float w = plan.terms[k].weight;
        const float* s = plan.terms[k].src + shift + c;
        for (std::size_t j = 0; j < len; ++j) {
          delta[j] += w * (s[j] - x[j]);
        }
      }
      for (std::size_t j = 0; j < len; ++j) {
        o[c + j] = r.scale * x[j] + delta[j];
      }
    }
  }
}

#if defined(DBENCH_SIM_X86)

/// A row's off-diagonal terms for the AVX-512 kernel. With D >= 0 there are exactly D: their sources and
/// broadcast weights are held in registers for the whole row and the term loop unrolls. Against a loop over
/// the plan's terms, that made mixing of 1008 / 4096 replicas on the exponential graph 7 % / 15 % faster,
/// and on the ring 11 % (interleaved runs, 2 threads, AMD EPYC Zen 5). kAnyTerms reads any number of terms
/// from the plan.
constexpr int kAnyTerms = -1;
constexpr int kMaxUnrolledTerms = 16;

template <int D>
struct RowTerms {
  const float* src[D > 0 ? D : 1];
  __m512 weight[D > 0 ? D : 1];

  DBENCH_AVX512 RowTerms(const Term* t, std::size_t /*count*/, std::size_t shift) {
#pragma GCC unroll 16
    for (int k = 0; k < D; ++k) {
      src[k] = t[k].src + shift;
      weight[k] = _mm512_set1_ps(t[k].weight);
    }
  }
  static constexpr std::size_t size() {
    return D;
  }
  const float* source(std::size_t k) const {
    return src[k];
  }
  DBENCH_AVX512 __m512 w(std::size_t k) const {
    return weight[k];
  }
};

template <>
struct RowTerms<kAnyTerms> {
  const Term* terms;
  std::size_t count;
  std::size_t shift;

  RowTerms(const Term* t, std::size_t n, std::size_t s) : terms(t), count(n), shift(s) {}
  std::size_t size() const { return count; }
  const float* source(std::size_t k) const { return terms[k].src + shift; }
  DBENCH_AVX512 __m512 w(std::size_t k) const { return _mm512_set1_ps(terms[k].weight); }
};

/// Columns [c0, c1) of output row `r` (terms `t`, `count` of them), 64 columns per pass (four independent
/// accumulators), then 16, then a masked tail; each element's terms are added in the plan's order. With
/// Stream the 64-column passes store past the caches (o + c0 must be 64-byte aligned; the caller fences).
/// Every input is read `shift` floats further on than the plan points.
template <int D, bool Stream>
DBENCH_AVX512 void mix_row_avx512(const RowPlan& r, const Term* t, std::size_t count, float* o,
                                  std::size_t c0, std::size_t c1, std::size_t shift) {
  const RowTerms<D> terms(t, count, shift);
  const std::size_t n = terms.size();
  const __m512 scale = _mm512_set1_ps(r.scale);
  const float* self = r.self + shift;
  std::size_t c = c0;
  for (; c + 64 <= c1; c += 64) {
    const float* x = self + c;
    const __m512 x0 = _mm512_loadu_ps(x), x1 = _mm512_loadu_ps(x + 16), x2 = _mm512_loadu_ps(x + 32),
                 x3 = _mm512_loadu_ps(x + 48);
    __m512 d0 = _mm512_setzero_ps(), d1 = d0, d2 = d0, d3 = d0;
#pragma GCC unroll 16
    for (std::size_t k = 0; k < n; ++k) {
      const __m512 w = terms.w(k);
      const float* s = terms.source(k) + c;
      d0 = _mm512_fmadd_ps(w, _mm512_sub_ps(_mm512_loadu_ps(s), x0), d0);
      d1 = _mm512_fmadd_ps(w, _mm512_sub_ps(_mm512_loadu_ps(s + 16), x1), d1);
      d2 = _mm512_fmadd_ps(w, _mm512_sub_ps(_mm512_loadu_ps(s + 32), x2), d2);
      d3 = _mm512_fmadd_ps(w, _mm512_sub_ps(_mm512_loadu_ps(s + 48), x3), d3);
    }
    if constexpr (Stream) {
      _mm512_stream_ps(o + c, _mm512_fmadd_ps(scale, x0, d0));
      _mm512_stream_ps(o + c + 16, _mm512_fmadd_ps(scale, x1, d1));
      _mm512_stream_ps(o + c + 32, _mm512_fmadd_ps(scale, x2, d2));
      _mm512_stream_ps(o + c + 48, _mm512_fmadd_ps(scale, x3, d3));
    } else {
      _mm512_storeu_ps(o + c, _mm512_fmadd_ps(scale, x0, d0));
      _mm512_storeu_ps(o + c + 16, _mm512_fmadd_ps(scale, x1, d1));
      _mm512_storeu_ps(o + c + 32, _mm512_fmadd_ps(scale, x2, d2));
      _mm512_storeu_ps(o + c + 48, _mm512_fmadd_ps(scale, x3, d3));
    }
  }
  for (; c + 16 <= c1; c += 16) {
    const __m512 x = _mm512_loadu_ps(self + c);
    __m512 d = _mm512_setzero_ps();
#pragma GCC unroll 16
    for (std::size_t k = 0; k < n; ++k) {
      d = _mm512_fmadd_ps(terms.w(k), _mm512_sub_ps(_mm512_loadu_ps(terms.source(k) + c), x), d);
    }
    _mm512_storeu_ps(o + c, _mm512_fmadd_ps(scale, x, d));
  }
  if (c < c1) {
    const auto mask = static_cast<__mmask16>((1u << (c1 - c)) - 1u);
    const __m512 x = _mm512_maskz_loadu_ps(mask, self + c);
    __m512 d = _mm512_setzero_ps();
#pragma GCC unroll 16
    for (std::size_t k = 0; k < n; ++k) {
      d = _mm512_fmadd_ps(terms.w(k), _mm512_sub_ps(_mm512_maskz_loadu_ps(mask, terms.source(k) + c), x), d);
    }
    _mm512_mask_storeu_ps(o + c, mask, _mm512_fmadd_ps(scale, x, d));
  }
}

using RowKernel = void (*)(const RowPlan&, const Term*, std::size_t, float*, std::size_t, std::size_t,
                           std::size_t);

/// mix_row_avx512<D, Stream> for D = 0 .. kMaxUnrolledTerms, by D.
template <bool Stream, std::size_t... D>
constexpr std::array<RowKernel, sizeof...(D)> unrolled_row_kernels(std::index_sequence<D...>) {
  return {&mix_row_avx512<static_cast<int>(D), Stream>...};
}
constexpr auto kUnrolledRowKernels =
    unrolled_row_kernels<false>(std::make_index_sequence<kMaxUnrolledTerms + 1>{});
constexpr auto kStreamingRowKernels =
    unrolled_row_kernels<true>(std::make_index_sequence<kMaxUnrolledTerms + 1>{});

/// How many output rows ahead mix_columns_avx512() prefetches the inputs a row reads first. Mixing of 1008
/// replicas from blocks on the exponential graph (2 threads, Intel Xeon, 2 MB L2, medians of 18 calls):
/// 0.0166 s four rows ahead, 0.0171 two, 0.0168-0.0169 eight or sixteen, against 0.0174 s without; into
/// L1 rather than L2, 0.0170 s.
constexpr std::size_t kFirstReadLead = 4;

/// Columns [c0, c1) of every output row with AVX-512 (mix_row_avx512). While a row is written, columns
/// [p0, p1) of the matching input row (the block computed next) are prefetched into L2, and where the plan
/// marks first reads, the rows that output row i + kFirstReadLead reads first. Rows read before are in L2
/// already; a first read comes from memory, where the hardware prefetcher picks it up late. With `stream`,
/// rows whose block starts on a cache line are stored past the caches (see MixStores), and the stores are
/// fenced before the call returns. Every input is read `shift` floats further on than the plan points.
DBENCH_AVX512 void mix_columns_avx512(const Plan& plan, ReplicaView out, std::size_t c0, std::size_t c1,
                                      std::size_t p0, std::size_t p1, bool stream, std::size_t shift = 0) {
  const Term* terms = plan.terms.data();
  const bool first_reads = !plan.first_offsets.empty();
  for (std::size_t i = 0; i < out.rows; ++i) {
    const RowPlan& r = plan.rows[i];
    const std::size_t count = r.end - r.begin;
    float* o = out.row_data(i);
    const bool streams = stream && reinterpret_cast<std::uintptr_t>(o + c0) % 64 == 0;
    const RowKernel kernel =
        count > kMaxUnrolledTerms
            ? (streams ? &mix_row_avx512<kAnyTerms, true> : &mix_row_avx512<kAnyTerms, false>)
            : (streams ? kStreamingRowKernels[count] : kUnrolledRowKernels[count]);
    kernel(r, terms + r.begin, count, o, c0, c1, shift);
    if (first_reads && i + kFirstReadLead < out.rows) {
      const std::size_t ahead = i + kFirstReadLead;
      for (std::size_t f = plan.first_offsets[ahead]; f < plan.first_offsets[ahead + 1]; ++f) {
        for (std::size_t p = c0; p < c1; p += 16) {
          _mm_prefetch(reinterpret_cast<const char*>(plan.first_reads[f] + shift + p), _MM_HINT_T1);
        }
      }
    }
    for (std::size_t p = p0; p < p1; p += 16) {
      _mm_prefetch(reinterpret_cast<const char*>(r.self + p), _MM_HINT_T1);
    }
  }
  if (stream) {
    // Streaming stores are weakly ordered: visible before another thread reads the outputs.
    _mm_sfence();
  }
}

/// Whether the AVX-512 kernel stores its outputs past the caches.
bool streams_outputs(MixStores stores) {
  return stores == MixStores::streaming || (stores == MixStores::automatic && cpu_is_intel());
}

#endif

/// How mix() walks the columns.
struct Blocking {
  /// Columns per block.
  std::size_t cols;
  /// Whether a thread prefetches its next block into L2 while it finishes the current one.
  bool prefetch;
  /// Whether each block is first copied into a tile of contiguous rows (mix_tiles()).
  bool tiled = false;
};

/// Columns per tile of mix_tiles(): 128 (512 B of each row) took 0.086-0.099 s for the exponential graph on
/// 4096 replicas against 0.092-0.104 s for 64 and 0.089-0.112 s for 256 (interleaved runs, 2 threads, AMD
/// EPYC Zen 5).
constexpr std::size_t kTileCols = 128;

/// Whole 64-column passes of the kernel, about `budget_bytes` for the slices of `replicas` rows, within
/// [64, 4096] columns.
std::size_t block_cols_for(std::size_t budget_bytes, std::size_t replicas) {
  const std::size_t cols = (budget_bytes / (replicas * sizeof(float)) + 32) / 64 * 64;
  return std::clamp<std::size_t>(cols, 64, 4096);
}

/// The walk for `replicas` rows reading `terms` off-diagonal terms in all, MixOptions::block_cols being 0. A
/// block's slices of all rows are read from memory once and then served from cache to their readers; what
/// pays depends on how many readers there are and on how long each row's slice is (slices of a few cache
/// lines, each a separate DRAM burst 200 KB from the next, stream at half the bandwidth of a copy). Measured
/// on 64 to 4096 replicas of a 50,890-parameter MLP (1 MB L2 per core), interleaved runs:
/// * at most 2 terms per row (ring, one-peer exponential): little to reuse, so long slices, 16 KB per row up
///   to a 32 MB block, and no prefetch (which only competes with the stream): ring mixing at 4096 replicas
///   in 0.055 s instead of 0.094 s;
/// * more terms (exponential): about 256 KB per block, in slices of 64 to 512 columns, with the next block
///   prefetched into L2 beside it, while that block stays within 512 KB: exponential mixing at 64 / 256 /
///   1008 / 2048 replicas in 0.0007 / 0.0029 / 0.022 / 0.071 s, against 0.0013 / 0.0034 / 0.026 / 0.079 s
///   with blocks of twice the size. Tiles were no faster there: at 1008 replicas 0.013-0.016 against
///   0.013-0.018 s on 2 threads, 0.031 against 0.027 s on one, 0.029-0.035 against 0.024-0.030 s in each of
///   two one-thread processes side by side (a sweep's -j 2); at 2048, 0.050-0.054 against 0.043-0.046 s;
/// * where even 64-column slices make a block of more than 512 KB (4096 replicas), tiles (mix_tiles()). A
///   row's readers reach back as far as the graph's longest edge (2048 rows of the exponential graph on
///   4096) and their block no longer fits in L2: in place, in 4 MB blocks in the last-level cache (the walk
///   here before tiles), mixing took 0.118-0.136 s on 2 threads and 0.184-0.266 s on one; from tiles,
///   0.089-0.097 s and 0.175-0.206 s. (MixWalk::in_place takes 64-column blocks here: 0.139-0.141 s and
///   0.277-0.282 s.)
/// On an Intel Xeon (AVX-512, 2 MB L2 per core) with streaming stores (MixStores::automatic), the in-place
/// walk mixed the exponential graph on 1008 replicas in 0.0204-0.0213 s, tiles in 0.0197-0.0198 s (one
/// thread 0.042-0.043 against 0.039-0.040 s; two one-thread processes side by side 0.044-0.045 against 0.040
/// s); on 2048, 0.063-0.064 against 0.0555-0.056 s (one thread 0.125 against 0.105 s), and bench_numerics'
/// iteration there took 0.1345-0.1354 against 0.1238-0.1261 s; on 896, 0.0155-0.0166 against 0.0155 s (one
/// thread 0.032-0.034 against 0.031-0.032 s); on 768, the same on 2 threads and no faster on one (0.023-0.026
/// against 0.025-0.026 s; the first is the spread of in-place runs alone). So where the in-place slices are
/// down to 64 columns, their block is over 3/4 of its 256 KB budget (more than 768 replicas) and a tile
/// leaves at least 1 MB of L2 free, tiles; with 1 MB of L2 (the AMD above) that never holds. At 4096 replicas
/// on that Xeon: 0.12-0.13 s from tiles, 0.23 s in place.
Blocking default_blocking(std::size_t replicas, std::size_t terms, MixWalk walk) {
  constexpr std::size_t kStreamBudgetBytes = std::size_t{32} << 20;
  constexpr std::size_t kL2BudgetBytes = std::size_t{256} << 10;
  constexpr std::size_t kL2LimitBytes = std::size_t{512} << 10;
  constexpr std::size_t kMaxL2Cols = 512;
  constexpr std::size_t kTileFreeL2Bytes = std::size_t{1} << 20;
  if (walk == MixWalk::tiles) {
    return {kTileCols, false, true};
  }
  if (terms <= 2 * replicas) {
    return {block_cols_for(kStreamBudgetBytes, replicas), false};
  }
  const std::size_t l2_cols = std::min(block_cols_for(kL2BudgetBytes, replicas), kMaxL2Cols);
  if (walk == MixWalk::in_place) {
    return {l2_cols, true};
  }
  // Where the in-place slices are down to 64 columns, their block is over 3/4 of the budget and a tile leaves
  // at least 1 MB of L2 free, tiles.
  static const std::size_t l2_bytes = cpu_l2_bytes();
  const std::size_t block_bytes = l2_cols * replicas * sizeof(float);
  const std::size_t tile_bytes = replicas * kTileCols * sizeof(float);
  const bool tile_pays = l2_cols == 64 && 4 * block_bytes > 3 * kL2BudgetBytes &&
                         2 * tile_bytes <= l2_bytes && l2_bytes - tile_bytes >= kTileFreeL2Bytes;
  if (block_bytes <= kL2LimitBytes && !tile_pays) {
    return {l2_cols, true};
  }
  return {kTileCols, false, true};
}

/// Which kernel the walks run (AVX-512 where allowed and available) and whether it streams its outputs.
struct Kernels {
  bool avx512 = false;
  bool stream = false;
};

Kernels kernels_for(const MixOptions& options) {
#if defined(DBENCH_SIM_X86)
  return {options.allow_avx512 && cpu_has_avx512f(), streams_outputs(options.stores)};
#else
  (void)options;
  return {};
#endif
}

/// Columns [c0, c1) of every output row with `kernels`, every input read `shift` floats further on than the
/// plan points; the AVX-512 kernel also prefetches columns [p0, p1) of each input row.
void mix_columns(const Plan& plan, ReplicaView out, std::size_t c0, std::size_t c1, std::size_t p0,
                 std::size_t p1, Kernels kernels, std::size_t shift = 0) {
#if defined(DBENCH_SIM_X86)
  if (kernels.avx512) {
    mix_columns_avx512(plan, out, c0, c1, p0, p1, kernels.stream, shift);
    return;
  }
#endif
  (void)p0;
  (void)p1;
  mix_columns_portable(plan, out, c0, c1, shift);
}

/// Every column block of `out` computed from `plan`, the blocks spread over options.threads
/// (parallel_for_each_stealing). With blocking.prefetch a thread prefetches the block it computes next while
/// it computes this one.
void mix_blocks(const Plan& plan, ReplicaView out, Blocking blocking, const MixOptions& options) {
  const std::size_t cols = out.cols;
  const std::size_t block = blocking.cols;
  const std::size_t blocks = (cols + block - 1) / block;
  const Kernels kernels = kernels_for(options);
  parallel_for_each_stealing(options.threads, blocks, [&](std::size_t b, std::size_t next) {
    const std::size_t c0 = b * block;
    const std::size_t c1 = std::min(cols, c0 + block);
    const bool ahead = blocking.prefetch && next != kNoIndex;
    const std::size_t p0 = ahead ? next * block : c1;
    mix_columns(plan, out, c0, c1, p0, ahead ? std::min(cols, p0 + block) : c1, kernels);
  });
}

/// mix() from tiles: each thread copies columns [c0, c0 + blocking.cols) of every input row into a tile of
/// its own (the rows blocking.cols floats apart, contiguous), then computes that block of every output row
/// from the tile with the same kernels, terms and order as mix_blocks(), so the results are the same bits.
/// A tile is written and read back in L2 or close to it, whatever the distance between the rows it holds in
/// the replica matrix. (Prefetching the next block while a tile is computed made it slower: 0.105-0.12
/// against 0.087-0.092 s for 4096 replicas.)
void mix_tiles(const Plan& plan, ConstReplicaView in, ReplicaView out, Blocking blocking,
               const MixOptions& options) {
  const std::size_t n = out.rows;
  const std::size_t cols = out.cols;
  const std::size_t width = blocking.cols;
  const std::size_t blocks = (cols + width - 1) / width;
  const std::size_t workers = std::min<std::size_t>(resolve_threads(options.threads), blocks);
  MixWorkspace own;
  const std::span<AlignedBuffer> tiles =
      (options.workspace != nullptr ? *options.workspace : own).tiles(workers, n * width);
  const Kernels kernels = kernels_for(options);
  StealingRanges ranges(blocks, workers);
  parallel_for(static_cast<unsigned>(workers), workers, [&](std::size_t w, std::size_t) {
    float* tile = tiles[w].data();
    // The plan with every row read from the tile.
    Plan tiled;
    tiled.terms.reserve(plan.terms.size());
    tiled.rows.reserve(n);
    for (std::size_t i = 0; i < n; ++i) {
      const RowPlan& r = plan.rows[i];
      for (std::size_t k = r.begin; k < r.end; ++k) {
        const auto row = static_cast<std::size_t>(plan.terms[k].src - in.data) / in.stride;
        tiled.terms.push_back({tile + row * width, plan.terms[k].weight});
      }
      tiled.rows.push_back({tile + i * width, r.scale, r.begin, r.end});
    }
    ranges.for_each(w, [&](std::size_t b, std::size_t /*next*/) {
      const std::size_t c0 = b * width;
      const std::size_t len = std::min(cols, c0 + width) - c0;
      for (std::size_t i = 0; i < n; ++i) {
        std::memcpy(tile + i * width, in.row_data(i) + c0, len * sizeof(float));
      }
      // Columns [c0, c0 + len) of the output, addressed from 0 as the tile is.
      const ReplicaView part{out.data + c0, n, len, out.stride};
      mix_columns(tiled, part, 0, len, len, len, kernels);
    });
  });
}

/// mix() from a column-blocked input: each block of `in` already holds what mix_tiles() would copy into a
/// tile, contiguous, so each thread computes its blocks straight from it with the same kernels, terms and
/// order, the same bits. The plan points into block 0 and is shifted to block b; the last block, whose
/// slices may be closer together, has a plan of its own. Both plans mark their first reads, which the kernel
/// prefetches (kFirstReadLead). Exponential mixing of 1008 replicas on 2 threads (Intel Xeon, 2 MB L2 per
/// core, medians of 18-28 calls): 0.0162-0.0166 s (0.0171-0.0173 s without the first reads' prefetch)
/// against 0.0203-0.0208 s through tiles; of 4096, 0.089 s (0.094 without) against 0.127-0.131 s.
void mix_blocked_input(const MixingRows& rows, ConstBlockedView in, ReplicaView out,
                       const MixOptions& options) {
  const std::size_t n = in.rows;
  const std::size_t width = in.width;
  const std::size_t blocks = in.blocks();
  const std::size_t last = blocks - 1;
  const ConstReplicaView first_block{in.data, n, width, width};
  const ConstReplicaView last_block{in.slice(0, last), n, in.cols - last * width, in.spacing(last)};
  Plan first_plan = make_plan(rows, first_block);
  Plan last_plan = make_plan(rows, last_block);
  mark_first_reads(first_plan, first_block);
  mark_first_reads(last_plan, last_block);
  const Kernels kernels = kernels_for(options);
  parallel_for_each_stealing(options.threads, blocks, [&](std::size_t b, std::size_t /*next*/) {
    const std::size_t c0 = b * width;
    const std::size_t len = std::min(in.cols, c0 + width) - c0;
    const Plan& plan = b == last ? last_plan : first_plan;
    const std::size_t shift = b == last ? 0 : b * n * width;
    // Columns [c0, c0 + len) of the output, addressed from 0 as the block is.
    const ReplicaView part{out.data + c0, n, len, out.stride};
    mix_columns(plan, part, 0, len, len, len, kernels, shift);
  });
}

/// The walk mix() takes for `replicas` rows with `terms` off-diagonal terms in all.
Blocking blocking_for(std::size_t replicas, std::size_t terms, const MixOptions& options) {
  return options.block_cols == 0
             ? default_blocking(replicas, terms, options.walk)
             : Blocking{options.block_cols, options.walk != MixWalk::tiles, options.walk == MixWalk::tiles};
}

}  // namespace

std::span<AlignedBuffer> MixWorkspace::tiles(std::size_t count, std::size_t floats) {
  if (tiles_.size() < count) {
    tiles_.resize(count);
  }
  for (std::size_t t = 0; t < count; ++t) {
    if (tiles_[t].size() < floats) {
      tiles_[t] = AlignedBuffer(floats);
    }
  }
  return std::span<AlignedBuffer>(tiles_).first(count);
}

MixingMatrix to_mixing_matrix(const topology::Graph& graph) {
  const auto offsets = graph.offsets();
  const auto entries = graph.entries();
  std::vector<std::int32_t> off(offsets.begin(), offsets.end());
  std::vector<std::int32_t> from(entries.size());
  std::vector<double> weight(entries.size());
  for (std::size_t e = 0; e < entries.size(); ++e) {
    from[e] = entries[e].from;
    weight[e] = entries[e].weight;
  }
  return MixingMatrix(std::move(off), std::move(from), weight);
}

MixingMatrix::MixingMatrix(std::vector<std::int32_t> offsets, std::vector<std::int32_t> from,
                           std::span<const double> weight)
    : offsets_(std::move(offsets)), from_(std::move(from)) {
  if (offsets_.empty()) {
    throw MixingError("MixingMatrix: offsets must hold N + 1 values");
  }
  if (weight.size() != from_.size()) {
    throw MixingError("MixingMatrix: " + std::to_string(weight.size()) + " weights for " +
                      std::to_string(from_.size()) + " terms");
  }
  weight_.reserve(weight.size());
  for (double w : weight) {
    weight_.push_back(static_cast<float>(w));
  }
  validate(rows(), offsets_.size() - 1);
}

void validate(const MixingRows& rows, std::size_t nodes) {
  if (rows.offsets.size() != nodes + 1) {
    throw MixingError("mixing rows: " + std::to_string(rows.offsets.size()) + " offsets for " +
                      std::to_string(nodes) + " replicas (want N + 1)");
  }
  if (rows.offsets.front() != 0) {
    throw MixingError("mixing rows: offsets must start at 0");
  }
  for (std::size_t i = 0; i < nodes; ++i) {
    if (rows.offsets[i + 1] < rows.offsets[i]) {
      throw MixingError("mixing rows: offsets decrease at row " + std::to_string(i));
    }
  }
  const auto terms = static_cast<std::size_t>(rows.offsets.back());
  if (rows.from.size() != terms || rows.weight.size() != terms) {
    throw MixingError("mixing rows: offsets end at " + std::to_string(terms) + " but there are " +
                      std::to_string(rows.from.size()) + " sources and " +
                      std::to_string(rows.weight.size()) + " weights");
  }
  for (std::size_t k = 0; k < terms; ++k) {
    if (rows.from[k] < 0 || static_cast<std::size_t>(rows.from[k]) >= nodes) {
      throw MixingError("mixing rows: term " + std::to_string(k) + " reads replica " +
                        std::to_string(rows.from[k]) + ", outside [0, " + std::to_string(nodes) + ")");
    }
  }
}

void mix_row(std::span<const float> weight, std::span<const float* const> sources, std::size_t self_term,
             std::span<float> out, const MixOptions& options) {
  if (weight.size() != sources.size() || self_term >= sources.size()) {
    throw ShapeError("mix_row: " + std::to_string(weight.size()) + " weights, " +
                     std::to_string(sources.size()) + " sources and self term " + std::to_string(self_term));
  }
  const float* self = sources[self_term];
  for (const float* s : sources) {
    if (s < out.data() + out.size() && out.data() < s + out.size()) {
      throw ShapeError("mix_row: a source overlaps the output; mixing needs a separate output buffer");
    }
  }
  if (out.empty()) {
    return;
  }
  Plan plan;
  plan_row(
      plan, self, weight, [&](std::size_t k) { return k == self_term; },
      [&](std::size_t k) { return sources[k]; });
  const ReplicaView view{out.data(), 1, out.size(), out.size()};
  // One row streams: 4096-column blocks, each prefetching the next.
  mix_blocks(plan, view, {options.block_cols == 0 ? 4096 : options.block_cols, true}, options);
}

void mix(const MixingRows& rows, ConstReplicaView in, ReplicaView out, const MixOptions& options) {
  if (in.rows != out.rows || in.cols != out.cols) {
    throw ShapeError("mix: input is " + std::to_string(in.rows) + "x" + std::to_string(in.cols) +
                     " but output is " + std::to_string(out.rows) + "x" + std::to_string(out.cols));
  }
  validate(rows, in.rows);
  if (in.rows == 0 || in.cols == 0) {
    return;
  }
  const float* in_end = in.row_data(in.rows - 1) + in.cols;
  const float* out_end = out.row_data(out.rows - 1) + out.cols;
  if (in.data < out_end && out.data < in_end) {
    throw ShapeError("mix: input and output overlap; mixing needs a separate output buffer");
  }
  const Plan plan = make_plan(rows, in);
  const Blocking blocking = blocking_for(in.rows, plan.terms.size(), options);
  if (blocking.tiled) {
    mix_tiles(plan, in, out, blocking, options);
    return;
  }
  mix_blocks(plan, out, blocking, options);
}

std::size_t off_diagonal_terms(const MixingRows& rows) {
  const std::size_t n = rows.offsets.size() - 1;
  validate(rows, n);
  std::size_t terms = 0;
  for (std::size_t i = 0; i < n; ++i) {
    for (auto k = static_cast<std::size_t>(rows.offsets[i]);
         k < static_cast<std::size_t>(rows.offsets[i + 1]); ++k) {
      terms += static_cast<std::size_t>(rows.from[k]) != i ? 1 : 0;
    }
  }
  return terms;
}

std::size_t blocked_input_width(const MixingRows& rows, const MixOptions& options) {
  const std::size_t n = rows.offsets.size() - 1;
  const Blocking blocking = blocking_for(n, off_diagonal_terms(rows), options);
  return blocking.tiled ? blocking.cols : 0;
}

void mix_from_blocks(const MixingRows& rows, ConstBlockedView in, ReplicaView out,
                     const MixOptions& options) {
  if (in.rows != out.rows || in.cols != out.cols) {
    throw ShapeError("mix_from_blocks: input is " + std::to_string(in.rows) + "x" + std::to_string(in.cols) +
                     " but output is " + std::to_string(out.rows) + "x" + std::to_string(out.cols));
  }
  if (in.width == 0 || in.stride < in.cols) {
    throw ShapeError("mix_from_blocks: input needs blocks of at least one column and a stride of at least " +
                     std::to_string(in.cols) + " (width " + std::to_string(in.width) + ", stride " +
                     std::to_string(in.stride) + ")");
  }
  validate(rows, in.rows);
  if (in.rows == 0 || in.cols == 0) {
    return;
  }
  const float* in_end = in.data + in.rows * in.stride;
  const float* out_end = out.row_data(out.rows - 1) + out.cols;
  if (in.data < out_end && out.data < in_end) {
    throw ShapeError("mix_from_blocks: input and output overlap; mixing needs a separate output buffer");
  }
  mix_blocked_input(rows, in, out, options);
}

}  // namespace dbench::core
