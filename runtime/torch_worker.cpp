#include "runtime/torch_worker.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <type_traits>

#include "core/errors.hpp"
#include "core/replica_model.hpp"
#include "core/sgd.hpp"
#include "core/shared_momentum.hpp"
#include "core/step.hpp"
#include "models/augment.hpp"
#include "models/partition.hpp"
#include "models/rng.hpp"
#include "models/torch_models.hpp"
#include "runtime/errors.hpp"
#include "runtime/gossip.hpp"
#include "runtime/timed_communicator.hpp"
#include "runtime/worker_run.hpp"

namespace dbench::runtime {
namespace {

/// The optimizer's state of parameter `p`. LibTorch keys that state by the parameter's TensorImpl: as the
/// address printed to a string in older releases, as the address itself in newer ones.
template <class Optimizer>
torch::optim::OptimizerParamState& optimizer_state(Optimizer& optimizer, const torch::Tensor& p) {
  auto& states = optimizer.state();
  using Key = typename std::remove_reference_t<decltype(states)>::key_type;
  if constexpr (std::is_same_v<Key, std::string>) {
    std::ostringstream address;
    address << p.unsafeGetTensorImpl();
    return *states.at(address.str());
  } else {
    return *states.at(p.unsafeGetTensorImpl());
  }
}

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

/// A contiguous float tensor's elements as a span (device or host memory, as the tensor lives).
std::span<float> span_of(torch::Tensor& t) {
  return {t.data_ptr<float>(), static_cast<std::size_t>(t.numel())};
}

class TorchWorker final : public core::ScheduleReplicas, public core::StepEngine {
 public:
  TorchWorker(const core::NumericsSpec& spec, const models::Dataset& train, const models::Dataset& test,
              Communicator& host, Communicator& tensors, const std::string& device)
      : spec_(spec),
        train_(train),
        test_(test),
        host_(host),
        separate_tensors_(&tensors == &host ? nullptr : std::make_unique<TimedCommunicator>(tensors)),
        tensors_(separate_tensors_ ? *separate_tensors_ : host_),
        device_(device),
        rank_(host.rank()),
        workers_(host.size()),
        views_(train, spec.augment_copies, spec.seed),
        partition_(models::augmented_labels(train, views_),
                   models::PartitionSpec{spec.workers, spec.partition, spec.dirichlet_alpha, spec.seed}),
        sampler_(partition_, rank_, spec.batch_per_worker),
        plans_(rank_, workers_) {
    // Every worker draws the same initial parameters: the same seed before the same constructors.
    torch::manual_seed(models::derive_seed(spec.seed, {0x1417}));
    model_ = models::make_torch_model(spec.model);
    model_->to(device_);
    own_ = models::flatten_parameters(*model_);
    params_ = model_->parameters();
    for (const auto& item : model_->named_parameters()) {
      names_.push_back(item.key());
    }
    count_ = own_.values.numel();
    flat_ = torch::zeros_like(own_.values);
    init_as_simulator(spec);
    sgd_ = std::make_unique<torch::optim::SGD>(
        params_, torch::optim::SGDOptions(spec.lr.peak)
                     .momentum(spec.sgd.momentum)
                     .nesterov(spec.sgd.nesterov)
                     .weight_decay(spec.sgd.lars ? 0.0 : spec.sgd.weight_decay));
    for (const std::string& name : names_) {
      lars_adapts_.push_back(core::lars_adapts(name));
    }
    if (spec.shared_momentum && spec.sgd.momentum != 0.0) {
      flatten();
      shared_previous_ = flat_.clone();
      shared_momentum_ = torch::zeros_like(flat_);
    }
  }

  TrainResult run(topology::GraphPolicy& policy, TrainObserver& observer) {
    const auto start = Clock::now();
    WorkerEvents events(rank_, observer, nullptr);
    const core::ScheduleProgress progress =
        core::run_schedule(spec_.iterations, spec_.eval_every, policy, *this, events);
    TrainResult result =
        finish_run(host_, workers_, spec_.batch_per_worker, progress, 0, traces_, observer, start);
    result.parameters = count_;
    return result;
  }

