// The local optimizer step of every replica: SGD with momentum, weight decay and Nesterov, as PyTorch's
// torch.optim.SGD computes it (dampening 0).
#pragma once

#include <cstddef>

#include "sim/replica_view.hpp"

namespace dbench::sim {

/// SGD hyper-parameters that stay fixed over a run; the learning rate is given per step.
struct SgdConfig {
  /// Momentum factor mu (0: plain SGD, no momentum buffer used).
  double momentum = 0.0;
  /// L2 penalty lambda added to the gradient as lambda * x.
  double weight_decay = 0.0;
  /// Nesterov momentum (needs momentum > 0, as in PyTorch).
  bool nesterov = false;
};

/// Applies d = g + lambda x; buf = mu buf + d (buf = d at the first step); d = nesterov ? d + mu buf : buf;
/// x -= lr d to every element of every replica, in float, like PyTorch's CPU kernels.
class Sgd {
 public:
  /// Throws ValueError on a negative or non-finite hyper-parameter or Nesterov without momentum.
  explicit Sgd(SgdConfig config, unsigned threads = 1);

  /// The hyper-parameters.
  const SgdConfig& config() const noexcept { return config_; }
  /// Steps taken since construction or reset(); the first one initialises the momentum buffers.
  std::size_t steps() const noexcept { return steps_; }
  /// Forgets the momentum: the next step overwrites the buffers instead of decaying them.
  void reset() noexcept { steps_ = 0; }

  /// One step with learning rate `lr` (rounded to float, as PyTorch does for float parameters); `momentum` is
  /// ignored when config().momentum is 0. Throws ShapeError when the views differ in shape.
  void step(double lr, ReplicaView params, ConstReplicaView grads, ReplicaView momentum);

 private:
  SgdConfig config_;
  unsigned threads_;
  std::size_t steps_ = 0;
};

}  // namespace dbench::sim
