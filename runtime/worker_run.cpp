#include "runtime/worker_run.hpp"

#include <array>

#include "runtime/trace_gather.hpp"

namespace dbench::runtime {

void WorkerEvents::on_schedule(std::int64_t t, const topology::ScheduleStep& step) {
  if (rank_ == 0) {
    observer_.on_schedule(t, step);
  }
}

void WorkerEvents::on_metrics(const core::MetricsRow& row) {
  if (rank_ == 0) {
    observer_.on_metrics(row);
  }
}

void WorkerEvents::on_iteration(std::int64_t t) {
  if (rank_ == 0) {
    observer_.on_iteration(t);
  }
}

void WorkerEvents::on_progress(const core::ScheduleProgress& progress) {
  if (on_progress_) {
    on_progress_(progress);
  }
}

TrainResult finish_run(Communicator& comm, int workers, int batch_per_worker,
                       const core::ScheduleProgress& progress, std::int64_t first_iteration,
                       std::span<const StepTrace> trace, TrainObserver& observer,
                       std::chrono::steady_clock::time_point start) {
  const int rank = comm.rank();
  auto all = gather_traces(comm, rank, workers, trace);
  if (rank == 0) {
    observer.on_trace(all);
  }
  TrainResult result;
  result.iterations = progress.iterations_done;
  result.start_iteration = first_iteration;
  result.workers = workers;
  result.final_test_accuracy = progress.final_test_accuracy;
  result.final_test_loss = progress.final_test_loss;
  result.best_test_accuracy = progress.best_test_accuracy;
  double mine = 0.0;
  for (const StepTrace& row : trace) {
    if (row.iteration >= first_iteration) {
      mine += row.total_s;
    }
  }
  const std::int64_t ran = progress.iterations_done - first_iteration;
  if (ran > 0) {
    // The slowest worker sets the pace of a synchronous run.
    std::array<double, 1> worst{mine};
    comm.allreduce(std::span<double>(worst), ReduceOp::max);
    result.seconds_per_iteration = worst[0] / static_cast<double>(ran);
    result.samples_per_second =
        static_cast<double>(workers) * batch_per_worker / std::max(1e-12, result.seconds_per_iteration);
  }
  result.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

}  // namespace dbench::runtime
