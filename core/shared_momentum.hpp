// Momentum that replicas averaging their parameters now and then keep identical, without sending it: rebuilt
// at every global average from how far the averaged parameters moved since the previous one.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "core/sgd.hpp"

namespace dbench::core {

/// m_new = from_displacement * (x_prev - x_now) + from_momentum * m_prev, elementwise.
struct SharedMomentumCoefficients {
  double from_displacement = 0.0;
  double from_momentum = 1.0;
};

/// The coefficients after local steps with learning rates `lrs` (in order) that all started from the averaged
/// parameters x_prev and the shared momentum m_prev, and ended in a global average x_now. They solve
/// x_prev - x_now = sum_k lr_k d_k for the mean gradient g, taking g the same at every step of the period
/// (the steps of one period are a few iterations apart), with d_k and the momentum as `sgd` computes them
/// (Nesterov or not, weight decay inside g), and return the mean of the replicas' momentum buffers at the
/// end. With a period of one step the assumption is no assumption: the result is that mean exactly. Without
/// momentum, or where every lr is 0, the displacement tells nothing: {0, mu^H}.
SharedMomentumCoefficients shared_momentum_coefficients(std::span<const double> lrs, const SgdConfig& sgd);

/// The state one replica (or all identical ones) keeps for it: the averaged parameters and the shared
/// momentum of the last global average, and the learning rates of the local steps since.
class SharedMomentum {
 public:
  /// Starts at the common initial parameters, momentum zero.
  SharedMomentum(const SgdConfig& sgd, std::span<const float> initial_params);

  /// Records a local step taken with learning rate lr.
  void local_step(double lr) { lrs_.push_back(lr); }
  /// After a global average to `mean`: rebuilds the shared momentum, remembers `mean`, and returns the
  /// momentum that every replica's buffer takes. Throws ShapeError when `mean` has another size.
  std::span<const float> after_average(std::span<const float> mean);
  /// The shared momentum of the last global average.
  std::span<const float> momentum() const noexcept { return momentum_; }
  /// The averaged parameters of the last global average.
  std::span<const float> previous() const noexcept { return previous_; }
  /// The learning rates of the local steps since.
  std::span<const double> lrs() const noexcept { return lrs_; }
  /// Back to a state the three accessors above described (a resumed run); throws ShapeError on other sizes.
  void restore(std::span<const float> previous, std::span<const float> momentum, std::span<const double> lrs);

 private:
  SgdConfig sgd_;
  std::vector<float> previous_;
  std::vector<float> momentum_;
  std::vector<double> lrs_;
};

}  // namespace dbench::core
