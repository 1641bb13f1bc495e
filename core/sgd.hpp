// The local optimizer step of every replica: SGD with momentum, weight decay and Nesterov, as PyTorch's
// torch.optim.SGD computes it (dampening 0).
#pragma once

#include <cstddef>
#include <span>

#include "core/replica_view.hpp"

namespace dbench::core {

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
  /// Throws ValueError on a negative or non-finite hyper-parameter or Nesterov without momentum. The AVX-512
  /// kernel, used where the CPU has it unless `allow_avx512` is false, gives bitwise the portable kernel's
  /// results.
  explicit Sgd(SgdConfig config, unsigned threads = 1, bool allow_avx512 = true);

  /// The hyper-parameters.
  const SgdConfig& config() const noexcept { return config_; }
  /// Steps taken since construction or reset(); the first one initialises the momentum buffers.
  std::size_t steps() const noexcept { return steps_; }
  /// Forgets the momentum: the next step overwrites the buffers instead of decaying them.
  void reset() noexcept { steps_ = 0; }

  /// One step with learning rate `lr` (rounded to float, as PyTorch does for float parameters); `momentum` is
  /// ignored when config().momentum is 0. Throws ShapeError when the views differ in shape.
  void step(double lr, ReplicaView params, ConstReplicaView grads, ReplicaView momentum);

  /// One replica's part of a step, for passes that apply the step while the gradient is still in cache; after
  /// every replica's part, finish_step(). `buf` may be empty without momentum. `ahead`, empty or of x's size,
  /// is what the caller reads next (the next replica's parameters): its lines are prefetched into the cache
  /// as the step streams, where the AVX-512 kernel runs, so that its first reads do not wait on memory.
  /// Throws ShapeError on size mismatch.
  void step_replica(double lr, std::span<float> x, std::span<const float> g, std::span<float> buf,
                    std::span<const float> ahead = {}) const;
  /// step_replica() with the stepped parameters written to row `row` of `out`, a column-blocked matrix (the
  /// input mix() reads without copying it), instead of back to x, which is only read. Same values as
  /// step_replica(); where the AVX-512 kernel runs, the output's whole vectors go past the caches (for
  /// slices on a 64-byte line) and are fenced before it returns. The step still ends with finish_step().
  /// Throws ShapeError on size mismatch or a row outside `out`.
  void step_replica_into(double lr, std::span<const float> x, std::span<const float> g, std::span<float> buf,
                         BlockedView out, std::size_t row, std::span<const float> ahead = {}) const;
  /// Ends a step made of step_replica() calls (the next one decays the momentum instead of initialising it).
  void finish_step() noexcept { ++steps_; }

 private:
  void apply(double lr, const float* x, float* out, const float* g, float* buf, std::size_t n,
             const float* ahead, bool stream) const;

  SgdConfig config_;
  unsigned threads_;
  bool avx512_;
  std::size_t steps_ = 0;
};

}  // namespace dbench::core
