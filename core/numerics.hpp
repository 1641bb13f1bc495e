// The accuracy half of the simulator: N virtual replicas trained with real SGD on real data and mixed exactly
// as the schedule prescribes, observed every eval_every iterations.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/lr_schedule.hpp"
#include "core/replica_view.hpp"
#include "core/sgd.hpp"
#include "models/dataset.hpp"
#include "models/model_profile.hpp"
#include "models/partition.hpp"
#include "topology/graph_policy.hpp"

namespace dbench::core {

/// What is trained and how, independent of the communication (the policy decides that).
struct NumericsSpec {
  models::ModelSpec model;  ///< input shape and classes must match the data set
  int workers = 16;
  int batch_per_worker = 16;
  std::int64_t iterations = 500;
  LrSchedule lr;
  SgdConfig sgd;
  models::PartitionScheme partition = models::PartitionScheme::iid;
  double dirichlet_alpha = 0.5;
  std::int64_t eval_every = 50;
  std::int64_t eval_samples = 0;            ///< test samples for the averaged model; 0: all
  std::int64_t replica_eval_samples = 256;  ///< fixed test subset for each replica
  std::uint64_t seed = 1;
  unsigned threads = 0;  ///< compute threads; 0: every hardware thread (results do not depend on it)
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
};

/// The outcome of a run.
struct NumericsResult {
  std::int64_t iterations = 0;
  int workers = 0;
  double final_test_accuracy = 0.0;
  double final_test_loss = 0.0;
  double best_test_accuracy = 0.0;
  double wall_seconds = 0.0;
  std::int64_t parameters = 0;  ///< per replica
};

/// N replicas of a model with their data shards, optimizer state and evaluation sets.
class VirtualReplicas {
 public:
  /// Builds replicas with a common initialisation; throws on a model the data does not fit.
  VirtualReplicas(const NumericsSpec& spec, const models::Dataset& train, const models::Dataset& test);
  ~VirtualReplicas();
  VirtualReplicas(const VirtualReplicas&) = delete;
  VirtualReplicas& operator=(const VirtualReplicas&) = delete;

  /// Runs iteration t (0-based): local forward/backward and SGD step, then the communication `step`
  /// (all-reduce of gradients before the step when step.graph is null). When `measure`, replica statistics
  /// are taken after the local step and before averaging, and kept for the next metrics().
  void step(std::int64_t t, const topology::ScheduleStep& step, bool measure);
  /// What a graph policy sees of the current state (the replica statistics of the last measured step).
  topology::PolicyObservation observation();
  /// The metrics row of the current state (the replica statistics of the last measured step); consumes them.
  MetricsRow metrics();
  /// Every replica's parameters, [N, P].
  ConstReplicaView params() const;
  /// Parameter tensor names in order with their sizes.
  std::vector<std::pair<std::string, std::size_t>> tensors() const;
  /// Number of iterations run.
  std::int64_t iterations_done() const;
  /// Mean training loss over replicas of the last step's batches (NaN before the first step).
  double train_loss() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

/// Reads a data set split by its config name (fashion-mnist | cifar10 | synthetic); `dir` empty: the default.
models::Dataset load_dataset(const std::string& name, models::Split split, const std::string& dir,
                             std::uint64_t seed);

/// Trains spec.iterations iterations with the policy's schedule, reporting to the observer.
NumericsResult run_numerics(const NumericsSpec& spec, const models::Dataset& train,
                            const models::Dataset& test, topology::GraphPolicy& policy,
                            NumericsObserver& observer);

}  // namespace dbench::core
