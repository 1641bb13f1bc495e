// A real worker: one replica of the model on this process, executing the same schedule as the simulator
// with the same local-step and mixing code, talking to its peers through a Communicator.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>

#include "core/numerics.hpp"
#include "models/dataset.hpp"
#include "runtime/checkpoint.hpp"
#include "runtime/communicator.hpp"
#include "runtime/train_observer.hpp"
#include "topology/graph_policy.hpp"

namespace dbench::runtime {

/// How a worker runs, besides what is trained.
struct WorkerOptions {
  /// Overlap each gossip exchange with the local step: x_{t+1} = sum_j W_ij x_j,t - lr d_i,t (the gradient
  /// and the exchange both start from x_t). A different update order than the simulator's "step, then mix",
  /// so results differ from it; off by default.
  bool overlap = false;
  /// Every how many iterations a checkpoint is written (and at the last one); 0: never.
  std::int64_t checkpoint_every = 0;
  /// Where checkpoints go (shared by all workers: a shared file system across nodes).
  std::filesystem::path checkpoint_dir;
  /// Continue from the latest checkpoint in checkpoint_dir.
  bool resume = false;
  /// Identifies the config; a checkpoint written under another key is not resumed.
  std::string run_key;
  /// Fault injection for tests: worker `kill_rank` kills itself (SIGKILL) when starting `kill_iteration`.
  int kill_rank = -1;
  /// See kill_rank.
  std::int64_t kill_iteration = -1;
  /// Compute threads of this worker.
  unsigned threads = 1;
};

/// Trains this worker's replica for spec.iterations iterations in step with its peers; spec.workers must be
/// comm.size(). Throws DivergenceError on a non-finite loss, PeerLostError when a peer is lost,
/// CheckpointError on a checkpoint that cannot be written or resumed.
TrainResult train_worker(const core::NumericsSpec& spec, const models::Dataset& train,
                         const models::Dataset& test, topology::GraphPolicy& policy, Communicator& comm,
                         const WorkerOptions& options, TrainObserver& observer);

/// A CPU worker's iterations one at a time, as train_worker runs them (the same worker, batches and step
/// function): what `dbench calibrate` times. Evaluations are not run; spec.workers must be comm.size().
class WorkerBench {
 public:
  WorkerBench(const core::NumericsSpec& spec, const models::Dataset& train, Communicator& comm);
  ~WorkerBench();
  WorkerBench(const WorkerBench&) = delete;
  WorkerBench& operator=(const WorkerBench&) = delete;

  /// The model's parameter count.
  std::int64_t parameters() const;
  /// Iteration t's local step alone: the batch, forward, backward, SGD and the all-reduce of the loss.
  void local_step(std::int64_t t);
  /// Iteration t's local step without the all-reduce of the loss: the batch, forward, backward and SGD, this
  /// worker's own compute, which waits for no other worker.
  void local_compute(std::int64_t t);
  /// Iteration t as training runs it: the local step and the step's communication (core::run_step).
  void iterate(std::int64_t t, const topology::ScheduleStep& step);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace dbench::runtime
