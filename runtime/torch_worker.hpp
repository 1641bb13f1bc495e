// A worker that trains a LibTorch model (mlp, lenet, resnet20, resnet50) on a device: a GPU with NCCL, or the
// CPU with MPI. Same schedule, data shards and result files as the CPU worker; its arithmetic is LibTorch's.
#pragma once

#include <string>

#include "runtime/communicator.hpp"
#include "runtime/worker.hpp"

namespace dbench::runtime {

/// Trains spec.iterations iterations of a LibTorch model on `device` ("cuda", "cuda:1" or "cpu").
/// `tensors` moves the model's flattened parameters and gradients (device memory: NCCL for a GPU; host
/// memory: MPI for the CPU); `host` carries the few host numbers (losses, metrics) and may be the same object
/// for the CPU. Batch-norm statistics stay local to each worker. Checkpoints, overlap and fault injection are
/// the CPU worker's; they are refused here. Throws like train_worker.
TrainResult train_torch_worker(const sim::NumericsSpec& spec, const models::Dataset& train,
                               const models::Dataset& test, topology::GraphPolicy& policy, Communicator& host,
                               Communicator& tensors, const std::string& device, const WorkerOptions& options,
                               TrainObserver& observer);

}  // namespace dbench::runtime
