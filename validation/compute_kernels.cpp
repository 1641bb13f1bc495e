#include "validation/compute_kernels.hpp"

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <stdexcept>
#include <vector>

#include "core/replica_model.hpp"
#include "core/replica_store.hpp"
#include "core/sgd.hpp"
#include "models/augment.hpp"
#include "models/model_profile.hpp"
#include "runtime/gossip.hpp"
#include "topology/generators.hpp"
#include "validation/timed_rounds.hpp"
#if defined(DBENCH_RUNTIME_HAVE_TORCH)
#include "runtime/torch_worker.hpp"
#include "validation/link_kernels.hpp"
#endif

namespace dbench::validation {
namespace {

/// The ring over n workers, whose gossip round the step is timed with.
topology::GraphSequence make_ring(int n) {
  return topology::make_graph(topology::GraphSpec{.kind = topology::GraphKind::ring, .nodes = n});
}

/// A calibration of `model` with its profile's FLOPs and parameter bytes, before any batch is timed.
ModelCalibration calibration_of(const models::ModelSpec& model) {
  const models::ModelProfile profile = models::model_profile(model);
  ModelCalibration result;
  result.model = model.name;
  result.flops_per_sample = profile.forward_flops_per_sample + profile.backward_flops_per_sample;
  result.parameter_bytes = static_cast<double>(profile.parameter_bytes());
  return result;
}

}  // namespace

ModelCalibration time_compute(const core::NumericsSpec& spec, const models::Dataset& train,
                              std::span<const int> batches, int repeats, runtime::Communicator& comm) {
  const auto net = core::make_replica_model(spec.model, 1);
  core::ReplicaStore store(1, net->layout());
  core::Sgd sgd(spec.sgd, net->layout(), 1);
  net->init(store.replica(0), 1);
  ModelCalibration result = calibration_of(spec.model);
  std::vector<float> inputs;
  std::vector<std::int32_t> labels;
  std::vector<std::int64_t> indices;
  std::int64_t next = static_cast<std::int64_t>(comm.rank()) * 4096;
  // The training set as the workers read it, views included: their cost is part of a step's compute.
  const models::Augmentation views(train, spec.augment_copies, spec.seed);
  const auto step = [&](std::size_t batch) {
    // A fresh batch each step, gathered as the workers gather theirs.
    indices.resize(batch);
    for (auto& i : indices) {
      // Consecutive images, each a different copy: views in the share training draws them, (K - 1) / K.
      i = (next % views.copies()) * views.images() + next % views.images();
      ++next;
    }
    models::gather(train, views, indices, inputs, labels);
    core::BatchStats stats;
    if (!net->train_sgd_step(store.params(), core::contiguous_batches(inputs, labels, batch), batch, sgd,
                             0.01, store.momentum(), std::span(&stats, 1), {})) {
      net->train_step(store.params(), inputs, labels, batch, store.grads(), std::span(&stats, 1));
      sgd.step(0.01, store.params(), store.grads(), store.momentum());
    }
    // Every iteration of dbench train ends its step with this all-reduce (the divergence check): it keeps
    // the workers in step, and its cost lands in the fitted overhead.
    std::array<double, 1> loss{static_cast<double>(stats.loss)};
    comm.allreduce(std::span<double>(loss), runtime::ReduceOp::sum);
  };
  // As a worker runs it: mixed into the store's second buffer, which then becomes the parameters (the
  // buffers' places in memory, and so how the caches hold them, are a training run's). A single worker has
  // no one to gossip with: its loop's communication is centralized training's all-reduce of the gradient.
  std::function<void()> communication;
  std::optional<runtime::GossipPlan> plan;
  std::vector<float> received;
  std::vector<double> sum;
  if (comm.size() >= 2) {
    plan = runtime::plan_gossip(make_ring(comm.size()).at(0), comm.rank());
    communication = [&] {
      const auto x = store.params().row(0);
      runtime::exchange_parameters(comm, *plan, x, received, 11);
      runtime::mix_received(*plan, x, received, store.mix_target().row(0), 1);
      store.swap_mixed();
    };
  } else {
    communication = [&] { runtime::average_over_workers(comm, store.grads().row(0), sum); };
  }
  for (const int batch : batches) {
    const auto b = static_cast<std::size_t>(batch);
    const auto alone = [&] { step(b); };
    const auto in_training = [&] {
      step(b);
      communication();
    };
    const std::array<std::function<void()>, 3> bodies{alone, communication, in_training};
    record_batch(result, batch, interleaved_rounds(comm, repeats, bodies));
  }
  result.fit = fit_compute(result.batches, result.seconds, result.flops_per_sample);
  return result;
}

#if defined(DBENCH_RUNTIME_HAVE_TORCH)
ModelCalibration time_torch_compute(std::span<const core::NumericsSpec> specs, const models::Dataset& train,
                                    int repeats, const std::string& device, runtime::Communicator& host,
                                    runtime::Communicator& tensors) {
  if (specs.empty()) {
    throw std::invalid_argument("time_torch_compute: no batch sizes to time");
  }
  ModelCalibration result = calibration_of(specs.front().model);
  std::optional<topology::GraphSequence> ring;
  topology::ScheduleStep step;
  std::optional<runtime::GossipPlan> plan;
  if (host.size() >= 2) {
    ring = make_ring(host.size());
    step.name = "ring";
    step.graph = &ring->at(0);
    plan = runtime::plan_gossip(*step.graph, host.rank());
  } else {
    step.name = "allreduce";
  }
  for (const core::NumericsSpec& spec : specs) {
    runtime::TorchWorkerBench worker(spec, train, host, tensors, device);
    runtime::DeviceBuffers buffers(device, static_cast<std::size_t>(worker.parameters()),
                                   2 + (plan ? static_cast<int>(plan->in_peers.size()) : 0));
    std::int64_t t = 0;
    const auto alone = [&] { worker.local_step(t++); };
    const auto communication = [&] {
      if (plan) {
        device_gossip_round(tensors, *plan, buffers);
      } else {
        tensors.allreduce(buffers[0], runtime::ReduceOp::sum);
        buffers.scale(0, 1.0);
      }
    };
    const auto in_training = [&] { worker.iterate(t++, step); };
    const std::array<std::function<void()>, 3> bodies{alone, communication, in_training};
    record_batch(result, spec.batch_per_worker, interleaved_rounds(host, repeats, bodies));
  }
  result.fit = fit_compute(result.batches, result.seconds, result.flops_per_sample);
  return result;
}
#endif

}  // namespace dbench::validation