  void measure() override { measure_replicas(); }

  void step(std::int64_t t, const topology::ScheduleStep& step, bool measure) override {
    const auto begin = Clock::now();
    const std::int64_t before = bytes_sent();
    const double comm_before = comm_seconds();
    iterate(t, &step, measure);
    const double total_s = seconds_since(begin);
    const double comm_s = comm_seconds() - comm_before;
    traces_.push_back({t, total_s - comm_s, comm_s, total_s, bytes_sent() - before, last_loss_, last_lr_});
  }

  double train_loss() const override { return mean_loss_; }

  topology::PolicyObservation observation() override { return measured_.observation(done_, mean_loss_); }

  core::MetricsRow metrics() override { return evaluate(); }

  /// The number of parameters.
  std::int64_t parameters() const { return count_; }

  /// Work queued on the device is done before another stream (NCCL's) reads or writes the buffers.
  void sync() {
    if (device_.is_cuda()) {
      torch::cuda::synchronize();
    }
  }

  /// One iteration through core::run_step(). Without a step, the local step alone: forward, backward, SGD
  /// and the loss's all-reduce, with neither the gradients' all-reduce nor gossip. When `measure`, the
  /// replica statistics are taken after the local step, before the communication.
  void iterate(std::int64_t t, const topology::ScheduleStep* step, bool measure = false) {
    if (step == nullptr) {
      train_step(t, false, false);
      return;
    }
    core::run_step(*this, t, *step, measure);
  }

  void local_step(std::int64_t t, const topology::ScheduleStep& /*step*/, bool /*measure*/) override {
    train_step(t, false, true);
  }

  void all_reduce_step(std::int64_t t) override { train_step(t, true, true); }

  void global_average(bool measured) override {
    // A measurement has just computed this mean (in flat_): one all-reduce, not two.
    if (!measured) {
      flatten();
      mean_over_workers(flat_);
    }
    unflatten(flat_);
  }

  bool shares_momentum() const override { return shared_momentum_.defined(); }

  /// After a global average (its mean in flat_): the shared momentum rebuilt as core::SharedMomentum does it,
  /// on the device, into every parameter's momentum buffer.
  void share_momentum() override {
    torch::NoGradGuard no_grad;
    const core::SharedMomentumCoefficients c = core::shared_momentum_coefficients(shared_lrs_, spec_.sgd);
    shared_lrs_.clear();
    shared_momentum_.mul_(c.from_momentum).add_(shared_previous_.sub(flat_), c.from_displacement);
    shared_previous_.copy_(flat_);
    std::int64_t offset = 0;
    for (auto& p : params_) {
      const auto n = p.numel();
      auto& state = static_cast<torch::optim::SGDParamState&>(optimizer_state(*sgd_, p));
      state.momentum_buffer().copy_(shared_momentum_.slice(0, offset, offset + n).view_as(p));
      offset += n;
    }
  }

  /// x_i <- s_i x_i + sum_{j != i} W_ij (x_j - x_i), the simulator's formula, computed by LibTorch.
  void gossip(std::int64_t t, const topology::Graph& graph) override {
    const GossipPlan& plan = plans_(graph);
    flatten();
    const auto peers = static_cast<std::int64_t>(plan.in_peers.size());
    if (!received_.defined() || received_.size(0) != peers) {
      received_ = torch::zeros({peers, count_}, torch::TensorOptions(device_));
    }
    std::vector<SendBuffer> sends;
    std::vector<RecvBuffer> recvs;
    for (int peer : plan.out_peers) {
      sends.push_back({peer, span_of(flat_)});
    }
    for (std::int64_t k = 0; k < peers; ++k) {
      torch::Tensor row = received_[k];
      recvs.push_back({plan.in_peers[static_cast<std::size_t>(k)], span_of(row)});
    }
    sync();
    tensors_.exchange(sends, recvs, static_cast<int>(t % 32768));
    double sum = 0.0;
    for (float w : plan.weight) {
      sum += w;
    }
    const double scale =
        std::abs(sum - 1.0) <= 4.0 * static_cast<double>(plan.weight.size()) * 0x1.0p-24 ? 1.0 : sum;
    torch::Tensor delta = torch::zeros_like(flat_);
    std::size_t next = 0;
    for (std::size_t k = 0; k < plan.weight.size(); ++k) {
      if (k != plan.self_term) {
        delta.add_(received_[static_cast<std::int64_t>(next++)] - flat_, plan.weight[k]);
      }
    }
    unflatten(flat_ * scale + delta);
  }

