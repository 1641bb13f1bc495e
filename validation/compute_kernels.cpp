#include "validation/compute_kernels.hpp"

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <stdexcept>
#include <vector>

#include "models/model_profile.hpp"
#include "runtime/gossip.hpp"
#include "runtime/worker.hpp"
#include "topology/generators.hpp"
#include "validation/speed_watch.hpp"
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
  ModelCalibration result = calibration_of(spec.model);
  // The step of training: a gossip round on the ring after the local step. A single worker has no one to
  // gossip with: its step is centralized training's, with the all-reduce of the gradient.
  std::optional<topology::GraphSequence> ring;
  topology::ScheduleStep training_step{"allreduce", nullptr, topology::Communication::all_reduce};
  std::optional<runtime::GossipPlan> plan;
  if (comm.size() >= 2) {
    ring = make_ring(comm.size());
    training_step = {"ring", &ring->at(0), topology::Communication::gossip};
    plan = runtime::plan_gossip(*training_step.graph, comm.rank());
  }
  for (const int batch : batches) {
    core::NumericsSpec at_batch = spec;
    at_batch.batch_per_worker = batch;
    // The CPU worker of dbench train, its batches (views included: their cost is part of a step's compute)
    // and its step function.
    runtime::WorkerBench worker(at_batch, train, comm);
    const auto count = static_cast<std::size_t>(worker.parameters());
    // The communication alone, on buffers of the parameters' size: mixed into a second buffer, which then
    // becomes the first, as a worker's store does it.
    std::vector<float> x(count, 1.0f);
    std::vector<float> mixed(count);
    std::vector<float> received;
    std::vector<double> sum;
    const auto communication = [&] {
      if (plan) {
        runtime::exchange_parameters(comm, *plan, x, received, 11);
        runtime::mix_received(*plan, x, received, mixed, 1);
        x.swap(mixed);
      } else {
        runtime::average_over_workers(comm, x, sum);
      }
    };
    std::int64_t t = 0;
    const auto alone = [&] { worker.local_step(t++); };
    const auto in_training = [&] { worker.iterate(t++, training_step); };
    const std::array<std::function<void()>, 3> bodies{alone, communication, in_training};
    record_batch(result, batch, interleaved_rounds(comm, repeats, bodies));
  }
  // Not fitted here: these timings only size dbench train's loops, to whose compute the step is fitted. A
  // busy core can make them fall with the batch, which must not stop the calibration before the loops.
  return result;
}

double step_reading_seconds(const core::NumericsSpec& spec, const models::Dataset& train,
                            runtime::Communicator& comm) {
  runtime::WorkerBench worker(spec, train, comm);
  std::int64_t t = 0;
  return barrier_rounds_seconds(comm, [&] { worker.local_compute(t++); });
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
  step.communication = topology::Communication::all_reduce;
  if (host.size() >= 2) {
    ring = make_ring(host.size());
    step.name = "ring";
    step.graph = &ring->at(0);
    step.communication = topology::Communication::gossip;
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
