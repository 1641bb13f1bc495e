#include "runtime/worker.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstring>
#include <future>
#include <limits>
#include <optional>
#include <stdexcept>

#include "core/errors.hpp"
#include "core/replica_model.hpp"
#include "core/replica_store.hpp"
#include "core/sgd.hpp"
#include "core/shared_momentum.hpp"
#include "core/step.hpp"
#include "models/augment.hpp"
#include "models/rng.hpp"
#include "runtime/errors.hpp"
#include "runtime/gossip.hpp"
#include "runtime/timed_communicator.hpp"
#include "runtime/worker_run.hpp"

namespace dbench::runtime {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

/// The simulator's replica model of `spec` for one replica, named from the runtime's side when unavailable.
std::unique_ptr<core::ReplicaModel> make_net(const models::ModelSpec& spec) {
  try {
    return core::make_replica_model(spec, 1);
  } catch (const std::invalid_argument&) {
    throw core::ValueError(
        core::RunInput::model,
        fmt::format("'{}' cannot run on dbench train's workers yet: they run the simulator's "
                    "replica models (mlp, and lenet where built with LibTorch)",
                    spec.name));
  }
}

/// MPI tags are at least 15 bits: iterations wrap (messages between two workers never overtake each other).
int tag_of(std::int64_t iteration) {
  return static_cast<int>(iteration % 32768);
}

class Worker final : public core::ScheduleReplicas, public core::StepEngine {
 public:
  Worker(const core::NumericsSpec& spec, const models::Dataset& train, const models::Dataset& test,
         Communicator& comm, const WorkerOptions& options)
      : spec_(spec),
        comm_(comm),
        options_(options),
        rank_(comm.rank()),
        workers_(comm.size()),
        net_(make_net(spec.model)),
        store_(1, net_->layout()),
        sgd_(spec.sgd, store_.layout(), 1),
        views_(train, spec.augment_copies, spec.seed),
        partition_(models::augmented_labels(train, views_),
                   models::PartitionSpec{spec.workers, spec.partition, spec.dirichlet_alpha, spec.seed}),
        sampler_(partition_, rank_, spec.batch_per_worker),
        plans_(rank_, workers_) {
    keep_shard(train);
    for (const auto& tensor : store_.layout().tensors()) {
      tensor_names_.push_back(tensor.name);
    }
    const auto order = core::evaluation_order(test.size, spec.seed);
    const std::int64_t eval_count =
        spec.eval_samples > 0 ? std::min(spec.eval_samples, test.size) : test.size;
    replica_eval_count_ = static_cast<std::size_t>(std::min(spec.replica_eval_samples, eval_count));
    models::gather(test, std::span<const std::int64_t>(order.data(), static_cast<std::size_t>(eval_count)),
                   eval_images_, eval_labels_);
    const auto batch = static_cast<std::size_t>(spec.batch_per_worker);
    inputs_.resize(batch * net_->inputs());
    labels_.resize(batch);
    // Every worker draws the same initial parameters from the same seed as the simulator's replica 0.
    net_->init(store_.replica(0), models::derive_seed(spec.seed, {0x1417}));
    if (spec.shared_momentum && spec.sgd.momentum != 0.0) {
      shared_.emplace(spec.sgd, store_.replica(0));
    }
  }

  TrainResult run(topology::GraphPolicy& policy, TrainObserver& observer) {
    const auto start = Clock::now();
    core::ScheduleProgress from;
    if (options_.resume) {
      resume(from, observer);
    }
    const std::int64_t t0 = from.iterations_done;
    WorkerEvents events(rank_, observer, [&](const core::ScheduleProgress& progress) {
      const std::int64_t done = progress.iterations_done;
      if (options_.checkpoint_every > 0 &&
          (done % options_.checkpoint_every == 0 || done == spec_.iterations)) {
        checkpoint(progress, observer);
      }
    });
    const core::ScheduleProgress progress =
        core::run_schedule(spec_.iterations, spec_.eval_every, policy, *this, events, std::move(from));
    TrainResult result =
        finish_run(comm_, workers_, spec_.batch_per_worker, progress, t0, trace_, observer, start);
    result.parameters = static_cast<std::int64_t>(store_.param_count());
    return result;
  }

