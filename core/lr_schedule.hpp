// The learning rate of every iteration: linear warm-up, then constant, step or cosine decay.
#pragma once

#include <cstdint>
#include <vector>

namespace dbench::core {

/// Decay after warm-up.
enum class LrDecay { constant, step, cosine };

/// A learning-rate schedule over a run of `iterations` iterations.
struct LrSchedule {
  double peak = 0.1;                   ///< lr after warm-up (linear scaling already applied)
  std::int64_t iterations = 1;         ///< length of the run (the cosine reaches `min_lr` at its end)
  std::int64_t warmup_iterations = 0;  ///< lr rises linearly to `peak` over these iterations
  double warmup_start = 0.0;           ///< the lr the warm-up rises from (Goyal et al.: the unscaled lr)
  LrDecay decay = LrDecay::constant;
  std::vector<std::int64_t> milestones;  ///< step: iterations at which lr is multiplied by `gamma`
  double gamma = 0.1;
  double min_lr = 0.0;  ///< cosine: the final lr

  /// The lr of iteration t (0-based). Warm-up: warmup_start + (peak - warmup_start) * (t + 1) /
  /// warmup_iterations.
  double at(std::int64_t t) const;
};

}  // namespace dbench::core
