#include "core/lr_schedule.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace dbench::core {

double LrSchedule::at(std::int64_t t) const {
  if (t < warmup_iterations) {
    return warmup_start +
           (peak - warmup_start) * static_cast<double>(t + 1) / static_cast<double>(warmup_iterations);
  }
  switch (decay) {
    case LrDecay::constant:
      return peak;
    case LrDecay::step: {
      const auto passed = std::count_if(milestones.begin(), milestones.end(), [t](auto m) { return t >= m; });
      return peak * std::pow(gamma, static_cast<double>(passed));
    }
    case LrDecay::cosine: {
      const auto span = std::max<std::int64_t>(1, iterations - 1 - warmup_iterations);
      const double progress =
          std::min(1.0, static_cast<double>(t - warmup_iterations) / static_cast<double>(span));
      return min_lr + 0.5 * (peak - min_lr) * (1.0 + std::cos(std::numbers::pi * progress));
    }
  }
  return peak;
}

}  // namespace dbench::core
