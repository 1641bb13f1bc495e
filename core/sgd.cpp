#include "core/sgd.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>

#include "core/errors.hpp"
#include "core/parallel.hpp"
#include "core/simd.hpp"

namespace dbench::core {
namespace {

// One loop per combination of options, so that each compiles to a branch-free vectorised pass. Each reads
// the parameters at x and writes the stepped ones at out, which is x itself or a separate buffer. `ahead` is
// a prefetch hint that only the AVX-512 kernel acts on.
template <bool kDecay, bool kMomentum, bool kFirst, bool kNesterov>
void sgd_row(const float* x, float* out, const float* g, float* buf, std::size_t n, float lr, float mu,
             float lambda, const float* /*ahead*/) {
  for (std::size_t j = 0; j < n; ++j) {
    float d = g[j];
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

/// 16 lanes of sgd_row at x + j, the lanes of `m` only; with kStream, a whole vector's output (out + j must
/// be 64-byte aligned) is stored past the caches.
template <bool kDecay, bool kMomentum, bool kFirst, bool kNesterov, bool kMasked, bool kStream>
DBENCH_AVX512 inline void sgd_lanes(const float* x, float* out, const float* g, float* buf, std::size_t j,
                                    __mmask16 m, __m512 vlr, __m512 vmu, __m512 vlambda) {
  const __m512 xv = kMasked ? _mm512_maskz_loadu_ps(m, x + j) : _mm512_loadu_ps(x + j);
  __m512 d = kMasked ? _mm512_maskz_loadu_ps(m, g + j) : _mm512_loadu_ps(g + j);
  if constexpr (kDecay) {
    d = _mm512_add_ps(d, _mm512_mul_ps(vlambda, xv));
  }
  if constexpr (kMomentum) {
    __m512 b = d;
    if constexpr (!kFirst) {
      const __m512 old = kMasked ? _mm512_maskz_loadu_ps(m, buf + j) : _mm512_loadu_ps(buf + j);
      b = _mm512_add_ps(_mm512_mul_ps(vmu, old), d);
    }
    if constexpr (kMasked) {
      _mm512_mask_storeu_ps(buf + j, m, b);
    } else {
      _mm512_storeu_ps(buf + j, b);
    }
    d = kNesterov ? _mm512_add_ps(d, _mm512_mul_ps(vmu, b)) : b;
  }
  const __m512 stepped = _mm512_sub_ps(xv, _mm512_mul_ps(vlr, d));
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
template <bool kDecay, bool kMomentum, bool kFirst, bool kNesterov, bool kStream>
DBENCH_AVX512 void sgd_row_avx512(const float* x, float* out, const float* g, float* buf, std::size_t n,
                                  float lr, float mu, float lambda, const float* ahead) {
  const __m512 vlr = _mm512_set1_ps(lr);
  const __m512 vmu = _mm512_set1_ps(mu);
  const __m512 vlambda = _mm512_set1_ps(lambda);
  std::size_t j = 0;
  for (; j + 16 <= n; j += 16) {
    if (ahead != nullptr) {
      _mm_prefetch(reinterpret_cast<const char*>(ahead + j), _MM_HINT_T0);
    }
    sgd_lanes<kDecay, kMomentum, kFirst, kNesterov, false, kStream>(x, out, g, buf, j, 0xFFFF, vlr, vmu,
                                                                    vlambda);
  }
  if (j < n) {
    const auto m = static_cast<__mmask16>((1u << (n - j)) - 1u);
    sgd_lanes<kDecay, kMomentum, kFirst, kNesterov, true, false>(x, out, g, buf, j, m, vlr, vmu, vlambda);
  }
}

#endif

using RowKernel = void (*)(const float*, float*, const float*, float*, std::size_t, float, float, float,
                           const float*);

/// The kernel for these options; `stream` (AVX-512 only) stores the output past the caches.
template <bool kDecay, bool kMomentum, bool kFirst, bool kNesterov>
RowKernel row_kernel(bool avx512, bool stream) {
#if defined(DBENCH_SIM_X86)
  if (avx512) {
    return stream ? sgd_row_avx512<kDecay, kMomentum, kFirst, kNesterov, true>
                  : sgd_row_avx512<kDecay, kMomentum, kFirst, kNesterov, false>;
  }
#endif
  (void)avx512;
  (void)stream;
  return sgd_row<kDecay, kMomentum, kFirst, kNesterov>;
}

template <bool kDecay>
RowKernel pick_kernel(bool momentum, bool first, bool nesterov, bool avx512, bool stream) {
  if (!momentum) {
    return row_kernel<kDecay, false, false, false>(avx512, stream);
  }
  if (first) {
    return nesterov ? row_kernel<kDecay, true, true, true>(avx512, stream)
                    : row_kernel<kDecay, true, true, false>(avx512, stream);
  }
  return nesterov ? row_kernel<kDecay, true, false, true>(avx512, stream)
                  : row_kernel<kDecay, true, false, false>(avx512, stream);
}

std::string shape(ConstReplicaView v) {
  return std::to_string(v.rows) + "x" + std::to_string(v.cols);
}

}  // namespace

Sgd::Sgd(SgdConfig config, unsigned threads, bool allow_avx512)
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
  parallel_for(threads_, params.rows, [&](std::size_t r0, std::size_t r1) {
    for (std::size_t r = r0; r < r1; ++r) {
      apply(lr, params.row_data(r), params.row_data(r), grads.row_data(r),
            use_momentum ? momentum.row_data(r) : nullptr, params.cols, nullptr, false);
    }
  });
  finish_step();
}

void Sgd::step_replica(double lr, std::span<float> x, std::span<const float> g, std::span<float> buf,
                       std::span<const float> ahead) const {
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
  apply(lr, x.data(), x.data(), g.data(), use_momentum ? buf.data() : nullptr, x.size(),
        ahead.empty() ? nullptr : ahead.data(), false);
}

void Sgd::step_replica_into(double lr, std::span<const float> x, std::span<const float> g,
                            std::span<float> buf, BlockedView out, std::size_t row,
                            std::span<const float> ahead) const {
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
  bool streamed = false;
  for (std::size_t b = 0; b < out.blocks(); ++b) {
    const std::size_t c0 = b * out.width;
    float* to = out.slice(row, b);
    // The output lines are not read, so they go past the caches where they start on a line.
    const bool stream = avx512_ && reinterpret_cast<std::uintptr_t>(to) % 64 == 0;
    streamed = streamed || stream;
    apply(lr, x.data() + c0, to, g.data() + c0, use_momentum ? buf.data() + c0 : nullptr,
          std::min(x.size(), c0 + out.width) - c0, ahead.empty() ? nullptr : ahead.data() + c0, stream);
  }
#if defined(DBENCH_SIM_X86)
  if (streamed) {
    // Streaming stores are weakly ordered: visible before another thread reads the outputs.
    _mm_sfence();
  }
#endif
}

void Sgd::apply(double lr, const float* x, float* out, const float* g, float* buf, std::size_t n,
                const float* ahead, bool stream) const {
  const bool momentum = config_.momentum != 0.0;
  const RowKernel kernel = config_.weight_decay != 0.0
                               ? pick_kernel<true>(momentum, steps_ == 0, config_.nesterov, avx512_, stream)
                               : pick_kernel<false>(momentum, steps_ == 0, config_.nesterov, avx512_, stream);
  kernel(x, out, g, buf, n, static_cast<float>(lr), static_cast<float>(config_.momentum),
         static_cast<float>(config_.weight_decay), ahead);
}

}  // namespace dbench::core
