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
#include "core/mixing.hpp"
#include "core/replica_view.hpp"
#include "core/schedule.hpp"
#include "core/sgd.hpp"
#include "models/augment.hpp"
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
  /// Views of every training image (models::Augmentation, drawn with `seed`): the training set is
  /// augment_copies x its images, each view computed when its batch is gathered; 1: the images as they are.
  int augment_copies = 1;
  unsigned threads = 0;  ///< compute threads; 0: every hardware thread (results do not depend on it)
  /// At every global average of the parameters, every replica's momentum becomes the shared momentum rebuilt
  /// from the averaged parameters' displacement (SharedMomentum) instead of staying its own.
  bool shared_momentum = false;
  /// How gossip mixing walks the replica matrix, for benchmarks and tests: the results do not depend on it.
  MixWalk mix_walk = MixWalk::automatic;
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
class VirtualReplicas final : public ScheduleReplicas {
 public:
  /// Builds replicas with a common initialisation; throws on a model the data does not fit.
  VirtualReplicas(const NumericsSpec& spec, const models::Dataset& train, const models::Dataset& test);
  ~VirtualReplicas();
  VirtualReplicas(const VirtualReplicas&) = delete;
  VirtualReplicas& operator=(const VirtualReplicas&) = delete;

  /// Takes the replica statistics of the current state, for the next observation() and metrics().
  void measure() override;
  /// Runs iteration t (0-based) through run_step(): local forward/backward and SGD step, then the
  /// communication `step` names (the all-reduce of the gradients before the SGD step when it is centralized).
  /// When `measure`, replica statistics are taken after the local step and before averaging, and kept for
  /// the next metrics().
  void step(std::int64_t t, const topology::ScheduleStep& step, bool measure) override;
  /// What a graph policy sees of the current state (the replica statistics of the last measured step).
  topology::PolicyObservation observation() override;
  /// The metrics row of the current state (the replica statistics of the last measured step); consumes them.
  MetricsRow metrics() override;
  /// Every replica's parameters, [N, P]. Logically const: while centralized steps keep the replicas identical
  /// only row 0 is stepped, and this first copies it to the other rows.
  ConstReplicaView params() const;
  /// Parameter tensor names in order with their sizes.
  std::vector<std::pair<std::string, std::size_t>> tensors() const;
  /// Number of iterations run.
  std::int64_t iterations_done() const;
  /// Mean training loss over replicas of the last step's batches (NaN before the first step).
  double train_loss() const override;

  /// Wall seconds of the last step()'s parts (zeros before the first step).
  struct StepSeconds {
    /// Batch gather, forward, backward and SGD step, with a centralized step's gradient all-reduce.
    double local = 0.0;
    /// The parameters' communication after the local step: gossip mixing, or the global average.
    double communication = 0.0;
  };
  StepSeconds last_step_seconds() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

/// A fixed, seeded order of the test set: its first k samples are "the first k test samples" of every
/// evaluation, so that replicas, iterations and engines are compared on the same images.
std::vector<std::int64_t> evaluation_order(std::int64_t test_size, std::uint64_t seed);

/// Reads a data set split by its config name (fashion-mnist | cifar10 | synthetic); `dir` empty: the default.
/// `seed` seeds the synthetic task, whose train split has `synthetic_train_samples` samples.
models::Dataset load_dataset(const std::string& name, models::Split split, const std::string& dir,
                             std::uint64_t seed, std::int64_t synthetic_train_samples = 60000);

/// Trains spec.iterations iterations with the policy's schedule, reporting to the observer.
NumericsResult run_numerics(const NumericsSpec& spec, const models::Dataset& train,
                            const models::Dataset& test, topology::GraphPolicy& policy,
                            NumericsObserver& observer);

}  // namespace dbench::core