 private:
  /// Iteration t's forward, backward and SGD step, with the all-reduce of the gradients when `centralized`,
  /// then the loss's all-reduce. `in_training`: a step of the schedule (whose learning rate the shared
  /// momentum counts when the step is local).
  void train_step(std::int64_t t, bool centralized, bool in_training) {
    last_lr_ = spec_.lr.at(t);
    for (auto& group : sgd_->param_groups()) {
      static_cast<torch::optim::SGDOptions&>(group.options()).lr(last_lr_);
    }
    model_->train();
    auto [x, y] = batch(t);
    own_.grads.zero_();  // not sgd_->zero_grad(): LibTorch 2's resets the gradients out of own_.grads
    const torch::Tensor loss = torch::nn::functional::cross_entropy(model_->forward(x), y);
    loss.backward();
    last_loss_ = loss.item<double>();
    if (centralized) {
      mean_over_workers(own_.grads);
    } else if (in_training && shared_momentum_.defined()) {
      shared_lrs_.push_back(last_lr_);
    }
    if (spec_.sgd.lars) {
      scale_for_lars();
    }
    sgd_->step();
    std::array<double, 1> losses{last_loss_};
    host_.allreduce(std::span<double>(losses), ReduceOp::sum);
    // Every worker holds the same mean: a non-finite one stops them all in the driver, together.
    mean_loss_ = losses[0] / static_cast<double>(workers_);
    done_ = t + 1;
  }

  /// LARS: every gradient becomes r (g + lambda x), r from core::lars_trust_ratio() of the tensor's norms (1
  /// where it does not adapt), so that LibTorch's SGD, built without weight decay, then steps as core::Sgd.
  void scale_for_lars() {
    torch::NoGradGuard no_grad;
    std::vector<torch::Tensor> norms;
    for (const auto& p : params_) {
      norms.push_back(p.norm());
      norms.push_back(p.grad().norm());
    }
    // One copy to the host for every norm, not one wait per tensor.
    const torch::Tensor host = torch::stack(norms).to(torch::kCPU, torch::kDouble);
    const auto n = host.accessor<double, 1>();
    const double lambda = spec_.sgd.weight_decay;
    for (std::size_t l = 0; l < params_.size(); ++l) {
      const double r =
          lars_adapts_[l] ? core::lars_trust_ratio(spec_.sgd.lars_eta, n[2 * l], n[2 * l + 1], lambda) : 1.0;
      torch::Tensor g = params_[l].grad();
      g.mul_(r).add_(params_[l], r * lambda);
    }
  }

  /// The simulator's initial parameters (those of its replicas and of the CPU workers), where the simulator
  /// has this model with the same tensors in the same order and shapes, so that the engines' runs start
  /// alike: the MLP's differ from LibTorch's own initialisation (LeNet's are LibTorch's in both).
  void init_as_simulator(const core::NumericsSpec& spec) {
    std::unique_ptr<core::ReplicaModel> net;
    try {
      net = core::make_replica_model(spec.model, 1);
    } catch (const std::invalid_argument&) {
      return;  // a model only LibTorch has (the ResNets)
    }
    const auto& tensors = net->layout().tensors();
    if (tensors.size() != params_.size()) {
      return;
    }
    for (std::size_t i = 0; i < tensors.size(); ++i) {
      if (tensors[i].name != names_[i] ||
          static_cast<std::int64_t>(tensors[i].elements) != params_[i].numel()) {
        return;
      }
    }
    std::vector<float> init(net->layout().size());
    net->init(init, models::derive_seed(spec.seed, {0x1417}));
    unflatten(torch::from_blob(init.data(), {count_}, torch::kFloat32).to(device_, false, true));
  }