  void begin_iteration(std::int64_t t) override {
    if (rank_ == options_.kill_rank && t == options_.kill_iteration) {
      // Fault injection: die as abruptly as a crashed node would, mid-run, without a word to the peers.
      std::raise(SIGKILL);
    }
  }

  void measure() override { measure_replicas(); }

  void step(std::int64_t t, const topology::ScheduleStep& step, bool measure) override {
    trace_.push_back(iterate(t, step, measure));
  }

  double train_loss() const override { return last_train_loss_; }

  core::MetricsRow metrics() override { return evaluate(); }

  std::span<const float> params() const { return store_.replica(0); }

  /// The parameter count.
  std::size_t parameters() const { return store_.param_count(); }

  /// Iteration t's local step alone (no communication but the loss's all-reduce), untraced.
  void local_step_alone(std::int64_t t) {
    last_lr_ = spec_.lr.at(t);
    stats_ = {};
    gather_batch(t);
    fused_local_step();
    share_loss();
  }

  /// local_step_alone without the all-reduce of the loss: this worker's own compute.
  void local_compute(std::int64_t t) {
    last_lr_ = spec_.lr.at(t);
    stats_ = {};
    gather_batch(t);
    fused_local_step();
  }

  /// Iteration t as step() runs it, untraced.
  void iterate_untraced(std::int64_t t, const topology::ScheduleStep& step) { iterate(t, step, false); }

 private:
  /// Keeps only the images this worker's shard views (the full set is not needed after that): each once,
  /// however many of its views the shard holds, so memory does not grow with train.augment_copies. A set
  /// whose samples are computed keeps only the labels.
  void keep_shard(const models::Dataset& train) {
    position_.assign(static_cast<std::size_t>(train.size), -1);
    shard_images_.clear();
    shard_labels_.clear();
    for (const std::int64_t sample : partition_.shard(rank_)) {
      const auto image = static_cast<std::size_t>(views_.image_of(sample));
      if (position_[image] >= 0) {
        continue;
      }
      position_[image] = static_cast<std::int64_t>(shard_labels_.size());
      if (train.stored()) {
        const auto pixels = train.image(static_cast<std::int64_t>(image));
        shard_images_.insert(shard_images_.end(), pixels.begin(), pixels.end());
      }
      shard_labels_.push_back(train.labels[image]);
    }
    shard_images_.shrink_to_fit();
  }

  void gather_batch(std::int64_t t) {
    const std::size_t in = net_->inputs();
    const auto indices = sampler_.batch(t);
    for (std::size_t b = 0; b < indices.size(); ++b) {
      const std::int64_t sample = indices[b];
      const auto k = static_cast<std::size_t>(position_[static_cast<std::size_t>(views_.image_of(sample))]);
      views_.write(sample, views_.computed() ? nullptr : &shard_images_[k * in], &inputs_[b * in]);
      labels_[b] = shard_labels_[k];
    }
  }

  void mix_into(const GossipPlan& plan, std::span<const float> self, std::span<float> out) {
    mix_received(plan, self, recv_, out, options_.threads);
  }

  /// The local SGD step on this iteration's batch, fused where the model can (as the simulator does it).
  void fused_local_step() {
    if (shared_) {
      shared_->local_step(last_lr_);
    }
    const auto batch = static_cast<std::size_t>(spec_.batch_per_worker);
    if (!net_->train_sgd_step(store_.params(), core::contiguous_batches(inputs_, labels_, batch), batch, sgd_,
                              last_lr_, store_.momentum(), std::span(&stats_, 1), {})) {
      net_->train_step(store_.params(), inputs_, labels_, batch, store_.grads(), std::span(&stats_, 1));
      sgd_.step(last_lr_, store_.params(), store_.grads(), store_.momentum());
    }
  }

  /// The end of every local step: the mean loss over the workers.
  void share_loss() {
    // Every worker learns every iteration whether any loss is non-finite, so that all stop together.
    std::array<double, 1> loss{static_cast<double>(stats_.loss)};
    comm_.allreduce(std::span<double>(loss), ReduceOp::sum);
    // Every worker holds the same mean: a non-finite one stops them all in the driver, together.
    last_train_loss_ = loss[0] / static_cast<double>(workers_);
  }

