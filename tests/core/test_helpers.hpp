// Small shared helpers of the sim/ tests: a seeded generator and dense reference arithmetic in double.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/mixing.hpp"
#include "core/replica_view.hpp"
#include "topology/generators.hpp"

namespace dbench::core::testing {

/// A tiny seeded generator (64-bit LCG), so test data does not depend on the standard library's
/// distributions.
class TestRng {
 public:
  explicit TestRng(std::uint64_t seed) : state_(seed * 2862933555777941757ULL + 3037000493ULL) {}
  /// Uniform in [0, 1).
  double uniform() {
    state_ = state_ * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<double>(state_ >> 11) * 0x1.0p-53;
  }
  /// Uniform in [lo, hi).
  float uniform(float lo, float hi) { return lo + (hi - lo) * static_cast<float>(uniform()); }
  /// Uniform integer in [0, n).
  std::size_t below(std::size_t n) { return static_cast<std::size_t>(uniform() * static_cast<double>(n)); }

 private:
  std::uint64_t state_;
};

/// Fills every row of `v` with uniform values in [lo, hi).
inline void fill_uniform(ReplicaView v, TestRng& rng, float lo, float hi) {
  for (std::size_t i = 0; i < v.rows; ++i) {
    for (float& x : v.row(i)) {
      x = rng.uniform(lo, hi);
    }
  }
}

/// Element (i, c) of a column-blocked view.
inline float blocked_at(ConstBlockedView v, std::size_t i, std::size_t c) {
  const std::size_t b = c / v.width;
  return v.slice(i, b)[c - b * v.width];
}

/// Writes every element of `from` to the same place of the column-blocked `to` (same rows and columns).
inline void copy_to_blocks(ConstReplicaView from, BlockedView to) {
  for (std::size_t i = 0; i < from.rows; ++i) {
    for (std::size_t c = 0; c < from.cols; ++c) {
      const std::size_t b = c / to.width;
      to.slice(i, b)[c - b * to.width] = from.row_data(i)[c];
    }
  }
}

/// Compressed rows of the ring on n nodes with weight 1/3 on i-1, i, i+1 (n >= 3).
inline MixingMatrix ring_thirds(std::size_t n) {
  std::vector<std::int32_t> offsets{0};
  std::vector<std::int32_t> from;
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j : {(i + n - 1) % n, i, (i + 1) % n}) {
      from.push_back(static_cast<std::int32_t>(j));
    }
    offsets.push_back(static_cast<std::int32_t>(from.size()));
  }
  const std::vector<double> weight(from.size(), 1.0 / 3.0);
  return {std::move(offsets), std::move(from), weight};
}

/// The static exponential graph's rows (topology::exponential): i receives from itself and i - 2^k (mod n),
/// weights 1/(d+1).
inline MixingMatrix exponential(std::size_t n) {
  return to_mixing_matrix(topology::exponential(static_cast<int>(n)));
}

}  // namespace dbench::core::testing
