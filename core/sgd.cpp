#include "core/sgd.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/errors.hpp"
#include "core/parallel.hpp"
#include "core/simd.hpp"

namespace dbench::core {
namespace {

// One loop per combination of options, so that each compiles to a branch-free vectorised pass. Each reads
// the parameters at x and writes the stepped ones at out, which is x itself or a separate buffer. `ahead` is
// a prefetch hint that only the AVX-512 kernel acts on. With kScale (LARS), the gradient is multiplied by
// `scale` first (and lambda is the scaled decay); without it the loop is the plain step, no slower.
template <bool kDecay, bool kMomentum, bool kFirst, bool kNesterov, bool kScale>
void sgd_row(const float* x, float* out, const float* g, float* buf, std::size_t n, float lr, float mu,
             float lambda, float scale, const float* /*ahead*/) {
  for (std::size_t j = 0; j < n; ++j) {
    float d = kScale ? scale * g[j] : g[j];
    if constexpr (kDecay) {
      d = d + lambda * x[j];
    }
    if constexpr (kMomentum) {
      const float b = kFirst ? d : mu * buf[j] + d;
      buf[j] = b;
      d = kNesterov ? d + mu * b : b;
    }
    out[j] = x[j] - lr * d;
  }
}

#if defined(DBENCH_SIM_X86)

/// One vector of sgd_row: the stepped parameters for parameters xv and gradient d, the momentum at `b` (16
/// floats, the lanes of `m` only) updated.
template <bool kDecay, bool kMomentum, bool kFirst, bool kNesterov, bool kMasked>
DBENCH_AVX512 inline __m512 sgd_vector(__m512 xv, __m512 d, float* b, __mmask16 m, __m512 vlr, __m512 vmu,
                                       __m512 vlambda) {
  if constexpr (kDecay) {
    d = _mm512_add_ps(d, _mm512_mul_ps(vlambda, xv));
  }
  if constexpr (kMomentum) {
    __m512 v = d;
    if constexpr (!kFirst) {
      const __m512 old = kMasked ? _mm512_maskz_loadu_ps(m, b) : _mm512_loadu_ps(b);
      v = _mm512_add_ps(_mm512_mul_ps(vmu, old), d);
    }
    if constexpr (kMasked) {
      _mm512_mask_storeu_ps(b, m, v);
    } else {
      _mm512_storeu_ps(b, v);
    }
    d = kNesterov ? _mm512_add_ps(d, _mm512_mul_ps(vmu, v)) : v;
  }
  return _mm512_sub_ps(xv, _mm512_mul_ps(vlr, d));
}

/// 16 lanes of sgd_row at x + j, the lanes of `m` only; with kStream, a whole vector's output (out + j must
/// be 64-byte aligned) is stored past the caches.
template <bool kDecay, bool kMomentum, bool kFirst, bool kNesterov, bool kScale, bool kMasked, bool kStream>
DBENCH_AVX512 inline void sgd_lanes(const float* x, float* out, const float* g, float* buf, std::size_t j,
                                    __mmask16 m, __m512 vlr, __m512 vmu, __m512 vlambda, __m512 vscale) {
  const __m512 xv = kMasked ? _mm512_maskz_loadu_ps(m, x + j) : _mm512_loadu_ps(x + j);
  __m512 d = kMasked ? _mm512_maskz_loadu_ps(m, g + j) : _mm512_loadu_ps(g + j);
  if constexpr (kScale) {
    d = _mm512_mul_ps(vscale, d);
  }
  const __m512 stepped = sgd_vector<kDecay, kMomentum, kFirst, kNesterov, kMasked>(
      xv, d, kMomentum ? buf + j : nullptr, m, vlr, vmu, vlambda);
  if constexpr (kMasked) {
    _mm512_mask_storeu_ps(out + j, m, stepped);
  } else if constexpr (kStream) {
    _mm512_stream_ps(out + j, stepped);
  } else {
    _mm512_storeu_ps(out + j, stepped);
  }
}

/// sgd_row with 16 lanes; the same multiplications and additions in the same order (no fused multiply-add),
/// so both give bitwise the same parameters. Only the last, partial vector is masked: masked loads and stores
/// of rows streamed from memory run at two thirds of the plain ones' speed here (AMD Zen 5). With `ahead`,
/// its first n floats are prefetched into the cache, a line per vector stepped. With kStream (out 64-byte
/// aligned), the whole vectors of the output are stored past the caches.
template <bool kDecay, bool kMomentum, bool kFirst, bool kNesterov, bool kScale, bool kStream>
DBENCH_AVX512 void sgd_row_avx512(const float* x, float* out, const float* g, float* buf, std::size_t n,
                                  float lr, float mu, float lambda, float scale, const float* ahead) {
  const __m512 vlr = _mm512_set1_ps(lr);
  const __m512 vmu = _mm512_set1_ps(mu);
  const __m512 vlambda = _mm512_set1_ps(lambda);
  const __m512 vscale = _mm512_set1_ps(scale);
  std::size_t j = 0;
  for (; j + 16 <= n; j += 16) {
    if (ahead != nullptr) {
      _mm_prefetch(reinterpret_cast<const char*>(ahead + j), _MM_HINT_T0);
    }
    sgd_lanes<kDecay, kMomentum, kFirst, kNesterov, kScale, false, kStream>(x, out, g, buf, j, 0xFFFF, vlr,
                                                                            vmu, vlambda, vscale);
  }
  if (j < n) {
    const auto m = static_cast<__mmask16>((1u << (n - j)) - 1u);
    sgd_lanes<kDecay, kMomentum, kFirst, kNesterov, kScale, true, false>(x, out, g, buf, j, m, vlr, vmu,
                                                                         vlambda, vscale);
  }
}

/// Row `row` of a column-blocked output, walked 16 floats at a time from column j (the output's width a
/// multiple of 16).
class BlockCursor {
 public:
  BlockCursor() = default;
  BlockCursor(BlockedView out, std::size_t row, std::size_t j)
      : out_(out),
        row_(row),
        blocks_(out.blocks()),
        block_(j / out.width),
        offset_(j % out.width),
        base_(out.slice(row, block_)) {}
  float* at() const noexcept { return base_ + offset_; }
  void advance() noexcept {
    offset_ += 16;
    if (offset_ == out_.width) {
      offset_ = 0;
      if (++block_ < blocks_) {
        base_ = out_.slice(row_, block_);
      }
    }
  }

