// A real worker: one replica of the model on this process, executing the same schedule as the simulator
// with the same local-step and mixing code, talking to its peers through a Communicator.
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "core/numerics.hpp"
#include "models/dataset.hpp"
#include "runtime/checkpoint.hpp"
#include "runtime/communicator.hpp"
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

/// Receives a run's results on rank 0: schedule, metrics and progress as sim's observers do, plus the trace.
class TrainObserver : public core::NumericsObserver {
 public:
  /// Every worker's trace of the run, in iteration order, once at the end (rank 0 only).
  virtual void on_trace(const std::vector<std::vector<StepTrace>>& /*per_worker*/) {}
  /// What to keep in a checkpoint so that a resumed run reports the whole run.
  virtual std::string checkpoint_state() const { return {}; }
  /// Restores checkpoint_state() on resume.
  virtual void restore_state(const std::string& /*state*/) {}
};

/// The outcome of a run as one worker saw it (metrics are the same on every worker).
struct TrainResult {
  std::int64_t iterations = 0;         ///< iterations of the whole run
  std::int64_t start_iteration = 0;    ///< > 0 when resumed
  int workers = 0;                     ///< workers of the run
  std::int64_t parameters = 0;         ///< per worker
  double final_test_accuracy = 0.0;    ///< the averaged model at the last evaluation
  double final_test_loss = 0.0;        ///< the averaged model at the last evaluation
  double best_test_accuracy = 0.0;     ///< the best evaluation of the run
  double seconds_per_iteration = 0.0;  ///< measured: mean over iterations of the slowest worker's total_s
  double samples_per_second = 0.0;
  double wall_seconds = 0.0;  ///< this process's run, including evaluations and checkpoints
};

/// Trains this worker's replica for spec.iterations iterations in step with its peers; spec.workers must be
/// comm.size(). Throws DivergenceError on a non-finite loss, PeerLostError when a peer is lost,
/// CheckpointError on a checkpoint that cannot be written or resumed.
TrainResult train_worker(const core::NumericsSpec& spec, const models::Dataset& train,
                         const models::Dataset& test, topology::GraphPolicy& policy, Communicator& comm,
                         const WorkerOptions& options, TrainObserver& observer);

}  // namespace dbench::runtime
