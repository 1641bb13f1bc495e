#include "core/numerics.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <unordered_map>
#include <utility>

#include "core/aligned_buffer.hpp"
#include "core/collectives.hpp"
#include "core/errors.hpp"
#include "core/mixing.hpp"
#include "core/parallel.hpp"
#include "core/replica_metrics.hpp"
#include "core/replica_model.hpp"
#include "core/replica_store.hpp"
#include "core/shared_momentum.hpp"
#include "core/step.hpp"
#include "models/errors.hpp"
#include "models/rng.hpp"

namespace dbench::core {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point from) {
  return std::chrono::duration<double>(Clock::now() - from).count();
}

/// Whether W = 11^T / n: every node averages everyone with equal weights (the complete graph's weights).
bool is_uniform_complete(const topology::Graph& graph) {
  const auto n = static_cast<std::size_t>(graph.nodes());
  const auto entries = graph.entries();
  if (entries.size() != n * n) {
    return false;
  }
  const double uniform = 1.0 / static_cast<double>(n);
  return std::all_of(entries.begin(), entries.end(),
                     [&](const topology::MixingEntry& e) { return std::abs(e.weight - uniform) <= 1e-12; });
}

}  // namespace

struct VirtualReplicas::State final : StepEngine {
  NumericsSpec spec;
  const models::Dataset& train;
  unsigned threads;
  std::unique_ptr<ReplicaModel> model;
  const ReplicaModel& net;
  ReplicaStore store;
  Sgd sgd;
  // The training set the replicas draw from: train's images, each as spec.augment_copies views.
  models::Augmentation views;
  models::Partition partition;
  std::vector<models::BatchSampler> samplers;
  AlignedBuffer inputs;
  std::vector<std::int32_t> labels;
  std::vector<BatchStats> stats;
  std::vector<float> eval_images;
  std::vector<std::int32_t> eval_labels;
  std::size_t replica_eval_count = 0;
  std::unordered_map<const topology::Graph*, MixingMatrix> matrices;
  // mix()'s tiles, kept from step to step.
  MixWorkspace mix_workspace;
  std::optional<ReplicaMetrics> measured;
  std::int64_t done = 0;
  double last_lr = 0.0;
  double last_train_loss = std::numeric_limits<double>::quiet_NaN();
  // Centralized steps keep the replicas identical: while they are (from the common initialisation on, and
  // for as long as every step is centralized), only row 0 of the parameters and momentum is stepped and the
  // other rows are brought up to date when something reads them.
  bool identical = true;
  bool rows_behind = false;
  AlignedBuffer mean_grad;
  std::optional<SharedMomentum> shared;
  VirtualReplicas::StepSeconds last_seconds;
  // When the iteration in progress started, and where its local step wrote the stepped parameters column
  // block by column block (a null view where it wrote them in place).
  Clock::time_point step_start;
  BlockedView stepped;

  State(const NumericsSpec& s, const models::Dataset& train_set, const models::Dataset& test_set)
      : spec(s),
        train(train_set),
        threads(resolve_threads(s.threads)),
        model(make_replica_model(s.model, threads)),
        net(*model),
        store(static_cast<std::size_t>(s.workers), net.layout()),
        sgd(s.sgd, net.layout(), threads),
        views(train_set, s.augment_copies, s.seed),
        partition(models::augmented_labels(train_set, views),
                  models::PartitionSpec{s.workers, s.partition, s.dirichlet_alpha, s.seed}) {
    samplers.reserve(static_cast<std::size_t>(s.workers));
    for (int r = 0; r < s.workers; ++r) {
      samplers.emplace_back(partition, r, s.batch_per_worker);
    }
    const auto order = evaluation_order(test_set.size, s.seed);
    const std::int64_t eval_count =
        s.eval_samples > 0 ? std::min(s.eval_samples, test_set.size) : test_set.size;
    replica_eval_count = static_cast<std::size_t>(std::min(s.replica_eval_samples, eval_count));
    models::gather(test_set,
                   std::span<const std::int64_t>(order.data(), static_cast<std::size_t>(eval_count)),
                   eval_images, eval_labels);
    const std::size_t batch = static_cast<std::size_t>(s.batch_per_worker);
    labels.resize(static_cast<std::size_t>(s.workers) * batch);
    stats.resize(static_cast<std::size_t>(s.workers));
    mean_grad = AlignedBuffer(store.param_count());
    net.init(store.replica(0), models::derive_seed(s.seed, {0x1417}));
    store.broadcast_params(0);
    if (s.shared_momentum && s.sgd.momentum != 0.0) {
      shared.emplace(s.sgd, store.replica(0));
    }
  }

