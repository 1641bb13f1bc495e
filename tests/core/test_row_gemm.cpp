#include <doctest/doctest.h>

#include <cmath>
#include <cstddef>
#include <vector>

#include "core/row_gemm.hpp"
#include "test_helpers.hpp"

namespace core = dbench::core;
using core::testing::TestRng;

namespace {

struct Shape {
  std::size_t m, in, out;
};

// Tile edges on every side: fewer rows than a tile, outputs in partial vectors and over one 64-wide block,
// inputs below and above a tile and a cache line, and the MLP's own first layer.
constexpr Shape kShapes[] = {{1, 3, 1},    {7, 13, 10},  {13, 50, 64},  {6, 17, 16},
                             {12, 40, 70}, {5, 16, 130}, {32, 784, 64}, {3, 6, 17}};

/// m rows of `in` floats at scattered places of one pool (as a batch picked from a data set is), values in
/// [-1, 1).
struct ScatteredRows {
  ScatteredRows(std::size_t m, std::size_t in, TestRng& rng) : pool((m + 3) * (in + 5)) {
    for (float& v : pool) {
      v = rng.uniform(-1.0f, 1.0f);
    }
    for (std::size_t r = 0; r < m; ++r) {
      // Rows in a shuffled order, each at an odd offset, so that none is aligned.
      const std::size_t slot = (r * 5 + 2) % (m + 3);
      rows.push_back(pool.data() + slot * (in + 5) + 1 + r % 3);
    }
  }
  std::vector<float> pool;
  std::vector<const float*> rows;
};

std::vector<float> random_vector(std::size_t n, TestRng& rng) {
  std::vector<float> v(n);
  for (float& x : v) {
    x = rng.uniform(-1.0f, 1.0f);
  }
  return v;
}

}  // namespace

TEST_CASE("core::row_gemm: transpose_weights pads each row to 16 floats with zeros") {
  TestRng rng(3);
  const std::size_t out = 10;
  const std::size_t in = 7;
  const std::vector<float> w = random_vector(out * in, rng);
  REQUIRE(core::transposed_stride(out) == 16);
  CHECK(core::transposed_stride(16) == 16);
  CHECK(core::transposed_stride(17) == 32);
  std::vector<float> t(in * 16, 99.0f);
  core::transpose_weights(w.data(), out, in, t.data());
  for (std::size_t k = 0; k < in; ++k) {
    for (std::size_t o = 0; o < 16; ++o) {
      CHECK(t[k * 16 + o] == (o < out ? w[o * in + k] : 0.0f));
    }
  }
}

// Each case runs the kernel this CPU picks and the portable one, which must agree bit for bit.
TEST_CASE("core::row_gemm: rows_linear is one fused multiply-add chain per output in input order") {
  TestRng rng(11);
  for (const Shape& s : kShapes) {
    CAPTURE(s.m);
    CAPTURE(s.in);
    CAPTURE(s.out);
    const ScatteredRows x(s.m, s.in, rng);
    const std::vector<float> w = random_vector(s.out * s.in, rng);
    const std::vector<float> bias = random_vector(s.out, rng);
    std::vector<float> wt(s.in * core::transposed_stride(s.out));
    core::transpose_weights(w.data(), s.out, s.in, wt.data());
    // One more row than asked for, which must stay untouched.
    std::vector<float> z((s.m + 1) * s.out, 7.0f);
    core::rows_linear(x.rows.data(), s.m, s.in, wt.data(), s.out, bias.data(), z.data());
    std::vector<float> portable((s.m + 1) * s.out, 7.0f);
    core::rows_linear(x.rows.data(), s.m, s.in, wt.data(), s.out, bias.data(), portable.data(), false);
    CHECK(portable == z);
    for (std::size_t r = 0; r < s.m; ++r) {
      for (std::size_t o = 0; o < s.out; ++o) {
        float chain = 0.0f;
        double exact = 0.0;
        for (std::size_t k = 0; k < s.in; ++k) {
          chain = std::fma(x.rows[r][k], w[o * s.in + k], chain);
          exact += static_cast<double>(x.rows[r][k]) * static_cast<double>(w[o * s.in + k]);
        }
        const float expected = chain + bias[o];
        REQUIRE(z[r * s.out + o] == expected);
        CHECK(std::abs(z[r * s.out + o] - (exact + bias[o])) < 1e-5 * static_cast<double>(s.in));
      }
    }
    for (std::size_t o = 0; o < s.out; ++o) {
      CHECK(z[s.m * s.out + o] == 7.0f);
    }
  }
}

TEST_CASE("core::row_gemm: rows_weight_grad is one fused multiply-add chain per weight in row order") {
  TestRng rng(12);
  for (const Shape& s : kShapes) {
    CAPTURE(s.m);
    CAPTURE(s.in);
    CAPTURE(s.out);
    const ScatteredRows x(s.m, s.in, rng);
    const std::vector<float> delta = random_vector(s.m * s.out, rng);
    std::vector<float> g(s.out * s.in, 5.0f);
    core::rows_weight_grad(x.rows.data(), s.m, delta.data(), s.out, s.in, g.data());
    std::vector<float> portable(s.out * s.in, 5.0f);
    core::rows_weight_grad(x.rows.data(), s.m, delta.data(), s.out, s.in, portable.data(), false);
    CHECK(portable == g);
    for (std::size_t o = 0; o < s.out; ++o) {
      for (std::size_t k = 0; k < s.in; ++k) {
        float chain = 0.0f;
        double exact = 0.0;
        for (std::size_t r = 0; r < s.m; ++r) {
          chain = std::fma(delta[r * s.out + o], x.rows[r][k], chain);
          exact += static_cast<double>(delta[r * s.out + o]) * static_cast<double>(x.rows[r][k]);
        }
        REQUIRE(g[o * s.in + k] == chain);
        CHECK(std::abs(g[o * s.in + k] - exact) < 1e-5 * static_cast<double>(s.m));
      }
    }
  }
}

TEST_CASE("core::row_gemm: no rows give zero gradients") {
  for (const bool avx512 : {true, false}) {
    std::vector<float> g(3 * 4, 5.0f);
    core::rows_weight_grad(nullptr, 0, nullptr, 3, 4, g.data(), avx512);
    CHECK(g == std::vector<float>(12, 0.0f));
  }
}
