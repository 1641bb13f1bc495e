// GEMMs whose sample operand is a list of rows lying anywhere in memory (a batch picked by pointer from the
// data set), so that training reads its samples where they are instead of first copying them into one
// matrix. Each output is one chain of fused multiply-adds in a fixed order, so the AVX-512 kernels and the
// portable ones give the same bits.
#pragma once

#include <cstddef>

namespace dbench::core {

/// Floats per row of a weight matrix's transpose for rows_linear(): `out` rounded up to 16.
std::size_t transposed_stride(std::size_t out) noexcept;

/// t [in, transposed_stride(out)] = w [out, in] transposed (nn.Linear's layout), the padding zero.
void transpose_weights(const float* w, std::size_t out, std::size_t in, float* t);

/// z [m, out]: z[r][o] = (x_r[0] wt[0][o] + x_r[1] wt[1][o] + ... + x_r[in - 1] wt[in - 1][o]) + bias[o],
/// the sum one chain of fused multiply-adds in k order from zero, where x_r = rows[r] holds `in` floats and
/// wt is transpose_weights()'s output. `allow_avx512` false takes the portable kernel even where AVX-512
/// runs.
void rows_linear(const float* const* rows, std::size_t m, std::size_t in, const float* wt, std::size_t out,
                 const float* bias, float* z, bool allow_avx512 = true);

/// g [out, in]: g[o][k] = delta[0][o] x_0[k] + delta[1][o] x_1[k] + ... + delta[m - 1][o] x_{m-1}[k], one
/// chain of fused multiply-adds in row order from zero, where x_r = rows[r] holds `in` floats and delta is
/// [m, out]. `allow_avx512` as for rows_linear().
void rows_weight_grad(const float* const* rows, std::size_t m, const float* delta, std::size_t out,
                      std::size_t in, float* g, bool allow_avx512 = true);

}  // namespace dbench::core
