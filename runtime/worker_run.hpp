// What both workers (the CPU replica model and the LibTorch one) do around the driver: pass rank 0's events
// to the observer, take checkpoints where the driver reports progress, and turn the traces into the
// run's measured pace.
#pragma once

#include <chrono>
#include <functional>
#include <span>

#include "core/schedule.hpp"
#include "runtime/checkpoint.hpp"
#include "runtime/communicator.hpp"
#include "runtime/worker.hpp"

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

/// The end of a worker's run, collective: every worker's trace reaches rank 0's observer, and the result
/// holds the driver's evaluations and the pace of the slowest worker over the iterations this run executed
/// (trace rows from `first_iteration` on).
TrainResult finish_run(Communicator& comm, int workers, int batch_per_worker,
                       const core::ScheduleProgress& progress, std::int64_t first_iteration,
                       std::span<const StepTrace> trace, TrainObserver& observer,
                       std::chrono::steady_clock::time_point start);

}  // namespace dbench::runtime