  /// Seconds spent communicating so far, through both communicators.
  double comm_seconds() const {
    return host_.seconds() + (separate_tensors_ ? separate_tensors_->seconds() : 0.0);
  }

  /// Payload bytes sent so far through both communicators.
  std::int64_t bytes_sent() const {
    return tensors_.counters().bytes_sent + (&host_ == &tensors_ ? 0 : host_.counters().bytes_sent);
  }

  /// The batch of iteration t on the device.
  std::pair<torch::Tensor, torch::Tensor> batch(std::int64_t t) {
    const auto indices = sampler_.batch(t);
    std::vector<float> images;
    std::vector<std::int32_t> labels;
    models::gather(train_, views_, indices, images, labels);
    return to_device(images, labels, static_cast<std::int64_t>(indices.size()));
  }

  std::pair<torch::Tensor, torch::Tensor> to_device(const std::vector<float>& images,
                                                    const std::vector<std::int32_t>& labels, std::int64_t n) {
    // Copies (also on the CPU, where to() would otherwise alias the caller's vectors).
    auto x = torch::from_blob(const_cast<float*>(images.data()),
                              {n, train_.channels, train_.height, train_.width}, torch::kFloat32)
                 .to(device_, torch::kFloat32, false, true);
    auto y = torch::from_blob(const_cast<std::int32_t*>(labels.data()), {n}, torch::kInt32)
                 .to(device_, torch::kLong, false, true);
    return {x, y};
  }

  /// flat_ = the parameters, back to back in named_parameters() order: a copy of own_.values.
  void flatten() { flat_.copy_(own_.values); }

  /// The parameters = `from`, in flatten()'s layout.
  void unflatten(const torch::Tensor& from) { own_.values.copy_(from); }

  /// Every worker's `buffer` (flat_ or own_.grads) summed into every worker's, then divided by the worker
  /// count.
  void mean_over_workers(torch::Tensor buffer) {
    sync();
    tensors_.allreduce(span_of(buffer), ReduceOp::sum);
    buffer.div_(static_cast<double>(workers_));
  }

  /// The replica statistics across workers: per tensor norms, their variance and the squared distance to
  /// the average; collective.
  void measure_replicas() {
    torch::NoGradGuard no_grad;
    flatten();
    const torch::Tensor mine = flat_.clone();
    mean_over_workers(flat_);
    // Per tensor: norm, norm^2 and squared distance to the average.
    const std::size_t count = params_.size();
    std::vector<double> sums(3 * count, 0.0);
    std::int64_t offset = 0;
    for (std::size_t t = 0; t < count; ++t) {
      const auto size = params_[t].numel();
      const torch::Tensor x = mine.slice(0, offset, offset + size).to(torch::kFloat64);
      const torch::Tensor a = flat_.slice(0, offset, offset + size).to(torch::kFloat64);
      const double sq = x.pow(2).sum().item<double>();
      sums[t] = std::sqrt(sq);
      sums[count + t] = sq;
      sums[2 * count + t] = (x - a).pow(2).sum().item<double>();
      offset += size;
    }
    measured_ = WorkerStatistics::gather(host_, names_, std::move(sums));
  }