  /// The batches of replicas [first, first + count) at iteration t: inputs to x, labels to y. A count of 0
  /// starts loading replica first's samples into the cache (BatchFill's hint).
  void fill_batches(std::int64_t t, std::size_t first, std::size_t count, float* x, std::int32_t* y) {
    const std::size_t in = net.inputs();
    const std::size_t batch = static_cast<std::size_t>(spec.batch_per_worker);
    if (count == 0) {
      // Samples lie at random in the data set, so each one's first lines wait for memory; loaded now, they
      // arrive while the thread's current replica computes (about 1 ms of 4 ms of gathering per iteration at
      // 1008 replicas on 2 cores).
      constexpr std::size_t kLine = 64;
      if (views.computed()) {
        return;  // nothing stored to load
      }
      for (const std::int64_t sample : samplers[first].batch(t)) {
        const auto* p = reinterpret_cast<const char*>(image_of(sample));
        for (std::size_t b = 0; b < in * sizeof(float); b += kLine) {
          __builtin_prefetch(p + b);
        }
      }
      return;
    }
    for (std::size_t r = first; r < first + count; ++r) {
      const auto indices = samplers[r].batch(t);
      for (std::size_t b = 0; b < batch; ++b) {
        const std::int64_t sample = indices[b];
        views.write(sample, image_of(sample), x);
        *y++ = train.labels[static_cast<std::size_t>(views.image_of(sample))];
        x += in;
      }
    }
  }

  /// The stored pixels of the image training sample `sample` is a view of; null where the samples are
  /// computed (the synthetic task).
  const float* image_of(std::int64_t sample) const {
    return views.computed() ? nullptr
                            : &train.images[static_cast<std::size_t>(views.image_of(sample)) * net.inputs()];
  }

  /// Where the samples of replicas [first, first + count) lie at iteration t, to rows, and their labels to y.
  /// An original image is read where it lies; a view other than the original, or a computed sample, is
  /// written to its batch's slot of `inputs` (allocated beforehand), which the step reads instead.
  void point_batches(std::int64_t t, std::size_t first, std::size_t count, const float** rows,
                     std::int32_t* y) {
    const std::size_t in = net.inputs();
    const std::size_t batch = static_cast<std::size_t>(spec.batch_per_worker);
    for (std::size_t r = first; r < first + count; ++r) {
      float* slot = inputs.data() + r * batch * in;
      for (const std::int64_t sample : samplers[r].batch(t)) {
        if (views.copy_of(sample) == 0 && !views.computed()) {
          *rows++ = image_of(sample);
        } else {
          views.write(sample, image_of(sample), slot);
          *rows++ = slot;
        }
        *y++ = train.labels[static_cast<std::size_t>(views.image_of(sample))];
        slot += in;
      }
    }
  }

  /// The one matrix of every replica's batch (50 MB at 1008 replicas), allocated at first use.
  void reserve_inputs() {
    if (inputs.size() == 0) {
      inputs =
          AlignedBuffer(samplers.size() * static_cast<std::size_t>(spec.batch_per_worker) * net.inputs());
    }
  }

  void gather_batches(std::int64_t t) {
    const std::size_t batch = static_cast<std::size_t>(spec.batch_per_worker);
    // Only the steps that take all batches at once need them in one matrix.
    reserve_inputs();
    parallel_for(threads, samplers.size(), [&](std::size_t begin, std::size_t end) {
      fill_batches(t, begin, end - begin, inputs.data() + begin * batch * net.inputs(),
                   labels.data() + begin * batch);
    });
  }

  /// Writes row 0's parameters and momentum to every other row, if they lag it.
  void catch_up_rows() {
    if (!rows_behind) {
      return;
    }
    store.broadcast_params(0);
    store.broadcast_momentum(0);
    rows_behind = false;
  }