  void all_reduce_step(std::int64_t /*t*/) override {
    // Centralized: the mean gradient.
    const auto batch = static_cast<std::size_t>(spec_.batch_per_worker);
    net_->train_step(store_.params(), inputs_, labels_, batch, store_.grads(), std::span(&stats_, 1));
    comm_.count([&] { average_over_workers(comm_.inner(), store_.grads().row(0), sum_); });
    sgd_.step(last_lr_, store_.params(), store_.grads(), store_.momentum());
    share_loss();
  }

  void local_step(std::int64_t t, const topology::ScheduleStep& step, bool /*measure*/) override {
    if (!options_.overlap || step.communication != topology::Communication::gossip) {
      fused_local_step();
    } else {
      // Overlap: the exchange of x_t runs on a helper thread while the local step computes from x_t; only the
      // wait that the computation did not hide counts as communication.
      const GossipPlan& plan = plans_(*step.graph);
      const auto x = store_.replica(0);
      snapshot_.assign(x.begin(), x.end());
      auto pending = std::async(
          std::launch::async, [&] { exchange_parameters(comm_.inner(), plan, snapshot_, recv_, tag_of(t)); });
      fused_local_step();
      comm_.wait([&] { pending.get(); });
    }
    share_loss();
  }

  void global_average(bool measured) override {
    if (measured) {
      // The measurement has just all-reduced these parameters (sum_): their mean, without a second one.
      comm_.count([&] { take_mean(store_.replica(0), sum_, workers_); });
    } else {
      // Periodic global averaging: every worker takes the mean of the parameters.
      comm_.count([&] { average_over_workers(comm_.inner(), store_.replica(0), sum_); });
    }
  }

  bool shares_momentum() const override { return shared_.has_value(); }

  void share_momentum() override {
    const auto shared = shared_->after_average(store_.replica(0));
    std::copy(shared.begin(), shared.end(), store_.momentum().row(0).begin());
  }

  void gossip(std::int64_t t, const topology::Graph& graph) override {
    const GossipPlan& plan = plans_(graph);
    const auto x = store_.replica(0);
    auto mixed = store_.mix_target().row(0);
    // The mixing counts as communication, as the simulator's exchange includes the receiver's pass.
    if (!options_.overlap) {
      comm_.count([&] {
        exchange_parameters(comm_.inner(), plan, x, recv_, tag_of(t));
        mix_into(plan, x, mixed);
      });
    } else {
      // x_{t+1} = sum_j W_ij x_j,t + (x_i after the local step - x_i,t).
      comm_.count([&] {
        mix_into(plan, snapshot_, mixed);
        for (std::size_t j = 0; j < mixed.size(); ++j) {
          mixed[j] += x[j] - snapshot_[j];
        }
      });
    }
    store_.swap_mixed();
  }

  StepTrace iterate(std::int64_t t, const topology::ScheduleStep& step, bool measure) {
    const auto begin = Clock::now();
    const CommCounters before = comm_.counters();
    const double comm_before = comm_.seconds();
    StepTrace trace;
    trace.iteration = t;
    last_lr_ = spec_.lr.at(t);
    trace.lr = last_lr_;
    stats_ = {};
    gather_batch(t);
    core::run_step(*this, t, step, measure);
    trace.loss = stats_.loss;
    done_ = t + 1;
    trace.total_s = seconds_since(begin);
    trace.comm_s = comm_.seconds() - comm_before;
    trace.compute_s = trace.total_s - trace.comm_s;
    trace.bytes_sent = comm_.counters().bytes_sent - before.bytes_sent;
    return trace;
  }

