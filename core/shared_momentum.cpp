#include "core/shared_momentum.hpp"

#include <cmath>
#include <string>

#include "core/errors.hpp"

namespace dbench::core {

SharedMomentumCoefficients shared_momentum_coefficients(std::span<const double> lrs, const SgdConfig& sgd) {
  const double mu = sgd.momentum;
  // Every quantity of the period is a_g * g + a_m * m_prev: the buffer m_k and the displacement so far.
  double buf_g = 0.0;
  double buf_m = 1.0;
  double moved_g = 0.0;
  double moved_m = 0.0;
  for (const double lr_exact : lrs) {
    // SGD rounds the learning rate to float.
    const double lr = static_cast<double>(static_cast<float>(lr_exact));
    buf_g = mu * buf_g + 1.0;
    buf_m = mu * buf_m;
    const double d_g = sgd.nesterov ? 1.0 + mu * buf_g : buf_g;
    const double d_m = sgd.nesterov ? mu * buf_m : buf_m;
    moved_g += lr * d_g;
    moved_m += lr * d_m;
  }
  if (mu == 0.0 || !(moved_g > 0.0)) {
    return {0.0, buf_m};
  }
  // g = (displacement - moved_m * m_prev) / moved_g, then m_H = buf_g * g + buf_m * m_prev.
  return {buf_g / moved_g, buf_m - buf_g * moved_m / moved_g};
}

SharedMomentum::SharedMomentum(const SgdConfig& sgd, std::span<const float> initial_params)
    : sgd_(sgd),
      previous_(initial_params.begin(), initial_params.end()),
      momentum_(initial_params.size(), 0.0f) {}

std::span<const float> SharedMomentum::after_average(std::span<const float> mean) {
  if (mean.size() != previous_.size()) {
    throw ShapeError("SharedMomentum: " + std::to_string(mean.size()) + " parameters, expected " +
                     std::to_string(previous_.size()));
  }
  const SharedMomentumCoefficients c = shared_momentum_coefficients(lrs_, sgd_);
  for (std::size_t j = 0; j < mean.size(); ++j) {
    const double moved = static_cast<double>(previous_[j]) - static_cast<double>(mean[j]);
    momentum_[j] =
        static_cast<float>(c.from_displacement * moved + c.from_momentum * static_cast<double>(momentum_[j]));
    previous_[j] = mean[j];
  }
  lrs_.clear();
  return momentum_;
}

void SharedMomentum::restore(std::span<const float> previous, std::span<const float> momentum,
                             std::span<const double> lrs) {
  if (previous.size() != previous_.size() || momentum.size() != momentum_.size()) {
    throw ShapeError("SharedMomentum: restoring " + std::to_string(previous.size()) + " parameters and " +
                     std::to_string(momentum.size()) + " momentum values, expected " +
                     std::to_string(previous_.size()));
  }
  previous_.assign(previous.begin(), previous.end());
  momentum_.assign(momentum.begin(), momentum.end());
  lrs_.assign(lrs.begin(), lrs.end());
}

}  // namespace dbench::core
