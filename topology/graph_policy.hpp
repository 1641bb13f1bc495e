// Graph policies: which communication each iteration uses. The realized sequence is the schedule that both
// engines execute and that results directories record.
#pragma once

#include <cstdint>
#include <limits>
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
};

/// What an iteration communicates after (or, for the gradients, within) its local step.
enum class Communication {
  none,            ///< local steps: nothing is sent (the identity graph)
  all_reduce,      ///< centralized SGD: the gradients are all-reduced before the step
  global_average,  ///< the parameters are averaged over every replica after the step
  gossip,          ///< one gossip round with the graph's mixing matrix after the step
};

/// One iteration's communication: gossip with a mixing matrix, an all-reduce of the gradients (centralized
/// SGD), a global average of the parameters after the local step (periodic global averaging), or none.
struct ScheduleStep {
  std::string name;  ///< what schedule.csv records, e.g. "exponential" or "one-peer-exponential/3"
  /// The graph of gossip and of local steps (the identity); nullptr for the all-reduces. Owned by the policy.
  const Graph* graph = nullptr;
  Communication communication = Communication::none;
  /// The policy wants the replica statistics of this iteration (after the local step, before the exchange).
  bool observe = false;
  /// The measured signal the policy acted on when it chose this step (Ada's spread ratio); NaN when it acted
  /// on none.
  double signal = std::numeric_limits<double>::quiet_NaN();
};

/// Maps (iteration, latest observation) to the communication of that iteration.
class GraphPolicy {
 public:
  virtual ~GraphPolicy() = default;
  /// The communication of iteration t (0-based); `latest` is null before the first measurement.
  virtual ScheduleStep graph_for(std::int64_t iteration, const PolicyObservation* latest) = 0;
  /// How the policy is named in reports, e.g. "exponential" or "allreduce".
  virtual std::string name() const = 0;
};

/// Centralized training: every iteration all-reduces the gradients.
class AllReducePolicy final : public GraphPolicy {
 public:
  ScheduleStep graph_for(std::int64_t, const PolicyObservation*) override {
    return {"allreduce", nullptr, Communication::all_reduce};
  }
  std::string name() const override { return "allreduce"; }
};

/// Every iteration averages the parameters globally after the local step: D-PSGD on the complete graph
/// (W = 11^T / n) at the cost of one all-reduce; momentum stays local.
class GlobalAveragePolicy final : public GraphPolicy {
 public:
  ScheduleStep graph_for(std::int64_t, const PolicyObservation*) override {
    ScheduleStep step;
    step.name = "global-average";
    step.communication = Communication::global_average;
    return step;
  }
  std::string name() const override { return "global-average"; }
};

/// No communication: every replica takes its local step alone (local SGD between global averages). Its graph
/// is the identity W = I, which no engine sends a message for.
class LocalPolicy final : public GraphPolicy {
 public:
  /// Replicas 1 and up.
  explicit LocalPolicy(int nodes);
  ScheduleStep graph_for(std::int64_t, const PolicyObservation*) override {
    return {"local", &identity_, Communication::none};
  }
  std::string name() const override { return "local"; }
  /// The identity on the replicas.
  const Graph& graph() const noexcept { return identity_; }

 private:
  Graph identity_;
};

/// Whether a step sends anything: an all-reduce does, gossip does, a local step does not.
bool communicates(const ScheduleStep& step) noexcept;

/// The communication of gossip on `graph`: gossip, or none on a graph without an edge (the identity).
Communication gossip_on(const Graph& graph) noexcept;

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
  /// `between` on the other iterations (gossip, or local steps); throws GraphError (GraphInput::period) when
  /// every < 1.
  PeriodicAveragePolicy(std::unique_ptr<GraphPolicy> between, std::int64_t every);
  /// Gossip on `sequence` between the averages.
  PeriodicAveragePolicy(GraphSequence sequence, std::int64_t every);
  ScheduleStep graph_for(std::int64_t iteration, const PolicyObservation* latest) override;
  std::string name() const override;

 private:
  std::unique_ptr<GraphPolicy> between_;
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