  /// The metrics row: the last measured replica statistics, the averaged model on this worker's slice of the
  /// evaluation set and every replica on the fixed subset; collective.
  core::MetricsRow evaluate() {
    torch::NoGradGuard no_grad;
    core::MetricsRow row =
        measured_.row(done_, static_cast<double>(done_) / static_cast<double>(sampler_.batches_per_epoch()),
                      last_lr_, mean_loss_);
    flatten();
    torch::Tensor mine = flat_.clone();
    mean_over_workers(flat_);
    torch::Tensor average = flat_.clone();

    // The averaged model on a slice of the evaluation set, then this replica on the fixed subset.
    model_->eval();
    const std::int64_t samples =
        spec_.eval_samples > 0 ? std::min(spec_.eval_samples, test_.size) : test_.size;
    const auto [s0, s1] = evaluation_slice(static_cast<std::size_t>(samples), rank_, workers_);
    unflatten(average);
    const auto [slice_loss, slice_correct] =
        score(static_cast<std::int64_t>(s0), static_cast<std::int64_t>(s1));
    unflatten(mine);
    const std::int64_t subset = std::min(spec_.replica_eval_samples, samples);
    const auto [own_loss, own_correct] = score(0, subset);
    const double own_accuracy = subset > 0 ? own_correct / static_cast<double>(subset) : 0.0;
    combine_evaluations(host_, slice_loss, slice_correct, static_cast<std::size_t>(samples), own_accuracy,
                        subset > 0 ? own_loss / static_cast<double>(subset) : 0.0, row);
    return row;
  }

  /// Summed loss and correct predictions over test samples [s0, s1) of the fixed evaluation order.
  std::pair<double, double> score(std::int64_t s0, std::int64_t s1) {
    if (order_.empty()) {
      order_ = core::evaluation_order(test_.size, spec_.seed);
    }
    double loss = 0.0;
    double correct = 0.0;
    constexpr std::int64_t kChunk = 512;
    std::vector<float> images;
    std::vector<std::int32_t> labels;
    for (std::int64_t b = s0; b < s1; b += kChunk) {
      const std::int64_t e = std::min(s1, b + kChunk);
      models::gather(test_,
                     std::span<const std::int64_t>(order_).subspan(static_cast<std::size_t>(b),
                                                                   static_cast<std::size_t>(e - b)),
                     images, labels);
      auto [x, y] = to_device(images, labels, e - b);
      const torch::Tensor logits = model_->forward(x);
      loss += torch::nn::functional::cross_entropy(
                  logits, y, torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kSum))
                  .item<double>();
      correct += logits.argmax(1).eq(y).sum().item<double>();
    }
    return {loss, correct};
  }

  // Shared momentum (undefined tensors without it): the last global average, its momentum, and the
  // learning rates of the local steps since.
  torch::Tensor shared_previous_;
  torch::Tensor shared_momentum_;
  std::vector<double> shared_lrs_;
  core::NumericsSpec spec_;
  const models::Dataset& train_;
  const models::Dataset& test_;
  TimedCommunicator host_;
  std::unique_ptr<TimedCommunicator> separate_tensors_;  // when the tensors go through another communicator
  TimedCommunicator& tensors_;
  torch::Device device_;
  int rank_;
  int workers_;
  models::Augmentation views_;  // the training set: train_'s images, each as augment_copies views
  models::Partition partition_;
  models::BatchSampler sampler_;
  std::shared_ptr<models::Classifier> model_;
  std::vector<torch::Tensor> params_;
  std::vector<std::string> names_;
  std::int64_t count_ = 0;
  models::FlatParameters own_;  ///< where params_ and their gradients live
  torch::Tensor flat_;          ///< a copy of the parameters for the collectives
  torch::Tensor received_;
  std::unique_ptr<torch::optim::SGD> sgd_;
  /// Per parameter, whether LARS scales its step (core::lars_adapts()).
  std::vector<bool> lars_adapts_;
  GossipPlans plans_;
  std::vector<std::int64_t> order_;
  std::vector<StepTrace> traces_;
  std::int64_t done_ = 0;
  double last_lr_ = 0.0;
  double last_loss_ = 0.0;
  double mean_loss_ = std::numeric_limits<double>::quiet_NaN();
  WorkerStatistics measured_;  // the last measured replica statistics
};

}  // namespace

