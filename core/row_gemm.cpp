#include "core/row_gemm.hpp"

#include <algorithm>
#include <cmath>
#include <type_traits>

#include "core/simd.hpp"

namespace dbench::core {
namespace {

// Outputs per block: four 16-float vectors. A tile of six rows (or six input columns) times one block holds
// 24 accumulators and the 4 operand vectors within AVX-512's 32 registers.
constexpr std::size_t kLanes = 16;
constexpr std::size_t kBlock = 4 * kLanes;
constexpr std::size_t kTile = 6;
constexpr std::size_t kLineFloats = 16;

void linear_portable(const float* const* rows, std::size_t m, std::size_t in, const float* wt,
                     std::size_t out, const float* bias, float* z) {
  const std::size_t ld = transposed_stride(out);
  for (std::size_t r = 0; r < m; ++r) {
    const float* x = rows[r];
    for (std::size_t o = 0; o < out; ++o) {
      float acc = 0.0f;
      for (std::size_t k = 0; k < in; ++k) {
        acc = std::fma(x[k], wt[k * ld + o], acc);
      }
      z[r * out + o] = acc + bias[o];
    }
  }
}

void weight_grad_portable(const float* const* rows, std::size_t m, const float* delta, std::size_t out,
                          std::size_t in, float* g) {
  std::fill_n(g, out * in, 0.0f);
  for (std::size_t r = 0; r < m; ++r) {
    const float* x = rows[r];
    for (std::size_t o = 0; o < out; ++o) {
      const float d = delta[r * out + o];
      float* go = g + o * in;
      for (std::size_t k = 0; k < in; ++k) {
        go[k] = std::fma(d, x[k], go[k]);
      }
    }
  }
}

#if defined(DBENCH_SIM_X86)

DBENCH_AVX512 __mmask16 lanes_mask(std::size_t lanes) {
  return lanes >= kLanes ? __mmask16{0xFFFF} : static_cast<__mmask16>((1U << lanes) - 1U);
}

/// tile(std::integral_constant<int, V>) for V = `vectors` (1 to 4), so that a tile's vector count is a
/// compile-time constant.
template <class Tile>
void with_vectors(int vectors, Tile&& tile) {
  switch (vectors) {
    case 1:
      tile(std::integral_constant<int, 1>{});
      break;
    case 2:
      tile(std::integral_constant<int, 2>{});
      break;
    case 3:
      tile(std::integral_constant<int, 3>{});
      break;
    default:
      tile(std::integral_constant<int, 4>{});
      break;
  }
}

// R rows times V vectors of outputs; the last vector's lanes beyond the outputs are masked by `last`.
template <int R, int V>
DBENCH_AVX512 void linear_tile(const float* const* rows, std::size_t in, const float* wt, std::size_t ld,
                               const float* bias, float* z, std::size_t ldz, __mmask16 last) {
  __m512 acc[R][V];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 4
    for (int v = 0; v < V; ++v) {
      acc[r][v] = _mm512_setzero_ps();
    }
  }
  for (std::size_t k = 0; k < in; ++k) {
    __m512 b[V];
#pragma GCC unroll 4
    for (int v = 0; v < V; ++v) {
      b[v] = _mm512_loadu_ps(wt + k * ld + kLanes * v);
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const __m512 a = _mm512_set1_ps(rows[r][k]);
#pragma GCC unroll 4
      for (int v = 0; v < V; ++v) {
        acc[r][v] = _mm512_fmadd_ps(a, b[v], acc[r][v]);
      }
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 4
    for (int v = 0; v < V; ++v) {
      const __mmask16 mask = v == V - 1 ? last : __mmask16{0xFFFF};
      const __m512 sum = _mm512_add_ps(acc[r][v], _mm512_maskz_loadu_ps(mask, bias + kLanes * v));
      _mm512_mask_storeu_ps(z + r * ldz + kLanes * v, mask, sum);
    }
  }
}

DBENCH_AVX512 void linear_avx512(const float* const* rows, std::size_t m, std::size_t in, const float* wt,
                                 std::size_t out, const float* bias, float* z) {
  const std::size_t ld = transposed_stride(out);
  for (std::size_t o0 = 0; o0 < out; o0 += kBlock) {
    const std::size_t cols = std::min(kBlock, out - o0);
    const int vectors = static_cast<int>((cols + kLanes - 1) / kLanes);
    const __mmask16 last = lanes_mask(cols - kLanes * static_cast<std::size_t>(vectors - 1));
    with_vectors(vectors, [&](auto v) {
      std::size_t r = 0;
      for (; r + kTile <= m; r += kTile) {
        linear_tile<kTile, v>(rows + r, in, wt + o0, ld, bias + o0, z + r * out + o0, out, last);
      }
      for (; r < m; ++r) {
        linear_tile<1, v>(rows + r, in, wt + o0, ld, bias + o0, z + r * out + o0, out, last);
      }
    });
  }
}

// J input columns [k0, k0 + J) times V vectors of outputs [o0, o0 + 16 V): the accumulators hold g's
// transpose, one input column's outputs per vector, and are written back transposed. `prefetch` asks for
// each row's next line, which the following tiles read.
template <int J, int V>
DBENCH_AVX512 void grad_tile(const float* const* rows, std::size_t m, std::size_t k0, const float* delta,
                             std::size_t out, std::size_t o0, std::size_t cols, __mmask16 last, bool prefetch,
                             float* g, std::size_t in) {
  __m512 acc[J][V];
#pragma GCC unroll 8
  for (int j = 0; j < J; ++j) {
#pragma GCC unroll 4
    for (int v = 0; v < V; ++v) {
      acc[j][v] = _mm512_setzero_ps();
    }
  }
  for (std::size_t s = 0; s < m; ++s) {
    const float* x = rows[s] + k0;
    if (prefetch) {
      _mm_prefetch(reinterpret_cast<const char*>(x + kLineFloats), _MM_HINT_T0);
    }
    const float* d = delta + s * out + o0;
    __m512 dv[V];
#pragma GCC unroll 4
    for (int v = 0; v < V; ++v) {
      dv[v] = _mm512_maskz_loadu_ps(v == V - 1 ? last : __mmask16{0xFFFF}, d + kLanes * v);
    }
#pragma GCC unroll 8
    for (int j = 0; j < J; ++j) {
      const __m512 a = _mm512_set1_ps(x[j]);
#pragma GCC unroll 4
      for (int v = 0; v < V; ++v) {
        acc[j][v] = _mm512_fmadd_ps(a, dv[v], acc[j][v]);
      }
    }
  }
  alignas(64) float t[J][V * kLanes];
#pragma GCC unroll 8
  for (int j = 0; j < J; ++j) {
#pragma GCC unroll 4
    for (int v = 0; v < V; ++v) {
      _mm512_store_ps(&t[j][kLanes * v], acc[j][v]);
    }
  }
  for (std::size_t o = 0; o < cols; ++o) {
    for (int j = 0; j < J; ++j) {
      g[(o0 + o) * in + k0 + static_cast<std::size_t>(j)] = t[j][o];
    }
  }
}

DBENCH_AVX512 void weight_grad_avx512(const float* const* rows, std::size_t m, const float* delta,
                                      std::size_t out, std::size_t in, float* g) {
  for (std::size_t o0 = 0; o0 < out; o0 += kBlock) {
    const std::size_t cols = std::min(kBlock, out - o0);
    const int vectors = static_cast<int>((cols + kLanes - 1) / kLanes);
    const __mmask16 last = lanes_mask(cols - kLanes * static_cast<std::size_t>(vectors - 1));
    with_vectors(vectors, [&](auto v) {
      std::size_t k = 0;
      for (; k + kTile <= in; k += kTile) {
        // Once per line of each row, in the first block of outputs (the others find the rows in cache).
        const bool prefetch = o0 == 0 && k % kLineFloats + kTile >= kLineFloats && k + kLineFloats < in;
        grad_tile<kTile, v>(rows, m, k, delta, out, o0, cols, last, prefetch, g, in);
      }
      for (; k < in; ++k) {
        grad_tile<1, v>(rows, m, k, delta, out, o0, cols, last, false, g, in);
      }
    });
  }
}

#endif

}  // namespace

std::size_t transposed_stride(std::size_t out) noexcept {
  return (out + kLanes - 1) / kLanes * kLanes;
}

void transpose_weights(const float* w, std::size_t out, std::size_t in, float* t) {
  const std::size_t ld = transposed_stride(out);
  for (std::size_t k = 0; k < in; ++k) {
    float* row = t + k * ld;
    for (std::size_t o = 0; o < out; ++o) {
      row[o] = w[o * in + k];
    }
    std::fill(row + out, row + ld, 0.0f);
  }
}

void rows_linear(const float* const* rows, std::size_t m, std::size_t in, const float* wt, std::size_t out,
                 const float* bias, float* z, bool allow_avx512) {
#if defined(DBENCH_SIM_X86)
  if (allow_avx512 && cpu_has_avx512f()) {
    linear_avx512(rows, m, in, wt, out, bias, z);
    return;
  }
#endif
  (void)allow_avx512;
  linear_portable(rows, m, in, wt, out, bias, z);
}

void rows_weight_grad(const float* const* rows, std::size_t m, const float* delta, std::size_t out,
                      std::size_t in, float* g, bool allow_avx512) {
#if defined(DBENCH_SIM_X86)
  if (allow_avx512 && cpu_has_avx512f()) {
    weight_grad_avx512(rows, m, delta, out, in, g);
    return;
  }
#endif
  (void)allow_avx512;
  weight_grad_portable(rows, m, delta, out, in, g);
}

}  // namespace dbench::core
