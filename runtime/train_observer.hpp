// What a run of real workers hands back: its result, and the observer that receives its events on rank 0.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/schedule.hpp"
#include "runtime/checkpoint.hpp"

namespace dbench::runtime {

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

}  // namespace dbench::runtime
