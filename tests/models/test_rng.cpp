#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "models/rng.hpp"
#include "support/approx.hpp"

namespace dm = dbench::models;

TEST_CASE("models::rng: xoshiro256** seeded by splitmix64 matches the reference outputs") {
  // Outputs of the published algorithms (splitmix64 seeding xoshiro256**, Blackman and Vigna) for seed 0.
  dm::Rng rng(0);
  CHECK(rng.next_u64() == 0x99EC5F36CB75F2B4ULL);
  CHECK(rng.next_u64() == 0xBF6E1F784956452AULL);
  CHECK(rng.next_u64() == 0x1A5F849D4933E6E0ULL);
}

TEST_CASE("models::rng: equal seeds give equal streams, derived seeds differ by path") {
  dm::Rng a(42);
  dm::Rng b(42);
  for (int i = 0; i < 100; ++i) {
    CHECK(a.next_u64() == b.next_u64());
  }
  CHECK(dm::derive_seed(1, {2, 3}) == dm::derive_seed(1, {2, 3}));
  CHECK(dm::derive_seed(1, {2, 3}) != dm::derive_seed(1, {3, 2}));
  CHECK(dm::derive_seed(1, {2}) != dm::derive_seed(1, {2, 0}));
  CHECK(dm::derive_seed(1, {2}) != dm::derive_seed(2, {2}));
}

TEST_CASE("models::rng: below() stays in range and hits every value about equally") {
  dm::Rng rng(7);
  std::vector<int> counts(7, 0);
  constexpr int kDraws = 70000;
  for (int i = 0; i < kDraws; ++i) {
    const auto v = rng.below(7);
    REQUIRE(v < 7);
    ++counts[v];
  }
  for (int c : counts) {
    CHECK(std::abs(c - kDraws / 7) < 400);  // ~4.4 standard deviations
  }
}

TEST_CASE("models::rng: normal and gamma samples have the right mean and variance") {
  dm::Rng rng(3);
  constexpr int kDraws = 200000;
  double sum = 0.0;
  double sum_sq = 0.0;
  for (int i = 0; i < kDraws; ++i) {
    const double x = rng.normal();
    sum += x;
    sum_sq += x * x;
  }
  CHECK(sum / kDraws == doctest::Approx(0.0).epsilon(0.01));
  CHECK(sum_sq / kDraws == dbench::testing::approx(1.0).epsilon(0.01));
  for (double shape : {0.1, 0.5, 1.0, 4.0}) {
    double g_sum = 0.0;
    double g_sq = 0.0;
    for (int i = 0; i < kDraws; ++i) {
      const double g = rng.gamma(shape);
      REQUIRE(g >= 0.0);
      g_sum += g;
      g_sq += g * g;
    }
    const double mean = g_sum / kDraws;
    CAPTURE(shape);
    CHECK(mean == dbench::testing::approx(shape).epsilon(0.03));
    CHECK(g_sq / kDraws - mean * mean == dbench::testing::approx(shape).epsilon(0.06));  // Var = shape
  }
}

TEST_CASE("models::rng: shuffle is a permutation and depends on the seed") {
  std::vector<int> a(1000);
  std::iota(a.begin(), a.end(), 0);
  auto b = a;
  dm::Rng(1).shuffle(std::span(a));
  dm::Rng(2).shuffle(std::span(b));
  CHECK(a != b);
  std::sort(a.begin(), a.end());
  for (int i = 0; i < 1000; ++i) {
    CHECK(a[static_cast<std::size_t>(i)] == i);
  }
}
