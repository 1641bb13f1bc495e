// Checkpoints of a run: one file per worker in a step directory that becomes visible only once every worker
// has written its file, so an interrupted write never replaces the last complete checkpoint.
#pragma once

#include <cstdint>
#include <filesystem>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "topology/graph_policy.hpp"

namespace dbench::runtime {

/// One iteration's record of one worker (a row of trace.csv).
struct StepTrace {
  std::int64_t iteration = 0;   ///< 0-based iteration
  double compute_s = 0.0;       ///< batch, forward, backward, optimizer step and mixing arithmetic
  double comm_s = 0.0;          ///< waiting for exchanges and all-reduces
  double total_s = 0.0;         ///< the whole iteration (metrics and checkpoints excluded)
  std::int64_t bytes_sent = 0;  ///< payload bytes this worker sent
  double loss = 0.0;            ///< this worker's batch loss
  double lr = 0.0;              ///< learning rate used
};

/// Everything a worker needs to continue exactly where it stopped.
struct WorkerState {
  std::string run_key;               ///< identifies the config; a resume with another config is refused
  int rank = 0;                      ///< the worker
  int workers = 1;                   ///< workers of the run
  std::int64_t iterations_done = 0;  ///< the run continues with this iteration
  std::uint64_t sgd_steps = 0;       ///< steps taken by the optimizer (momentum initialised after the first)
  double last_lr = 0.0;              ///< learning rate of the last iteration (for the next metrics row)
  double last_train_loss = 0.0;      ///< mean batch loss of the last iteration
  double best_test_accuracy = 0.0;   ///< best evaluation so far
  double final_test_accuracy = 0.0;  ///< last evaluation so far
  double final_test_loss = 0.0;      ///< last evaluation so far
  /// Every observation the graph policy was given, in order (a resume replays them into the policy, so that
  /// a policy with state, such as Ada, continues as if never stopped).
  std::vector<topology::PolicyObservation> observations;
  std::vector<float> params;    ///< this worker's parameters
  std::vector<float> momentum;  ///< this worker's SGD momentum buffer
  /// With shared momentum (core::SharedMomentum): the averaged parameters and shared momentum of the last
  /// global average and the learning rates since; all empty without it.
  std::vector<float> shared_previous;
  std::vector<float> shared_momentum;
  std::vector<double> shared_lrs;
  std::vector<StepTrace> trace;  ///< this worker's trace so far
  std::string observer_state;    ///< rank 0: the results recorded so far (opaque here)
  std::filesystem::path file;    ///< the file read_checkpoint read it from (empty for a state not read)
};

/// What the resuming run expects of a checkpoint; read_checkpoint refuses every count beyond it before it
/// allocates. The defaults expect nothing beyond what the file's own size allows.
struct CheckpointLimits {
  std::uint64_t params = std::numeric_limits<std::uint64_t>::max();    ///< parameters of one replica
  std::int64_t iterations = std::numeric_limits<std::int64_t>::max();  ///< iterations of the run
};

/// Writes `state` as rank state.rank's file of the checkpoint at `iteration` (staged, not yet visible).
void write_checkpoint_part(const std::filesystem::path& dir, std::int64_t iteration,
                           const WorkerState& state);

/// Called by one worker after every worker's write_checkpoint_part returned: makes the checkpoint at
/// `iteration` the latest and removes older ones.
void publish_checkpoint(const std::filesystem::path& dir, std::int64_t iteration);

/// The iteration of the latest complete checkpoint in `dir`, if any; throws CheckpointError naming the LATEST
/// file when it is there but damaged.
std::optional<std::int64_t> latest_checkpoint(const std::filesystem::path& dir);

/// Reads rank `rank`'s state of the latest complete checkpoint; throws CheckpointError naming the file and
/// the field when there is none, the file is not a regular file, or a field is damaged: a count beyond the
/// file's size or `limits`, another rank or iteration than the file's name, more SGD steps than iterations.
WorkerState read_checkpoint(const std::filesystem::path& dir, int rank, const CheckpointLimits& limits = {});

}  // namespace dbench::runtime
