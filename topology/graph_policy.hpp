// Graph policies: which communication each iteration uses. The realized sequence is the schedule that both
// engines execute and that results directories record.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "topology/graph.hpp"

namespace dbench::topology {

/// The latest replica statistics a policy may react to (plain numbers, measured by whichever engine runs).
struct PolicyObservation {
  std::int64_t iteration = 0;       ///< iterations completed when measured
  double consensus_distance = 0.0;  ///< mean over replicas of ||x_i - x_bar||^2
  double norm_variance = 0.0;       ///< sum over tensors of the cross-replica variance of the tensor's norm
  double train_loss = 0.0;          ///< mean training loss over replicas at that iteration
  double mean_norm_sq = 0.0;        ///< mean over replicas of ||x_i||^2, the scale of consensus_distance

  /// consensus_distance / mean ||x_i||^2: how far replicas disagree relative to their size (0 at consensus).
  double relative_consensus() const { return mean_norm_sq > 0.0 ? consensus_distance / mean_norm_sq : 0.0; }
};

/// One iteration's communication: gossip with a mixing matrix, an all-reduce of the gradients (centralized
/// SGD), or a global average of the parameters after the local step (periodic global averaging).
struct ScheduleStep {
  std::string name;  ///< what schedule.csv records, e.g. "exponential" or "one-peer-exponential/3"
  const Graph* graph = nullptr;     ///< nullptr: an all-reduce; owned by the policy
  bool average_parameters = false;  ///< with graph == nullptr: all-reduce the parameters, not the gradients
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

/// Every iteration averages the parameters globally after the local step: D-PSGD on the complete graph
/// (W = 11^T / n) at the cost of one all-reduce; momentum stays local.
class GlobalAveragePolicy final : public GraphPolicy {
 public:
  ScheduleStep graph_for(std::int64_t, const PolicyObservation*) override {
    ScheduleStep step;
    step.name = "global-average";
    step.average_parameters = true;
    return step;
  }
  std::string name() const override { return "global-average"; }
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

/// Gossip on a static graph or family, with a global average of the parameters every `every` iterations
/// (periodic global averaging, as in Chen et al. 2021 "Accelerating gossip SGD with periodic global
/// averaging").
class PeriodicAveragePolicy final : public GraphPolicy {
 public:
  /// Throws GraphError (GraphInput::period) when every < 1.
  PeriodicAveragePolicy(GraphSequence sequence, std::int64_t every);
  ScheduleStep graph_for(std::int64_t iteration, const PolicyObservation* latest) override;
  std::string name() const override;

 private:
  SequencePolicy gossip_;
  std::int64_t every_;
};

/// A fixed switching schedule: stage s runs from iteration starts[s] (starts[0] = 0) until the next start,
/// e.g. dense-to-sparse (exponential, then one-peer exponential) or sparse-to-dense.
class SwitchPolicy final : public GraphPolicy {
 public:
  /// Stages in order; starts strictly increasing from 0 (GraphError on GraphInput::stage_starts otherwise).
  /// A null stage is an all-reduce of the gradients.
  SwitchPolicy(std::vector<std::unique_ptr<GraphPolicy>> stages, std::vector<std::int64_t> starts);
  ScheduleStep graph_for(std::int64_t iteration, const PolicyObservation* latest) override;
  std::string name() const override;

 private:
  std::vector<std::unique_ptr<GraphPolicy>> stages_;
  std::vector<std::int64_t> starts_;
};

/// Ada's knobs; the defaults are the documented ones.
struct AdaOptions {
  /// Relative consensus distance band: above `high` Ada goes one rung denser, below `low` (for `patience`
  /// consecutive checks) one rung sparser.
  double low = 1e-3;
  double high = 8e-3;
  std::int64_t check_every = 10;  ///< iterations between observations
  std::int64_t min_dwell = 20;    ///< iterations on a rung before Ada may leave it
  int patience = 3;               ///< consecutive checks below `low` before going sparser (hysteresis)
  int start_rung = 0;             ///< the rung of iteration 0 (0: the sparsest)
};

/// Ada: decentralized SGD that moves along a ladder of communication policies ordered from sparse to dense
/// (e.g. one-peer exponential, exponential, all-reduce) so that the replicas' relative consensus distance
/// stays in a band: denser when it rises above the band, sparser when it stays below it.
class AdaPolicy final : public GraphPolicy {
 public:
  /// `ladder` sparse to dense, at least one rung; throws GraphError on the input at fault.
  AdaPolicy(std::vector<std::unique_ptr<GraphPolicy>> ladder, AdaOptions options);
  ScheduleStep graph_for(std::int64_t iteration, const PolicyObservation* latest) override;
  std::string name() const override { return "ada"; }
  std::int64_t observe_every() const override { return options_.check_every; }
  /// The rung in use.
  int rung() const noexcept { return rung_; }

 private:
  std::vector<std::unique_ptr<GraphPolicy>> ladder_;
  AdaOptions options_;
  int rung_;
  std::int64_t rung_since_ = 0;
  std::int64_t last_seen_ = -1;
  int below_ = 0;
};

}  // namespace dbench::topology
