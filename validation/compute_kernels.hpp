// The compute measurements of `dbench calibrate`: one model's local training step at several batch sizes,
// timed in the training loop on every worker at once, and its FLOP-rate fit.
#pragma once

#include <span>
#include <string>

#include "core/numerics.hpp"
#include "models/dataset.hpp"
#include "runtime/communicator.hpp"
#include "validation/calibration.hpp"

namespace dbench::validation {

/// The CPU workers' local training step (forward, backward, SGD and the all-reduce of the loss: dbench
/// train's worker and step function, runtime::WorkerBench) of `spec.model` with `spec.sgd`, at each of
/// `batches`, every worker of `comm` on its own batches of `train`. The step is measured in the training
/// loop: each step is followed by a gossip round of the model's parameters on a ring (the runtime's own
/// exchange and mixing; on a single worker the all-reduce of the gradient), and the round timed alone is
/// subtracted (interleaved_rounds with `repeats`, record_batch). Between two steps a worker's caches fill
/// with the messages it received and mixed, and on shared cores with the other workers' data, so a step timed
/// back to back with itself runs faster than in training (for the MLP on 8 workers sharing 2 cores, 225
/// against 267 µs). Seconds per step (`seconds`, `kernel_seconds`), unfitted: on the CPU workers they size
/// dbench train's loops, to whose compute calibrate fits the step.
ModelCalibration time_compute(const core::NumericsSpec& spec, const models::Dataset& train,
                              std::span<const int> batches, int repeats, runtime::Communicator& comm);

/// A reading of the machine's speed for a model's own kernels: the CPU workers' local compute of `spec.model`
/// at `spec.batch_per_worker` (dbench train's worker and step function without the all-reduce of the loss,
/// runtime::WorkerBench::local_compute), every worker of `comm` on its own batches of `train` at once, timed
/// as the reference kernel is (barrier_rounds_seconds, about a second). With the all-reduce in each step the
/// workers wait for each other's descheduling every step: the MLP's step on 2 workers then read 140 to 250
/// us from one reading to the next, against about 90 us of compute in the training loop. Seconds per step;
/// every worker gets the same value.
double step_reading_seconds(const core::NumericsSpec& spec, const models::Dataset& train,
                            runtime::Communicator& comm);

#if defined(DBENCH_RUNTIME_HAVE_TORCH)
/// The LibTorch worker's step (dbench train --device) on `device`, as time_compute does for the CPU workers,
/// at one batch size per element of `specs`: the model and batch_per_worker of each, which builds the worker
/// as training would (its learning rate, too, can depend on the batch). Timed round by round
/// (interleaved_rounds with `repeats` on `host`): the step alone, the communication of a training iteration
/// alone on buffers of the model's size on `tensors` (the ring's gossip round, or on a single worker the
/// all-reduce of the gradient) and the training iteration that does both. The worker's flattening and
/// unflattening of the parameters around the communication land in the step, where the simulator, which
/// times only the exchange or collective itself, needs them. Throws std::invalid_argument on no specs.
ModelCalibration time_torch_compute(std::span<const core::NumericsSpec> specs, const models::Dataset& train,
                                    int repeats, const std::string& device, runtime::Communicator& host,
                                    runtime::Communicator& tensors);
#endif

}  // namespace dbench::validation