  /// Where the local step writes the stepped parameters when `graph`'s gossip mixes them from a
  /// column-blocked input (blocked_input_width()): the mixing target, blocked at that width, from which
  /// mix_from_blocks() reads them with nothing copied. A null view where gossip mixes row-major.
  BlockedView blocked_target(const topology::Graph& graph) {
    const std::size_t width = blocked_input_width(matrix_for(graph).rows(), mix_options());
    if (width == 0) {
      return {};
    }
    const ReplicaView target = store.mix_target();
    return {target.data, target.rows, target.cols, target.stride, width};
  }

  MixOptions mix_options() {
    return {.threads = threads, .walk = spec.mix_walk, .workspace = &mix_workspace};
  }

  const MixingMatrix& matrix_for(const topology::Graph& graph) {
    auto it = matrices.find(&graph);
    if (it == matrices.end()) {
      if (graph.nodes() != spec.workers) {
        throw ShapeError(RunInput::workers, fmt::format("{} replicas, but graph '{}' has {} nodes",
                                                        spec.workers, graph.name(), graph.nodes()));
      }
      it = matrices.emplace(&graph, to_mixing_matrix(graph)).first;
    }
    return it->second;
  }

  /// The local step's end: its seconds, and the mean of the replicas' batch losses.
  void finish_local_step() {
    last_seconds.local = seconds_since(step_start);
    double loss = 0.0;
    for (const auto& st : stats) {
      loss += st.loss;
    }
    last_train_loss = loss / static_cast<double>(stats.size());
  }

  void all_reduce_step(std::int64_t t) override {
    const auto batch = static_cast<std::size_t>(spec.batch_per_worker);
    stepped = {};
    const ReplicaView p = store.params();
    const ReplicaView m = store.momentum();
    const BatchRows rows = [this, t](std::size_t first, std::size_t count, const float** x, std::int32_t* y) {
      point_batches(t, first, count, x, y);
    };
    if (identical && (views.copies() > 1 || views.computed())) {
      // Views other than the originals, and computed samples, are written into the batch matrix, where the
      // shared step reads them.
      reserve_inputs();
    }
    if (identical && net.train_shared(p.row(0), rows, batch, mean_grad.span(), stats)) {
      // Identical replicas: the mean of their gradients is one large batch's, and one copy of the parameters
      // and momentum steps for all of them.
      sgd.step_replica(last_lr, p.row(0), mean_grad.span(),
                       spec.sgd.momentum != 0.0 ? m.row(0) : std::span<float>());
      sgd.finish_step();
      rows_behind = true;
    } else {
      // Every replica steps with the mean gradient (an all-reduce between backward and step).
      catch_up_rows();
      gather_batches(t);
      net.train_step(p, inputs.span(), labels, batch, store.grads(), stats);
      allreduce_mean_step(sgd, last_lr, p, store.grads(), m, threads);
    }
    finish_local_step();
  }

  void local_step(std::int64_t t, const topology::ScheduleStep& step, bool measure) override {
    const auto batch = static_cast<std::size_t>(spec.batch_per_worker);
    stepped = {};
    const BatchFill fill = [this, t](std::size_t first, std::size_t count, float* x, std::int32_t* y) {
      fill_batches(t, first, count, x, y);
    };
    catch_up_rows();
    identical = false;
    if (shared) {
      shared->local_step(last_lr);
    }
    // D-PSGD: each replica's local step, applied while its batch and gradient are in cache where the model
    // can; the stepped parameters go column block by column block to where mixing reads them, if it does,
    // unless this step is measured (the metrics read the stepped parameters where they are).
    const BlockedView target = mixes_terms(step) && !measure ? blocked_target(*step.graph) : BlockedView{};
    if (net.train_sgd_step(store.params(), fill, batch, sgd, last_lr, store.momentum(), stats, target)) {
      stepped = target;
    } else {
      gather_batches(t);
      net.train_step(store.params(), inputs.span(), labels, batch, store.grads(), stats);
      sgd.step(last_lr, store.params(), store.grads(), store.momentum());
    }
    finish_local_step();
  }

  /// Whether the step's gossip mixes term by term (gossip with W = 11^T/n is a global average instead).
  static bool mixes_terms(const topology::ScheduleStep& step) {
    return step.communication == topology::Communication::gossip && !is_uniform_complete(*step.graph);
  }

  void measure() override {
    catch_up_rows();
    measured = compute_replica_metrics(store.params(), store.layout(), threads);
  }

