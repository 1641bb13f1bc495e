// What both workers (the CPU replica model and the LibTorch one) do around the driver: pass rank 0's events
// to the observer, take checkpoints where the driver reports progress, and turn the traces into the
// run's measured pace.
#pragma once

#include <chrono>
#include <functional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "core/schedule.hpp"
#include "runtime/checkpoint.hpp"
#include "runtime/communicator.hpp"
#include "runtime/train_observer.hpp"

namespace dbench::runtime {

/// The driver's observer on one worker: rank 0 forwards every event to the run's observer; every rank calls
/// `on_progress` (a checkpoint) after each iteration.
class WorkerEvents final : public core::NumericsObserver {
 public:
  WorkerEvents(int rank, TrainObserver& observer,
               std::function<void(const core::ScheduleProgress&)> on_progress)
      : rank_(rank), observer_(observer), on_progress_(std::move(on_progress)) {}
  void on_schedule(std::int64_t t, const topology::ScheduleStep& step) override;
  void on_metrics(const core::MetricsRow& row) override;
  void on_iteration(std::int64_t t) override;
  void on_progress(const core::ScheduleProgress& progress) override;

 private:
  int rank_;
  TrainObserver& observer_;
  std::function<void(const core::ScheduleProgress&)> on_progress_;
};

/// The replica statistics across workers, as the simulator's replica metrics define them.
struct WorkerStatistics {
  std::vector<core::TensorMetrics> tensors;
  std::vector<double> norms;  ///< every worker's tensor norms, [workers x tensors]
  double mean_norm_sq = 0.0;  ///< mean over workers of ||x_i||^2

  /// Collective: from this worker's per-tensor [norms..., squared norms..., squared distances to the
  /// average...] (3 x names.size() values), summed over the workers.
  static WorkerStatistics gather(Communicator& comm, std::span<const std::string> names,
                                 std::vector<double> local);
  /// What a graph policy sees of them.
  topology::PolicyObservation observation(std::int64_t iteration, double train_loss) const;
  /// A metrics row holding them, for the state after `iteration` iterations.
  core::MetricsRow row(std::int64_t iteration, double epoch, double lr, double train_loss) const;
};

/// This worker's share [begin, end) of `samples` evaluation samples.
std::pair<std::size_t, std::size_t> evaluation_slice(std::size_t samples, int rank, int workers);

/// Collective: completes `row` with the averaged model's evaluation (each worker's summed loss and correct
/// predictions on its slice of `samples`) and the replicas' (each worker's accuracy and mean loss on the
/// fixed subset).
void combine_evaluations(Communicator& comm, double slice_loss_sum, double slice_correct, std::size_t samples,
                         double own_accuracy, double own_loss, core::MetricsRow& row);

/// The end of a worker's run, collective: every worker's trace reaches rank 0's observer, and the result
/// holds the driver's evaluations and the pace of the slowest worker over the iterations this run executed
/// (trace rows from `first_iteration` on).
TrainResult finish_run(Communicator& comm, int workers, int batch_per_worker,
                       const core::ScheduleProgress& progress, std::int64_t first_iteration,
                       std::span<const StepTrace> trace, TrainObserver& observer,
                       std::chrono::steady_clock::time_point start);

}  // namespace dbench::runtime