  /// Replica statistics across the workers, after the local step and before mixing (as the simulator).
  void measure_replicas() {
    const auto x = store_.replica(0);
    const auto n = static_cast<double>(workers_);
    sum_.assign(x.begin(), x.end());
    comm_.allreduce(std::span<double>(sum_), ReduceOp::sum);
    const auto& tensors = store_.layout().tensors();
    const std::size_t count = tensors.size();
    // Per tensor: [norm, norm^2, squared distance to the mean].
    std::vector<double> local(3 * count, 0.0);
    for (std::size_t t = 0; t < count; ++t) {
      double sq = 0.0;
      double dist = 0.0;
      for (std::size_t j = tensors[t].offset; j < tensors[t].offset + tensors[t].elements; ++j) {
        const auto v = static_cast<double>(x[j]);
        const double d = v - sum_[j] / n;
        sq += v * v;
        dist += d * d;
      }
      const double norm = std::sqrt(sq);
      local[t] = norm;
      local[count + t] = norm * norm;
      local[2 * count + t] = dist;
    }
    measured_ = WorkerStatistics::gather(comm_, tensor_names_, std::move(local));
  }

  /// The metrics row of the current state: the last measured replica statistics, the averaged model on the
  /// evaluation set (each worker evaluates a slice) and every replica on the fixed subset.
  core::MetricsRow evaluate() {
    core::MetricsRow row =
        measured_.row(done_, static_cast<double>(done_) / static_cast<double>(sampler_.batches_per_epoch()),
                      last_lr_, last_train_loss_);
    const auto x = store_.replica(0);
    const auto n = static_cast<double>(workers_);
    sum_.assign(x.begin(), x.end());
    comm_.allreduce(std::span<double>(sum_), ReduceOp::sum);
    std::vector<float> average(sum_.size());
    for (std::size_t j = 0; j < average.size(); ++j) {
      average[j] = static_cast<float>(sum_[j] / n);
    }
    const std::size_t in = net_->inputs();
    const std::size_t samples = eval_labels_.size();
    const auto [s0, s1] = evaluation_slice(samples, rank_, workers_);
    double slice_loss = 0.0;
    double slice_correct = 0.0;
    if (s1 > s0) {
      const core::EvalResult avg =
          net_->evaluate(average, std::span<const float>(eval_images_).subspan(s0 * in, (s1 - s0) * in),
                         std::span<const std::int32_t>(eval_labels_).subspan(s0, s1 - s0));
      slice_loss = avg.loss * static_cast<double>(avg.samples);
      slice_correct = static_cast<double>(avg.correct);
    }
    const core::EvalResult mine =
        net_->evaluate(x, std::span<const float>(eval_images_.data(), replica_eval_count_ * in),
                       std::span<const std::int32_t>(eval_labels_.data(), replica_eval_count_));
    combine_evaluations(comm_, slice_loss, slice_correct, samples, mine.accuracy(), mine.loss, row);
    return row;
  }

  /// What the graph policy sees: the last measured replica statistics (the simulator's observation()).
  topology::PolicyObservation observation() override {
    return measured_.observation(done_, last_train_loss_);
  }

  void checkpoint(const core::ScheduleProgress& progress, const TrainObserver& observer) {
    WorkerState s;
    s.run_key = options_.run_key;
    s.rank = rank_;
    s.workers = workers_;
    s.iterations_done = progress.iterations_done;
    s.sgd_steps = sgd_.steps();
    s.last_lr = last_lr_;
    s.last_train_loss = last_train_loss_;
    s.best_test_accuracy = progress.best_test_accuracy;
    s.final_test_accuracy = progress.final_test_accuracy;
    s.final_test_loss = progress.final_test_loss;
    s.observations = progress.observations;
    const auto x = store_.replica(0);
    s.params.assign(x.begin(), x.end());
    const auto m = std::as_const(store_).momentum().row(0);
    s.momentum.assign(m.begin(), m.end());
    if (shared_) {
      s.shared_previous.assign(shared_->previous().begin(), shared_->previous().end());
      s.shared_momentum.assign(shared_->momentum().begin(), shared_->momentum().end());
      s.shared_lrs.assign(shared_->lrs().begin(), shared_->lrs().end());
    }
    s.trace = trace_;
    if (rank_ == 0) {
      s.observer_state = observer.checkpoint_state();
    }
    write_checkpoint_part(options_.checkpoint_dir, progress.iterations_done, s);
    // Published only once every worker's part is on disk: an interrupted write leaves the previous one.
    comm_.barrier();
    if (rank_ == 0) {
      publish_checkpoint(options_.checkpoint_dir, progress.iterations_done);
    }
  }