 private:
  BlockedView out_;
  std::size_t row_ = 0;
  std::size_t blocks_ = 0;
  std::size_t block_ = 0;
  std::size_t offset_ = 0;
  float* base_ = nullptr;
};

/// Rows [o0, o0 + kRows) and vectors [k0, k0 + 16 kVectors) of outer's matrix: their gradients as
/// OuterGradient's fused multiply-add chains, held in registers, then stepped as sgd_lanes() steps them
/// and stored at the cursors `to` (past the caches with `stream`, where 64-byte aligned). Each stepped vector
/// prefetches the next replica's parameters at `ahead`, and the momentum kRows rows further on (the next
/// tile row's), which the hardware prefetcher, following kRows rows at once, fetches late.
template <bool kDecay, bool kMomentum, bool kFirst, bool kNesterov, int kRows, int kVectors>
DBENCH_AVX512 inline void outer_tile(const float* x, float* buf, const OuterGradient& w, std::size_t o0,
                                     std::size_t k0, BlockCursor* to, const float* ahead, bool stream,
                                     __m512 vlr, __m512 vmu, __m512 vlambda) {
  __m512 c[kRows][kVectors];
#pragma GCC unroll 8
  for (int u = 0; u < kRows; ++u) {
#pragma GCC unroll 2
    for (int q = 0; q < kVectors; ++q) {
      c[u][q] = _mm512_setzero_ps();
    }
  }
  const float* a = w.a + k0;
  const float* d = w.delta + o0;
  for (std::size_t r = 0; r < w.m; ++r, a += w.in, d += w.out) {
    __m512 av[kVectors];
#pragma GCC unroll 2
    for (int q = 0; q < kVectors; ++q) {
      av[q] = _mm512_loadu_ps(a + 16 * q);
    }
#pragma GCC unroll 8
    for (int u = 0; u < kRows; ++u) {
      const __m512 dv = _mm512_set1_ps(d[u]);
#pragma GCC unroll 2
      for (int q = 0; q < kVectors; ++q) {
        c[u][q] = _mm512_fmadd_ps(dv, av[q], c[u][q]);
      }
    }
  }
  const std::size_t end = w.offset + w.out * w.in;
  const std::size_t next_rows = kRows * w.in;
#pragma GCC unroll 8
  for (int u = 0; u < kRows; ++u) {
#pragma GCC unroll 2
    for (int q = 0; q < kVectors; ++q) {
      const std::size_t j = w.offset + (o0 + static_cast<std::size_t>(u)) * w.in + k0 + 16 * q;
      if (ahead != nullptr) {
        _mm_prefetch(reinterpret_cast<const char*>(ahead + j), _MM_HINT_T0);
      }
      if constexpr (kMomentum && !kFirst) {
        if (j + next_rows < end) {
          _mm_prefetch(reinterpret_cast<const char*>(buf + j + next_rows), _MM_HINT_T0);
        }
      }
      const __m512 stepped = sgd_vector<kDecay, kMomentum, kFirst, kNesterov, false>(
          _mm512_loadu_ps(x + j), c[u][q], kMomentum ? buf + j : nullptr, 0xFFFF, vlr, vmu, vlambda);
      float* p = to[u].at();
      if (stream && reinterpret_cast<std::uintptr_t>(p) % 64 == 0) {
        _mm512_stream_ps(p, stepped);
      } else {
        _mm512_storeu_ps(p, stepped);
      }
      to[u].advance();
    }
  }
}

/// Rows [o0, o0 + kRows) of outer's matrix, two vectors at a time (outer_tile()).
template <bool kDecay, bool kMomentum, bool kFirst, bool kNesterov, int kRows>
DBENCH_AVX512 void outer_rows(const float* x, float* buf, const OuterGradient& w, std::size_t o0,
                              BlockedView out, std::size_t row, const float* ahead, bool stream, __m512 vlr,
                              __m512 vmu, __m512 vlambda) {
  BlockCursor to[kRows];
  for (int u = 0; u < kRows; ++u) {
    to[u] = BlockCursor(out, row, w.offset + (o0 + static_cast<std::size_t>(u)) * w.in);
  }
  const std::size_t vectors = w.in / 16;
  std::size_t v = 0;
  for (; v + 2 <= vectors; v += 2) {
    outer_tile<kDecay, kMomentum, kFirst, kNesterov, kRows, 2>(x, buf, w, o0, v * 16, to, ahead, stream, vlr,
                                                               vmu, vlambda);
  }
  if (v < vectors) {
    outer_tile<kDecay, kMomentum, kFirst, kNesterov, kRows, 1>(x, buf, w, o0, v * 16, to, ahead, stream, vlr,
                                                               vmu, vlambda);
  }
}

/// sgd_row_avx512 over outer's matrix, its gradient computed in registers (outer_tile()), eight rows of the
/// matrix at a time: 16 chains of multiply-adds keep both FMA units busy while the momentum streams. Its
/// stepped values go to row `row` of `out`. Measured on MLP 784-64-10, batch 16 (Intel Xeon, 2 cores):
/// - one process per core, 504 replicas each: 34-35 us a replica, against 44-45 us for OpenBLAS's weight
///   gradient then the step;
/// - inside VirtualReplicas::step (1008 replicas, exponential graph, 2 threads): forward, backward and step
///   62 us a replica against 66 us (the backward 20 against 30 us, the step 42 against 36 us).
/// Tiles of 4 x 4 vectors instead of 8 x 2: 37 us; without the momentum prefetch: 6 us more in the engine.
template <bool kDecay, bool kMomentum, bool kFirst, bool kNesterov>
DBENCH_AVX512 void sgd_outer_avx512(const float* x, float* buf, const OuterGradient& w, BlockedView out,
                                    std::size_t row, float lr, float mu, float lambda, const float* ahead,
                                    bool stream) {
  const __m512 vlr = _mm512_set1_ps(lr);
  const __m512 vmu = _mm512_set1_ps(mu);
  const __m512 vlambda = _mm512_set1_ps(lambda);
  std::size_t o = 0;
  for (; o + 8 <= w.out; o += 8) {
    outer_rows<kDecay, kMomentum, kFirst, kNesterov, 8>(x, buf, w, o, out, row, ahead, stream, vlr, vmu,
                                                        vlambda);
  }
  if (o + 4 <= w.out) {
    outer_rows<kDecay, kMomentum, kFirst, kNesterov, 4>(x, buf, w, o, out, row, ahead, stream, vlr, vmu,
                                                        vlambda);
    o += 4;
  }
  if (o + 2 <= w.out) {
    outer_rows<kDecay, kMomentum, kFirst, kNesterov, 2>(x, buf, w, o, out, row, ahead, stream, vlr, vmu,
                                                        vlambda);
    o += 2;
  }
  if (o < w.out) {
    outer_rows<kDecay, kMomentum, kFirst, kNesterov, 1>(x, buf, w, o, out, row, ahead, stream, vlr, vmu,
                                                        vlambda);
  }
}

using OuterKernel = void (*)(const float*, float*, const OuterGradient&, BlockedView, std::size_t, float,
                             float, float, const float*, bool);

template <bool kDecay>
OuterKernel pick_outer_kernel(bool momentum, bool first, bool nesterov) {
  if (!momentum) {
    return sgd_outer_avx512<kDecay, false, false, false>;
  }
  if (first) {
    return nesterov ? sgd_outer_avx512<kDecay, true, true, true>
                    : sgd_outer_avx512<kDecay, true, true, false>;
  }
  return nesterov ? sgd_outer_avx512<kDecay, true, false, true>
                  : sgd_outer_avx512<kDecay, true, false, false>;
}

#endif

using RowKernel = void (*)(const float*, float*, const float*, float*, std::size_t, float, float, float,
                           float, const float*);

/// The kernel for these options; `stream` (AVX-512 only) stores the output past the caches.
template <bool kDecay, bool kMomentum, bool kFirst, bool kNesterov, bool kScale>
RowKernel row_kernel(bool avx512, bool stream) {
#if defined(DBENCH_SIM_X86)
  if (avx512) {
    return stream ? sgd_row_avx512<kDecay, kMomentum, kFirst, kNesterov, kScale, true>
                  : sgd_row_avx512<kDecay, kMomentum, kFirst, kNesterov, kScale, false>;
  }
#endif
  (void)avx512;
  (void)stream;
  return sgd_row<kDecay, kMomentum, kFirst, kNesterov, kScale>;
}

template <bool kDecay, bool kScale>
RowKernel pick_kernel(bool momentum, bool first, bool nesterov, bool avx512, bool stream) {
  if (!momentum) {
    return row_kernel<kDecay, false, false, false, kScale>(avx512, stream);
  }
  if (first) {
    return nesterov ? row_kernel<kDecay, true, true, true, kScale>(avx512, stream)
                    : row_kernel<kDecay, true, true, false, kScale>(avx512, stream);
  }
  return nesterov ? row_kernel<kDecay, true, false, true, kScale>(avx512, stream)
                  : row_kernel<kDecay, true, false, false, kScale>(avx512, stream);
}

/// The sum of squares of n floats, in double in index order: the same bits in every engine.
double squared_norm(const float* v, std::size_t n) {
  double sum = 0.0;
  for (std::size_t j = 0; j < n; ++j) {
    sum += static_cast<double>(v[j]) * static_cast<double>(v[j]);
  }
  return sum;
}

std::string shape(ConstReplicaView v) {
  return std::to_string(v.rows) + "x" + std::to_string(v.cols);
}

}  // namespace

double lars_trust_ratio(double eta, double weight_norm, double grad_norm, double weight_decay) noexcept {
  if (weight_norm == 0.0 || grad_norm == 0.0) {
    return 1.0;
  }
  return eta * weight_norm / (grad_norm + weight_decay * weight_norm);
}

bool lars_adapts(std::string_view name) noexcept {
  const auto ends_with = [name](std::string_view suffix) { return name.ends_with(suffix); };
  if (ends_with(".bias") || ends_with("downsample.1.weight")) {
    return false;
  }
  // The module's own name: the component before the last dot ("layer1.0.bn2" -> "bn2").
  const std::size_t last = name.rfind('.');
  if (last == std::string_view::npos) {
    return true;
  }
  const std::string_view path = name.substr(0, last);
  const std::size_t before = path.rfind('.');
  const std::string_view module = before == std::string_view::npos ? path : path.substr(before + 1);
  return !module.starts_with("bn");
}

Sgd::Sgd(SgdConfig config, unsigned threads, bool allow_avx512)
    : Sgd(config, ParamLayout(), threads, allow_avx512) {}

Sgd::Sgd(SgdConfig config, const ParamLayout& layout, unsigned threads, bool allow_avx512)
    : config_(config), threads_(threads), avx512_(allow_avx512 && cpu_has_avx512f()) {
  if (!std::isfinite(config_.momentum) || config_.momentum < 0.0) {
    throw ValueError("SGD momentum must be finite and >= 0, got " + std::to_string(config_.momentum));
  }
  if (!std::isfinite(config_.weight_decay) || config_.weight_decay < 0.0) {
    throw ValueError("SGD weight_decay must be finite and >= 0, got " + std::to_string(config_.weight_decay));
  }
  if (config_.nesterov && config_.momentum == 0.0) {
    throw ValueError("SGD nesterov needs momentum > 0");
  }
  if (!config_.lars) {
    return;
  }
  if (!std::isfinite(config_.lars_eta) || config_.lars_eta <= 0.0) {
    throw ValueError("LARS eta must be finite and > 0, got " + std::to_string(config_.lars_eta));
  }
  if (layout.tensor_count() == 0) {
    throw ValueError("SGD with LARS needs the parameters' tensors: construct it with their layout");
  }
  for (const TensorSlice& t : layout.tensors()) {
    tensors_.push_back({t.offset, t.elements, lars_adapts(t.name)});
  }
  row_size_ = layout.size();
}

void Sgd::step(double lr, ReplicaView params, ConstReplicaView grads, ReplicaView momentum) {
  const bool use_momentum = config_.momentum != 0.0;
  if (grads.rows != params.rows || grads.cols != params.cols) {
    throw ShapeError("Sgd::step: gradients are " + shape(grads) + " but parameters are " + shape(params));
  }
  if (use_momentum && (momentum.rows != params.rows || momentum.cols != params.cols)) {
    throw ShapeError("Sgd::step: momentum buffers are " + shape(momentum) + " but parameters are " +
                     shape(params));
  }
  if (!std::isfinite(lr)) {
    throw ValueError("Sgd::step: learning rate must be finite, got " + std::to_string(lr));
  }
  if (config_.lars && params.cols != row_size_) {
    throw ShapeError("Sgd::step: LARS steps rows of " + std::to_string(row_size_) + " parameters, got " +
                     std::to_string(params.cols));
  }
  parallel_for(threads_, params.rows, [&](std::size_t r0, std::size_t r1) {
    for (std::size_t r = r0; r < r1; ++r) {
      const std::vector<float> scales = lars_scales(params.row(r), grads.row(r));
      apply_range(lr, params.row_data(r), params.row_data(r), grads.row_data(r),
                  use_momentum ? momentum.row_data(r) : nullptr, 0, params.cols, nullptr, false, scales);
    }
  });
  finish_step();
}

void Sgd::step_replica(double lr, std::span<float> x, std::span<const float> g, std::span<float> buf,
                       std::span<const float> ahead, const OuterGradient& outer) const {
  const bool use_momentum = config_.momentum != 0.0;
  if (g.size() != x.size() || (use_momentum && buf.size() != x.size()) ||
      (!ahead.empty() && ahead.size() != x.size())) {
    throw ShapeError("Sgd::step_replica: " + std::to_string(x.size()) + " parameters, " +
                     std::to_string(g.size()) + " gradients, " + std::to_string(buf.size()) +
                     " momentum values, " + std::to_string(ahead.size()) + " parameters to prefetch");
  }
  if (!std::isfinite(lr)) {
    throw ValueError("Sgd::step_replica: learning rate must be finite, got " + std::to_string(lr));
  }
  if (config_.lars && x.size() != row_size_) {
    throw ShapeError("Sgd::step_replica: LARS steps whole rows of " + std::to_string(row_size_) +
                     " parameters, got " + std::to_string(x.size()));
  }
  check_outer(outer, x.size(), 0, "Sgd::step_replica");
  // In place: one block, as wide as the row, written back without streaming.
  const std::size_t width = std::max<std::size_t>(16, (x.size() + 15) / 16 * 16);
  step_row(lr, x, g, buf, BlockedView{x.data(), 1, x.size(), width, width}, 0, ahead, outer, false);
}

void Sgd::step_replica_into(double lr, std::span<const float> x, std::span<const float> g,
                            std::span<float> buf, BlockedView out, std::size_t row,
                            std::span<const float> ahead, const OuterGradient& outer) const {
  const bool use_momentum = config_.momentum != 0.0;
  if (g.size() != x.size() || (use_momentum && buf.size() != x.size()) ||
      (!ahead.empty() && ahead.size() != x.size()) || out.cols != x.size() || row >= out.rows ||
      out.width == 0 || out.stride < out.cols) {
    throw ShapeError("Sgd::step_replica_into: " + std::to_string(x.size()) + " parameters, " +
                     std::to_string(g.size()) + " gradients, " + std::to_string(buf.size()) +
                     " momentum values, " + std::to_string(ahead.size()) + " to prefetch, row " +
                     std::to_string(row) + " of a blocked " + std::to_string(out.rows) + "x" +
                     std::to_string(out.cols) + " output (stride " + std::to_string(out.stride) + ", width " +
                     std::to_string(out.width) + ")");
  }
  if (!std::isfinite(lr)) {
    throw ValueError("Sgd::step_replica_into: learning rate must be finite, got " + std::to_string(lr));
  }
  if (config_.lars && x.size() != row_size_) {
    throw ShapeError("Sgd::step_replica_into: LARS steps whole rows of " + std::to_string(row_size_) +
                     " parameters, got " + std::to_string(x.size()));
  }
  check_outer(outer, x.size(), out.width, "Sgd::step_replica_into");
  // The output lines are not read, so they go past the caches where they start on a line.
  step_row(lr, x, g, buf, out, row, ahead, outer, avx512_);
}

void Sgd::step_row(double lr, std::span<const float> x, std::span<const float> g, std::span<float> buf,
                   BlockedView out, std::size_t row, std::span<const float> ahead, const OuterGradient& outer,
                   bool stream) const {
  const bool use_momentum = config_.momentum != 0.0;
  // Columns [begin, end) are outer's matrix, stepped by apply_outer(); the others from g.
  const std::size_t begin = outer.m == 0 ? x.size() : outer.offset;
  const std::size_t end = outer.m == 0 ? x.size() : outer.offset + outer.out * outer.in;
  bool streamed = false;
  // outer is empty with LARS (computes() is false), so g holds the whole gradient.
  const std::vector<float> scales = lars_scales(x, g);
  const auto part = [&](std::size_t c0, std::size_t c1, float* to) {
    if (c1 <= c0) {
      return;
    }
    const bool streams = stream && reinterpret_cast<std::uintptr_t>(to) % 64 == 0;
    streamed = streamed || streams;
    apply_range(lr, x.data(), to, g.data(), use_momentum ? buf.data() : nullptr, c0, c1,
                ahead.empty() ? nullptr : ahead.data(), streams, scales);
  };
  for (std::size_t b = 0; b < out.blocks(); ++b) {
    const std::size_t c0 = b * out.width;
    const std::size_t c1 = std::min(x.size(), c0 + out.width);
    float* to = out.slice(row, b);
    part(c0, std::min(c1, begin), to);
    const std::size_t after = std::max(c0, end);
    part(after, c1, to + (after - c0));
  }
  if (outer.m != 0) {
    apply_outer(lr, x.data(), use_momentum ? buf.data() : nullptr, outer, out, row,
                ahead.empty() ? nullptr : ahead.data(), stream);
    streamed = streamed || stream;
  }
#if defined(DBENCH_SIM_X86)
  if (streamed) {
    // Streaming stores are weakly ordered: visible before another thread reads the outputs.
    _mm_sfence();
  }
#endif
}

void Sgd::apply(double lr, const float* x, float* out, const float* g, float* buf, std::size_t n,
                const float* ahead, bool stream, float scale) const {
  const bool momentum = config_.momentum != 0.0;
  const bool first = steps_ == 0;
  const bool decay = config_.weight_decay != 0.0;
  // Streaming stores need a 64-byte aligned output (a LARS tensor may start anywhere in a block).
  stream = stream && reinterpret_cast<std::uintptr_t>(out) % 64 == 0;
  const RowKernel kernel =
      config_.lars ? (decay ? pick_kernel<true, true>(momentum, first, config_.nesterov, avx512_, stream)
                            : pick_kernel<false, true>(momentum, first, config_.nesterov, avx512_, stream))
                   : (decay ? pick_kernel<true, false>(momentum, first, config_.nesterov, avx512_, stream)
                            : pick_kernel<false, false>(momentum, first, config_.nesterov, avx512_, stream));
  // LARS: d = r g + (r lambda) x, the ratio applied to the decayed gradient r (g + lambda x).
  const float lambda = config_.lars ? static_cast<float>(static_cast<double>(scale) * config_.weight_decay)
                                    : static_cast<float>(config_.weight_decay);
  kernel(x, out, g, buf, n, static_cast<float>(lr), static_cast<float>(config_.momentum), lambda, scale,
         ahead);
}

void Sgd::apply_range(double lr, const float* x, float* out, const float* g, float* buf, std::size_t c0,
                      std::size_t c1, const float* ahead, bool stream, std::span<const float> scales) const {
  const auto at = [](auto* p, std::size_t c) { return p == nullptr ? p : p + c; };
  if (scales.empty()) {
    apply(lr, x + c0, out, g + c0, at(buf, c0), c1 - c0, at(ahead, c0), stream);
    return;
  }
  for (std::size_t l = 0; l < tensors_.size(); ++l) {
    const std::size_t from = std::max(c0, tensors_[l].offset);
    const std::size_t to = std::min(c1, tensors_[l].offset + tensors_[l].elements);
    if (from < to) {
      apply(lr, x + from, out + (from - c0), g + from, at(buf, from), to - from, at(ahead, from), stream,
            scales[l]);
    }
  }
}

std::vector<float> Sgd::lars_scales(std::span<const float> x, std::span<const float> g) const {
  std::vector<float> scales;
  if (!config_.lars) {
    return scales;
  }
  scales.reserve(tensors_.size());
  for (const LarsTensor& t : tensors_) {
    double ratio = 1.0;
    if (t.adapts) {
      ratio =
          lars_trust_ratio(config_.lars_eta, std::sqrt(squared_norm(x.data() + t.offset, t.elements)),
                           std::sqrt(squared_norm(g.data() + t.offset, t.elements)), config_.weight_decay);
    }
    scales.push_back(static_cast<float>(ratio));
  }
  return scales;
}

bool Sgd::computes(const OuterGradient& outer, std::size_t width) const noexcept {
  return avx512_ && !config_.lars && outer.m != 0 && outer.out != 0 && outer.in != 0 &&
         outer.delta != nullptr && outer.a != nullptr && outer.offset % 16 == 0 && outer.in % 16 == 0 &&
         width % 16 == 0;
}

void Sgd::check_outer(const OuterGradient& outer, std::size_t n, std::size_t width, const char* what) const {
  if (outer.m == 0) {
    return;
  }
  if (!computes(outer, width) || outer.offset + outer.out * outer.in > n) {
    throw ShapeError(std::string(what) + ": cannot step a " + std::to_string(outer.out) + "x" +
                     std::to_string(outer.in) + " matrix at " + std::to_string(outer.offset) + " of " +
                     std::to_string(n) + " parameters from its outer products (blocks of " +
                     std::to_string(width) + " columns" + (avx512_ ? "" : ", no AVX-512") +
                     "); compute its gradient into g instead");
  }
}

void Sgd::apply_outer(double lr, const float* x, float* buf, const OuterGradient& outer, BlockedView out,
                      std::size_t row, const float* ahead, bool stream) const {
#if defined(DBENCH_SIM_X86)
  const bool momentum = config_.momentum != 0.0;
  const OuterKernel kernel = config_.weight_decay != 0.0
                                 ? pick_outer_kernel<true>(momentum, steps_ == 0, config_.nesterov)
                                 : pick_outer_kernel<false>(momentum, steps_ == 0, config_.nesterov);
  kernel(x, buf, outer, out, row, static_cast<float>(lr), static_cast<float>(config_.momentum),
         static_cast<float>(config_.weight_decay), ahead, stream);
#else
  (void)lr, (void)x, (void)buf, (void)outer, (void)out, (void)row, (void)ahead, (void)stream;
#endif
}

}  // namespace dbench::core