TrainResult train_torch_worker(const core::NumericsSpec& spec, const models::Dataset& train,
                               const models::Dataset& test, topology::GraphPolicy& policy, Communicator& host,
                               Communicator& tensors, const std::string& device, const WorkerOptions& options,
                               TrainObserver& observer) {
  if (options.overlap || options.checkpoint_every > 0 || options.resume || options.kill_rank >= 0) {
    throw std::invalid_argument(
        "--device: --overlap, --checkpoint-every, --resume and --inject-kill are the CPU worker's (without "
        "--device)");
  }
  if (spec.workers != host.size()) {
    throw WorkerCountError(spec.workers, host.size());
  }
  TorchWorker worker(spec, train, test, host, tensors, device);
  return worker.run(policy, observer);
}

struct TorchWorkerBench::Impl {
  // Built in place: the worker's sampler refers to its partition, so a worker must not move.
  Impl(const core::NumericsSpec& spec, const models::Dataset& train, Communicator& host,
       Communicator& tensors, const std::string& device)
      : worker(spec, train, train, host, tensors, device) {}
  TorchWorker worker;
};

TorchWorkerBench::TorchWorkerBench(const core::NumericsSpec& spec, const models::Dataset& train,
                                   Communicator& host, Communicator& tensors, const std::string& device)
    : impl_(std::make_unique<Impl>(spec, train, host, tensors, device)) {}

TorchWorkerBench::~TorchWorkerBench() = default;

std::int64_t TorchWorkerBench::parameters() const {
  return impl_->worker.parameters();
}

void TorchWorkerBench::local_step(std::int64_t t) {
  impl_->worker.iterate(t, nullptr);
  impl_->worker.sync();
}

void TorchWorkerBench::iterate(std::int64_t t, const topology::ScheduleStep& step) {
  impl_->worker.iterate(t, &step);
  impl_->worker.sync();
}

struct DeviceBuffers::Impl {
  torch::Device device;
  std::vector<torch::Tensor> buffers;
};

DeviceBuffers::DeviceBuffers(const std::string& device, std::size_t count, int buffers)
    : impl_(std::make_unique<Impl>(Impl{torch::Device(device), {}})) {
  for (int i = 0; i < buffers; ++i) {
    impl_->buffers.push_back(
        torch::full({static_cast<std::int64_t>(count)}, 1.0f, torch::TensorOptions(impl_->device)));
  }
  synchronize();
}

DeviceBuffers::~DeviceBuffers() = default;

std::span<float> DeviceBuffers::operator[](std::size_t i) {
  return span_of(impl_->buffers.at(i));
}

void DeviceBuffers::mix(std::size_t out, std::span<const std::size_t> sources,
                        std::span<const float> weights) {
  if (sources.empty() || sources.size() != weights.size()) {
    throw std::invalid_argument(
        fmt::format("DeviceBuffers::mix: {} sources for {} weights", sources.size(), weights.size()));
  }
  torch::Tensor& target = impl_->buffers.at(out);
  target.copy_(impl_->buffers.at(sources[0])).mul_(weights[0]);
  for (std::size_t k = 1; k < sources.size(); ++k) {
    target.add_(impl_->buffers.at(sources[k]), weights[k]);
  }
  synchronize();
}

void DeviceBuffers::scale(std::size_t i, double factor) {
  impl_->buffers.at(i).mul_(factor);
  synchronize();
}

void DeviceBuffers::swap(std::size_t i, std::size_t j) {
  std::swap(impl_->buffers.at(i), impl_->buffers.at(j));
}

void DeviceBuffers::synchronize() {
  if (impl_->device.is_cuda()) {
    torch::cuda::synchronize();
  }
}

}  // namespace dbench::runtime