  /// Loads this worker's part of the latest checkpoint. Every worker then learns whether every part loaded,
  /// so that a damaged part ends the run at once, named by the worker that read it, instead of leaving the
  /// others waiting for that worker until the peer timeout.
  void resume(core::ScheduleProgress& from, TrainObserver& observer) {
    std::string problem;
    try {
      const WorkerState state =
          read_checkpoint(options_.checkpoint_dir, rank_, {store_.param_count(), spec_.iterations});
      restore(state);
      from.iterations_done = state.iterations_done;
      from.observations = state.observations;
      from.best_test_accuracy = state.best_test_accuracy;
      from.final_test_accuracy = state.final_test_accuracy;
      from.final_test_loss = state.final_test_loss;
      if (rank_ == 0) {
        try {
          observer.restore_state(state.observer_state);
        } catch (const std::invalid_argument& e) {
          throw CheckpointError(fmt::format(
              "{}: damaged checkpoint (observer_state: {}); resume from another one or start over",
              state.file.string(), e.what()));
        }
      }
    } catch (const std::exception& e) {
      problem = e.what();  // any failure: the peers must hear of it either way
    }
    // The lowest rank whose part failed, or the worker count; outside the timed calls (not an iteration's).
    std::array<double, 1> first_failed{problem.empty() ? static_cast<double>(workers_) : rank_};
    comm_.inner().allreduce(first_failed, ReduceOp::min);
    if (!problem.empty()) {
      throw CheckpointError(problem);
    }
    if (first_failed[0] < workers_) {
      throw CheckpointError(fmt::format("{}: worker {} could not resume from its part of the checkpoint",
                                        options_.checkpoint_dir.string(), static_cast<int>(first_failed[0])));
    }
  }

  void restore(const WorkerState& s) {
    if (s.run_key != options_.run_key) {
      throw CheckpointError(
          fmt::format("{}: the checkpoint was written by a different config; resume with the "
                      "same config and --set overrides, or start over",
                      options_.checkpoint_dir.string()));
    }
    if (s.workers != workers_ || s.params.size() != store_.param_count() ||
        s.momentum.size() != store_.param_count()) {
      throw CheckpointError(fmt::format(
          "{}: the checkpoint holds {} workers of {} parameters, this run {} of {}",
          options_.checkpoint_dir.string(), s.workers, s.params.size(), workers_, store_.param_count()));
    }
    std::copy(s.params.begin(), s.params.end(), store_.replica(0).begin());
    std::copy(s.momentum.begin(), s.momentum.end(), store_.momentum().row(0).begin());
    if (shared_.has_value() != !s.shared_previous.empty()) {
      throw CheckpointError(
          fmt::format("{}: the checkpoint was written {} shared momentum; resume with the "
                      "same config",
                      options_.checkpoint_dir.string(), shared_ ? "without" : "with"));
    }
    if (shared_) {
      if (s.shared_previous.size() != store_.param_count() ||
          s.shared_momentum.size() != store_.param_count()) {
        throw CheckpointError(fmt::format(
            "{}: damaged checkpoint (shared_momentum: {} and {} values where the "
            "model has {} parameters); resume from another one or start over",
            s.file.string(), s.shared_previous.size(), s.shared_momentum.size(), store_.param_count()));
      }
      shared_->restore(s.shared_previous, s.shared_momentum, s.shared_lrs);
    }
    sgd_.reset();
    for (std::uint64_t k = 0; k < s.sgd_steps; ++k) {  // at most iterations_done (read_checkpoint)
      sgd_.finish_step();
    }
    last_lr_ = s.last_lr;
    last_train_loss_ = s.last_train_loss;
    done_ = s.iterations_done;
    // One row per iteration done, in order: the rows of every worker are joined by index at the end.
    bool in_order = s.trace.size() == static_cast<std::size_t>(done_);
    for (std::size_t k = 0; in_order && k < s.trace.size(); ++k) {
      in_order = s.trace[k].iteration == static_cast<std::int64_t>(k);
    }
    if (!in_order) {
      throw CheckpointError(
          fmt::format("{}: damaged checkpoint (trace: not one row per iteration of the {} "
                      "done); resume from another one or start over",
                      s.file.string(), done_));
    }
    trace_ = s.trace;
    if (s.observations.empty()) {
      throw CheckpointError(
          fmt::format("{}: the checkpoint holds no policy observation", options_.checkpoint_dir.string()));
    }
  }