/// One rung of Ada's ladder: `between` on the iterations between global averages, and a global average of
/// the parameters every `period` iterations (period 1: every iteration, and no `between`).
struct AdaRung {
  std::string name;                      ///< as the ladder names it, e.g. "local:4" or "global-average"
  std::unique_ptr<GraphPolicy> between;  ///< null when period is 1
  std::int64_t period = 1;
};

/// Ada's knobs; the defaults are the documented ones.
struct AdaOptions {
  /// Band of the spread ratio (the replicas' consensus distance before a global average over the spread one
  /// local step creates from a common point): above `high` Ada goes one rung denser, below `low` (for
  /// `patience` consecutive measurements) one rung sparser.
  double low = 2.5;
  double high = 5.0;
  /// Global averages between two measurements of the one-step spread (a period of one iteration).
  std::int64_t probe_every = 8;
  std::int64_t min_dwell = 0;  ///< iterations on a rung before Ada may leave it
  int patience = 2;            ///< consecutive measurements below `low` before going sparser (hysteresis)
  int start_rung = 0;          ///< the rung of iteration 0 (0: the sparsest)
};

/// Ada: decentralized SGD that chooses, while training, how much the replicas communicate. Its ladder runs
/// from sparse (local steps with a rare global average, or sparse gossip) to dense (a global average every
/// iteration). Where a rung averages globally, Ada measures there, where the average is computed anyway: the
/// consensus distance the replicas built since the last average, D_H. It compares it with D_1, the spread
/// one local step creates from a common point, which it measures by averaging twice in a row every
/// `probe_every` averages. The ratio D_H / D_1 is 1 when H local steps spread the replicas no more than one
/// does, and it grows as they drift apart; it means the same at every scale, because D_1 grows with the
/// shards' disagreement exactly as D_H does. Above the band Ada goes denser, below it sparser.
class AdaPolicy final : public GraphPolicy {
 public:
  /// `ladder` sparse to dense, at least one rung; throws GraphError on the input at fault.
  AdaPolicy(std::vector<AdaRung> ladder, AdaOptions options);
  ScheduleStep graph_for(std::int64_t iteration, const PolicyObservation* latest) override;
  std::string name() const override { return "ada"; }
  /// The rung in use.
  int rung() const noexcept { return rung_; }
  /// Its name as the ladder gives it.
  const std::string& rung_name() const noexcept { return ladder_[static_cast<std::size_t>(rung_)].name; }
  /// The last spread ratio D_H / D_1 Ada acted on (NaN before the first).
  double last_ratio() const noexcept { return last_ratio_; }
  /// The one-step spread D_1 Ada compares with (NaN before the first probe).
  double reference_spread() const noexcept { return reference_; }

 private:
  /// Takes a measurement Ada asked for; true when it compared it with the reference.
  bool observe(const PolicyObservation& seen);
  void move(int rung, std::int64_t iteration);
  ScheduleStep next_step(std::int64_t iteration, const PolicyObservation* latest);

  std::vector<AdaRung> ladder_;
  AdaOptions options_;
  int rung_;
  std::int64_t rung_since_ = 0;
  std::int64_t last_seen_ = 0;
  std::int64_t last_average_ = -1;  ///< the last iteration that averaged globally (-1: the common start)
  std::int64_t averages_ = 0;       ///< global averages since the last probe
  bool probed_ = false;             ///< whether an average of period 1 has been scheduled
  /// The measurement the next observation answers: its iteration (done count) and the local steps it covers.
  std::int64_t pending_iteration_ = -1;
  std::int64_t pending_steps_ = 0;
  double reference_;
  double last_ratio_;
  int below_ = 0;
};

}  // namespace dbench::topology
