// A worker that trains a LibTorch model (mlp, lenet, resnet20, resnet50) on a device: a GPU with NCCL, or the
// CPU with MPI. Same schedule, data shards and result files as the CPU worker; its arithmetic is LibTorch's.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "runtime/communicator.hpp"
#include "runtime/worker.hpp"

namespace dbench::runtime {

/// Trains spec.iterations iterations of a LibTorch model on `device` ("cuda", "cuda:1" or "cpu").
/// `tensors` moves the model's flattened parameters and gradients (device memory: NCCL for a GPU; host
/// memory: MPI for the CPU); `host` carries the few host numbers (losses, metrics) and may be the same object
/// for the CPU. Batch-norm statistics stay local to each worker. Checkpoints, overlap and fault injection are
/// the CPU worker's; they are refused here. Throws like train_worker.
TrainResult train_torch_worker(const core::NumericsSpec& spec, const models::Dataset& train,
                               const models::Dataset& test, topology::GraphPolicy& policy, Communicator& host,
                               Communicator& tensors, const std::string& device, const WorkerOptions& options,
                               TrainObserver& observer);

/// A LibTorch worker's iterations one at a time, each finished on its device when the call returns: what
/// `dbench calibrate --device` times. The worker is train_torch_worker's, with its batches, model and
/// communication.
class TorchWorkerBench {
 public:
  TorchWorkerBench(const core::NumericsSpec& spec, const models::Dataset& train, Communicator& host,
                   Communicator& tensors, const std::string& device);
  ~TorchWorkerBench();
  TorchWorkerBench(const TorchWorkerBench&) = delete;
  TorchWorkerBench& operator=(const TorchWorkerBench&) = delete;

  /// The model's parameter count.
  std::int64_t parameters() const;
  /// Iteration t's local step alone: forward, backward, SGD and the all-reduce of the loss.
  void local_step(std::int64_t t);
  /// Iteration t as training runs it: the local step and the step's gradient all-reduce or gossip round.
  void iterate(std::int64_t t, const topology::ScheduleStep& step);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// Float buffers on a device ("cuda", "cuda:1" or "cpu"), all of one size and filled with ones, for timing
/// communication patterns on the memory training uses; every operation is finished when it returns.
class DeviceBuffers {
 public:
  DeviceBuffers(const std::string& device, std::size_t count, int buffers);
  ~DeviceBuffers();
  DeviceBuffers(const DeviceBuffers&) = delete;
  DeviceBuffers& operator=(const DeviceBuffers&) = delete;

  /// Buffer i's elements (device memory on a GPU).
  std::span<float> operator[](std::size_t i);
  /// out = sum_k weights[k] * buffer sources[k], element-wise on the device (out not among the sources).
  void mix(std::size_t out, std::span<const std::size_t> sources, std::span<const float> weights);
  /// Buffer i times factor.
  void scale(std::size_t i, double factor);
  /// Buffers i and j trade places.
  void swap(std::size_t i, std::size_t j);
  /// Returns when the device's queued work is done.
  void synchronize();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace dbench::runtime
