// Compute as it is in a job: each GPU's time for each iteration, from the platform's mean compute, its
// multi-GPU slowdown, per-iteration jitter with an optional heavy tail, and persistent stragglers. Plain
// values; the draws are counter-based (seed, iteration, GPU), so they do not depend on the order they are
// asked for or on how many threads ask.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "sim/platform.hpp"

namespace dbench::sim {

/// Draws each GPU's compute factor (1: the platform's mean compute time alone) per iteration.
class ComputeModel {
 public:
  /// `platform`: its multi_gpu_slowdown, compute_jitter_cv, compute_tail_probability/factor, stragglers and
  /// straggler_factor (validate() first); `gpus`: GPUs in the job (one GPU alone is not slowed down).
  ComputeModel(const PlatformSpec& platform, int gpus, std::uint64_t seed);

  /// Whether every GPU computes the same in every iteration (no jitter, tail or straggler).
  bool uniform() const noexcept { return uniform_; }
  /// GPU factors for `iteration` into `factors` (size gpus): slowdown x lognormal jitter (mean 1, the given
  /// coefficient of variation) x the tail factor with its probability x the straggler factor on stragglers.
  void factors(std::int64_t iteration, std::span<double> factors) const;
  /// The GPUs slowed persistently, ascending: a seeded choice of `stragglers` GPUs.
  const std::vector<int>& straggler_gpus() const noexcept { return stragglers_; }

 private:
  int gpus_;
  std::uint64_t seed_;
  double slowdown_;
  double sigma_;  ///< of the lognormal's underlying normal: sqrt(ln(1 + cv^2))
  double tail_probability_;
  double tail_factor_;
  double straggler_factor_;
  bool uniform_;
  std::vector<int> stragglers_;
  std::vector<char> is_straggler_;
};

}  // namespace dbench::sim