  void global_average(bool /*measured*/) override {
    const Clock::time_point start = Clock::now();
    allreduce_mean(store.params(), threads);
    last_seconds.communication += seconds_since(start);
  }

  bool shares_momentum() const override { return shared.has_value(); }

  void share_momentum() override {
    const Clock::time_point start = Clock::now();
    const auto momentum_of_average = shared->after_average(store.params().row(0));
    const ReplicaView momentum = store.momentum();
    parallel_for(threads, momentum.rows, [&](std::size_t r0, std::size_t r1) {
      for (std::size_t r = r0; r < r1; ++r) {
        std::copy(momentum_of_average.begin(), momentum_of_average.end(), momentum.row(r).begin());
      }
    });
    last_seconds.communication += seconds_since(start);
  }

  void gossip(std::int64_t /*t*/, const topology::Graph& graph) override {
    const Clock::time_point start = Clock::now();
    if (is_uniform_complete(graph)) {
      // Gossip with W = 11^T/n is the global average: one pass over the replicas instead of n^2 terms.
      allreduce_mean(store.params(), threads);
    } else if (stepped.data != nullptr) {
      mix_from_blocks(matrix_for(graph).rows(), stepped, store.params(), mix_options());
    } else {
      mix(matrix_for(graph).rows(), store.params(), store.mix_target(), mix_options());
      store.swap_mixed();
    }
    last_seconds.communication += seconds_since(start);
  }
};

VirtualReplicas::VirtualReplicas(const NumericsSpec& spec, const models::Dataset& train,
                                 const models::Dataset& test) {
  const auto in = std::int64_t{spec.model.input_channels} * spec.model.input_height * spec.model.input_width;
  if (in != train.sample_elements() || spec.model.classes != train.classes) {
    throw ShapeError(RunInput::model,
                     fmt::format("an input of {} features and {} classes does not fit the data "
                                 "set ({} features, {} classes)",
                                 in, spec.model.classes, train.sample_elements(), train.classes));
  }
  if (spec.workers < 1) {
    throw ValueError(RunInput::workers, fmt::format("must be >= 1, got {}", spec.workers));
  }
  state_ = std::make_unique<State>(spec, train, test);
}

VirtualReplicas::~VirtualReplicas() = default;

void VirtualReplicas::measure() {
  state_->measure();
}

void VirtualReplicas::step(std::int64_t t, const topology::ScheduleStep& step, bool measure) {
  State& s = *state_;
  s.step_start = Clock::now();
  s.last_lr = s.spec.lr.at(t);
  s.last_seconds = {};
  run_step(s, t, step, measure);
  s.done = t + 1;
}

MetricsRow VirtualReplicas::metrics() {
  State& s = *state_;
  s.catch_up_rows();
  if (!s.measured) {
    s.measured = compute_replica_metrics(s.store.params(), s.store.layout(), s.threads);
  }
  const ReplicaMetrics& m = *s.measured;
  MetricsRow row;
  row.iteration = s.done;
  row.epoch = static_cast<double>(s.done) / static_cast<double>(s.samplers.front().batches_per_epoch());
  row.lr = s.last_lr;
  row.train_loss = s.last_train_loss;
  row.consensus_distance = m.consensus_distance;
  const auto& tensors = s.store.layout().tensors();
  for (std::size_t t = 0; t < tensors.size(); ++t) {
    TensorMetrics tm;
    tm.name = tensors[t].name;
    for (std::size_t i = 0; i < m.replicas; ++i) {
      tm.norm_mean += m.norm(i, t);
    }
    tm.norm_mean /= static_cast<double>(m.replicas);
    tm.norm_variance = m.norm_variance[t];
    tm.consensus_distance = m.consensus_per_tensor[t];
    row.norm_variance += tm.norm_variance;
    row.tensors.push_back(std::move(tm));
  }
  row.replica_norms = m.norms;
  s.measured.reset();

  // The averaged model on the evaluation set, every replica on its fixed first replica_eval_count samples.
  std::vector<float> average(s.store.param_count());
  replica_average(s.store.params(), average, s.threads);
  const EvalResult avg = s.net.evaluate(average, s.eval_images, s.eval_labels);
  row.test_loss = avg.loss;
  row.test_accuracy = avg.accuracy();
  const std::size_t in = s.net.inputs();
  const auto replicas = s.net.evaluate_replicas(
      s.store.params(), std::span<const float>(s.eval_images.data(), s.replica_eval_count * in),
      std::span<const std::int32_t>(s.eval_labels.data(), s.replica_eval_count));
  row.replica_accuracy_min = 1.0;
  for (const auto& r : replicas) {
    row.replica_accuracy_mean += r.accuracy();
    row.replica_loss_mean += r.loss;
    row.replica_accuracy_min = std::min(row.replica_accuracy_min, r.accuracy());
    row.replica_accuracy_max = std::max(row.replica_accuracy_max, r.accuracy());
  }
  row.replica_accuracy_mean /= static_cast<double>(replicas.size());
  row.replica_loss_mean /= static_cast<double>(replicas.size());
  return row;
}