  core::NumericsSpec spec_;
  TimedCommunicator comm_;  // the communication phase's time, for the trace
  WorkerOptions options_;
  int rank_;
  int workers_;
  std::unique_ptr<core::ReplicaModel> net_;
  std::optional<core::SharedMomentum> shared_;
  core::ReplicaStore store_;
  core::Sgd sgd_;
  models::Augmentation views_;  // the training set: the data set's images, each as augment_copies views
  models::Partition partition_;
  models::BatchSampler sampler_;
  std::vector<std::int64_t> position_;  // image index -> position among the kept images
  std::vector<float> shard_images_;
  std::vector<std::int32_t> shard_labels_;
  std::vector<float> inputs_;
  std::vector<std::int32_t> labels_;
  std::vector<float> eval_images_;
  std::vector<std::int32_t> eval_labels_;
  std::size_t replica_eval_count_ = 0;
  GossipPlans plans_;
  std::vector<float> recv_;
  std::vector<float> snapshot_;
  std::vector<double> sum_;
  core::BatchStats stats_;  // the local step's
  std::vector<std::string> tensor_names_;
  WorkerStatistics measured_;  // the last measured replica statistics
  std::vector<StepTrace> trace_;
  std::int64_t done_ = 0;
  double last_lr_ = 0.0;
  double last_train_loss_ = std::numeric_limits<double>::quiet_NaN();
};

/// The bench's spec: evaluations are never run, so one sample stands for the evaluation set.
core::NumericsSpec bench_spec(core::NumericsSpec spec) {
  spec.eval_samples = 1;
  spec.replica_eval_samples = 1;
  return spec;
}

}  // namespace

struct WorkerBench::Impl {
  // Built in place: the worker's sampler refers to its partition, so a worker must not move.
  Impl(const core::NumericsSpec& spec, const models::Dataset& train, Communicator& comm)
      : worker(bench_spec(spec), train, train, comm, WorkerOptions{}) {}
  Worker worker;
};

WorkerBench::WorkerBench(const core::NumericsSpec& spec, const models::Dataset& train, Communicator& comm)
    : impl_(std::make_unique<Impl>(spec, train, comm)) {}

WorkerBench::~WorkerBench() = default;

std::int64_t WorkerBench::parameters() const {
  return static_cast<std::int64_t>(impl_->worker.parameters());
}

void WorkerBench::local_step(std::int64_t t) {
  impl_->worker.local_step_alone(t);
}

void WorkerBench::local_compute(std::int64_t t) {
  impl_->worker.local_compute(t);
}

void WorkerBench::iterate(std::int64_t t, const topology::ScheduleStep& step) {
  impl_->worker.iterate_untraced(t, step);
}

TrainResult train_worker(const core::NumericsSpec& spec, const models::Dataset& train,
                         const models::Dataset& test, topology::GraphPolicy& policy, Communicator& comm,
                         const WorkerOptions& options, TrainObserver& observer) {
  if (spec.workers != comm.size()) {
    throw WorkerCountError(spec.workers, comm.size());
  }
  const auto in = std::int64_t{spec.model.input_channels} * spec.model.input_height * spec.model.input_width;
  if (in != train.sample_elements() || spec.model.classes != train.classes) {
    throw core::ShapeError(core::RunInput::model,
                           fmt::format("an input of {} features and {} classes does not fit the data set ({} "
                                       "features, {} classes)",
                                       in, spec.model.classes, train.sample_elements(), train.classes));
  }
  Worker worker(spec, train, test, comm, options);
  return worker.run(policy, observer);
}

}  // namespace dbench::runtime
