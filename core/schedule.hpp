// The one training loop of both engines: a graph policy's schedule executed on replicas, whichever engine
// holds them (virtual replicas in the simulator, one replica per CPU or LibTorch worker), measured and
// reported at the same points.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "topology/graph_policy.hpp"

namespace dbench::core {

/// Where a run stands; what a checkpoint keeps of it and what a resumed run starts from.
struct ScheduleProgress {
  std::int64_t iterations_done = 0;
  /// Every observation given to the policy, in order (the first is the initial state's).
  std::vector<topology::PolicyObservation> observations;
  double final_test_accuracy = 0.0;  ///< the averaged model at the last evaluation
  double final_test_loss = 0.0;      ///< the averaged model at the last evaluation
  double best_test_accuracy = 0.0;   ///< the best evaluation so far
};

/// Per parameter tensor statistics across replicas.
struct TensorMetrics {
  std::string name;
  double norm_mean = 0.0;           ///< mean over replicas of the tensor's L2 norm
  double norm_variance = 0.0;       ///< variance over replicas of that norm
  double consensus_distance = 0.0;  ///< mean over replicas of ||x_i,t - mean_t||^2
};

/// One row of metrics.csv: the state after `iteration` completed iterations.
struct MetricsRow {
  std::int64_t iteration = 0;
  double epoch = 0.0;       ///< samples seen by a replica / its shard size
  double lr = 0.0;          ///< lr of the last iteration
  double train_loss = 0.0;  ///< mean over replicas of the last iteration's batch loss (NaN at iteration 0)
  double test_loss = 0.0;   ///< averaged model
  double test_accuracy = 0.0;
  double consensus_distance = 0.0;  ///< before averaging: mean over replicas of ||x_i - x_bar||^2
  double norm_variance = 0.0;       ///< before averaging: sum over tensors of the norms' variance
  double replica_accuracy_mean = 0.0;
  double replica_accuracy_min = 0.0;
  double replica_accuracy_max = 0.0;
  double replica_loss_mean = 0.0;
  std::vector<TensorMetrics> tensors;
  /// Before averaging: the L2 norm of tensor t of replica i at [i * tensors.size() + t].
  std::vector<double> replica_norms;
};

/// Receives what a run produces, as it is produced.
class NumericsObserver {
 public:
  virtual ~NumericsObserver() = default;
  /// The communication chosen for iteration t.
  virtual void on_schedule(std::int64_t /*iteration*/, const topology::ScheduleStep& /*step*/) {}
  /// A metrics row (iteration 0 is the initial state).
  virtual void on_metrics(const MetricsRow& /*row*/) {}
  /// Iteration t has completed (for progress reporting).
  virtual void on_iteration(std::int64_t /*iteration*/) {}
  /// Iteration `progress.iterations_done - 1` is over and reported: where a checkpoint is taken.
  virtual void on_progress(const ScheduleProgress& /*progress*/) {}
};

/// What the driver needs of an engine's replicas. On a real engine every call is collective: each worker
/// makes the same calls in the same order, and each returns the same values on every worker.
class ScheduleReplicas {
 public:
  virtual ~ScheduleReplicas() = default;
  /// Takes the replica statistics of the current state (the initial one, before the first step).
  virtual void measure() = 0;
  /// Iteration t (0-based): the local step (with the all-reduce of gradients when the step is centralized);
  /// when `measure`, the replica statistics, taken there, after the local step and before the
  /// communication; then the step's gossip round or global average.
  virtual void step(std::int64_t t, const topology::ScheduleStep& step, bool measure) = 0;
  /// Mean over replicas of the last step's batch loss (NaN before the first step).
  virtual double train_loss() const = 0;
  /// What a graph policy sees: the last measured statistics.
  virtual topology::PolicyObservation observation() = 0;
  /// The metrics row: the last measured statistics and evaluations of the current state.
  virtual MetricsRow metrics() = 0;
  /// Called before iteration t's schedule is asked for.
  virtual void begin_iteration(std::int64_t /*t*/) {}
};

/// Runs iterations [from.iterations_done, iterations) of the policy's schedule on the replicas. A fresh run
/// (from.iterations_done == 0) measures and reports the initial state; a resumed one first replays the
/// policy's calls with the observations it saw, so that its state is what it was. Statistics are measured
/// at every evaluation (every eval_every iterations and the last) and at every step the policy marks
/// `observe`. Throws DivergenceError the iteration a training or test loss is not finite.
ScheduleProgress run_schedule(std::int64_t iterations, std::int64_t eval_every, topology::GraphPolicy& policy,
                              ScheduleReplicas& replicas, NumericsObserver& observer,
                              ScheduleProgress from = {});

}  // namespace dbench::core