topology::PolicyObservation VirtualReplicas::observation() {
  State& s = *state_;
  s.catch_up_rows();
  if (!s.measured) {
    s.measured = compute_replica_metrics(s.store.params(), s.store.layout(), s.threads);
  }
  const ReplicaMetrics& m = *s.measured;
  topology::PolicyObservation o;
  o.iteration = s.done;
  o.consensus_distance = m.consensus_distance;
  o.train_loss = s.last_train_loss;
  for (double v : m.norm_variance) {
    o.norm_variance += v;
  }
  for (double norm : m.norms) {
    o.mean_norm_sq += norm * norm;
  }
  o.mean_norm_sq /= static_cast<double>(m.replicas);
  return o;
}

ConstReplicaView VirtualReplicas::params() const {
  state_->catch_up_rows();
  return std::as_const(state_->store).params();
}

std::vector<std::pair<std::string, std::size_t>> VirtualReplicas::tensors() const {
  std::vector<std::pair<std::string, std::size_t>> out;
  for (const auto& t : state_->store.layout().tensors()) {
    out.emplace_back(t.name, t.elements);
  }
  return out;
}

std::int64_t VirtualReplicas::iterations_done() const {
  return state_->done;
}

VirtualReplicas::StepSeconds VirtualReplicas::last_step_seconds() const {
  return state_->last_seconds;
}

double VirtualReplicas::train_loss() const {
  return state_->last_train_loss;
}

std::vector<std::int64_t> evaluation_order(std::int64_t test_size, std::uint64_t seed) {
  std::vector<std::int64_t> order(static_cast<std::size_t>(test_size));
  std::iota(order.begin(), order.end(), 0);
  models::Rng rng(models::derive_seed(seed, {0x7e57}));
  rng.shuffle(std::span<std::int64_t>(order));
  return order;
}

models::Dataset load_dataset(const std::string& name, models::Split split, const std::string& dir,
                             std::uint64_t seed, std::int64_t synthetic_train_samples) {
  if (name == "fashion-mnist") {
    return dir.empty() ? models::read_fashion_mnist(split) : models::read_fashion_mnist(split, dir);
  }
  if (name == "cifar10") {
    if (dir.empty()) {
      throw models::DataError(models::RunInput::data_dir,
                              "cifar10 needs the folder of its binary batches (data_batch_1.bin ...)");
    }
    return models::read_cifar10(split, dir);
  }
  if (name == "synthetic") {
    models::SyntheticSpec spec;
    spec.seed = seed;
    spec.train_size = synthetic_train_samples;
    return models::make_synthetic(spec, split);
  }
  throw models::DataError(
      models::RunInput::dataset,
      fmt::format("'{}' is not available to the simulator (fashion-mnist, cifar10, synthetic)", name));
}

NumericsResult run_numerics(const NumericsSpec& spec, const models::Dataset& train,
                            const models::Dataset& test, topology::GraphPolicy& policy,
                            NumericsObserver& observer) {
  const auto start = std::chrono::steady_clock::now();
  VirtualReplicas replicas(spec, train, test);
  const ScheduleProgress progress =
      run_schedule(spec.iterations, spec.eval_every, policy, replicas, observer);
  NumericsResult result;
  result.workers = spec.workers;
  result.parameters = static_cast<std::int64_t>(replicas.params().cols);
  result.final_test_accuracy = progress.final_test_accuracy;
  result.final_test_loss = progress.final_test_loss;
  result.best_test_accuracy = progress.best_test_accuracy;
  result.iterations = spec.iterations;
  result.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

}  // namespace dbench::core
