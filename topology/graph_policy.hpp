// Graph policies: which communication each iteration uses. The realized sequence is the schedule that both
// engines execute and that results directories record.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "topology/graph.hpp"

namespace dbench::topology {

/// The latest replica statistics a policy may react to (plain numbers, measured by whichever engine runs).
struct PolicyObservation {
  std::int64_t iteration = 0;       ///< iterations completed when measured
  double consensus_distance = 0.0;  ///< mean over replicas of ||x_i - x_bar||^2
  double norm_variance = 0.0;       ///< sum over tensors of the cross-replica variance of the tensor's norm
  double train_loss = 0.0;          ///< mean training loss over replicas at that iteration
};

/// One iteration's communication: gossip with a mixing matrix, or an all-reduce of the gradients.
struct ScheduleStep {
  std::string name;  ///< what schedule.csv records, e.g. "exponential" or "one-peer-exponential/3"
  const Graph* graph = nullptr;  ///< nullptr: all-reduce (centralized SGD); owned by the policy
};

/// Maps (iteration, latest observation) to the communication of that iteration.
class GraphPolicy {
 public:
  virtual ~GraphPolicy() = default;
  /// The communication of iteration t (0-based); `latest` is null before the first measurement.
  virtual ScheduleStep graph_for(std::int64_t iteration, const PolicyObservation* latest) = 0;
  /// How the policy is named in reports, e.g. "exponential" or "allreduce".
  virtual std::string name() const = 0;
  /// Every how many iterations the policy wants an observation (0: it never looks).
  virtual std::int64_t observe_every() const { return 0; }
};

/// Centralized training: every iteration all-reduces the gradients.
class AllReducePolicy final : public GraphPolicy {
 public:
  ScheduleStep graph_for(std::int64_t, const PolicyObservation*) override { return {"allreduce", nullptr}; }
  std::string name() const override { return "allreduce"; }
};

/// A static graph or a time-varying family cycled by iteration (t uses rounds[t mod period]).
class SequencePolicy final : public GraphPolicy {
 public:
  /// Takes the sequence by value; its graphs live as long as the policy.
  explicit SequencePolicy(GraphSequence sequence) : sequence_(std::move(sequence)) {}
  ScheduleStep graph_for(std::int64_t iteration, const PolicyObservation* latest) override;
  std::string name() const override { return sequence_.kind(); }
  /// The cycled sequence.
  const GraphSequence& sequence() const noexcept { return sequence_; }

 private:
  GraphSequence sequence_;
};

}  // namespace dbench::topology
