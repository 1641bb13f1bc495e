#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <utility>

namespace dbench::models {

/// One step of splitmix64: a bijective 64-bit mixer, used to derive seeds and to seed Rng.
constexpr std::uint64_t splitmix64(std::uint64_t& state) {
  state += 0x9E3779B97F4A7C15ULL;
  std::uint64_t z = state;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

/// Derives an independent stream seed from a base seed and a path of integers, e.g. (seed, replica, epoch).
constexpr std::uint64_t derive_seed(std::uint64_t seed, std::initializer_list<std::uint64_t> path) {
  std::uint64_t state = seed;
  std::uint64_t out = splitmix64(state);
  for (std::uint64_t part : path) {
    // Feed each part through the mixer so that (1, 2) and (2, 1) give unrelated streams.
    state = out ^ (part + 0x632BE59BD9B4E019ULL);
    out = splitmix64(state);
  }
  return out;
}

/// xoshiro256** with distributions implemented here, so that a seed gives the same numbers on every
/// platform (the std:: distributions differ between standard libraries).
class Rng {
 public:
  /// Seeds the four state words from splitmix64(seed), as the xoshiro authors recommend.
  explicit Rng(std::uint64_t seed);

  /// The next raw 64-bit output.
  std::uint64_t next_u64();

  /// Uniform double in [0, 1) with 53 random bits.
  double uniform();

  /// Uniform integer in [0, bound) without modulo bias; bound > 0.
  std::uint64_t below(std::uint64_t bound);

  /// Standard normal sample (Box-Muller; the second value of each pair is kept for the next call).
  double normal();

  /// Gamma(shape, 1) sample, shape > 0 (Marsaglia-Tsang; shape < 1 through Gamma(shape + 1) * U^(1/shape)).
  double gamma(double shape);

  /// Fisher-Yates shuffle in place.
  template <typename T>
  void shuffle(std::span<T> values) {
    for (std::size_t i = values.size(); i > 1; --i) {
      const std::size_t j = static_cast<std::size_t>(below(i));
      std::swap(values[i - 1], values[j]);
    }
  }

 private:
  std::array<std::uint64_t, 4> state_{};
  double spare_normal_ = 0.0;
  bool has_spare_normal_ = false;
};

}  // namespace dbench::models
