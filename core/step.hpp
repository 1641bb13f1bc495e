// The body of one training iteration, written once for every engine: the local step, the measurement where
// the driver asks for one, then the communication the schedule names. Engines supply the parts.
#pragma once

#include <cstdint>

#include "topology/graph_policy.hpp"

namespace dbench::core {

/// The parts of an iteration an engine (the simulator's replicas, a CPU worker, a LibTorch worker) computes
/// and communicates; run_step() calls them in the iteration's order. On a real engine every call is
/// collective, as ScheduleReplicas' are.
class StepEngine {
 public:
  virtual ~StepEngine() = default;
  /// Iteration t's local step with the replica's own gradient (forward, backward, SGD; the fused step where
  /// the model has one, else the separate ones). `step` is the communication that follows, which the engine
  /// may prepare for (where the stepped parameters go, an exchange started early); `measure`: the statistics
  /// are taken between the two.
  virtual void local_step(std::int64_t t, const topology::ScheduleStep& step, bool measure) = 0;
  /// Iteration t's centralized step: forward, backward, the all-reduce of the gradients, the SGD step with
  /// their mean.
  virtual void all_reduce_step(std::int64_t t) = 0;
  /// Takes the replica statistics of the state after the local step.
  virtual void measure() = 0;
  /// Averages the parameters over every replica. `measured`: measure() has just run on these parameters
  /// (an engine may reuse what it summed there).
  virtual void global_average(bool measured) = 0;
  /// Whether every global average rebuilds the shared momentum (share_momentum()).
  virtual bool shares_momentum() const = 0;
  /// After a global average: every replica's momentum becomes the shared momentum of the averaged
  /// parameters.
  virtual void share_momentum() = 0;
  /// One gossip round of iteration t with `graph`'s mixing matrix.
  virtual void gossip(std::int64_t t, const topology::Graph& graph) = 0;
};

/// Iteration t on the engine: the local step (with the gradients' all-reduce when the step is centralized),
/// the replica statistics when `measure` (after the local step, before the communication), then the step's
/// global average (with the shared momentum where the engine keeps one) or gossip round.
void run_step(StepEngine& engine, std::int64_t t, const topology::ScheduleStep& step, bool measure);

}  // namespace dbench::core
