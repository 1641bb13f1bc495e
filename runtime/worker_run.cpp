#include "runtime/worker_run.hpp"

#include <algorithm>
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

WorkerStatistics WorkerStatistics::gather(Communicator& comm, std::span<const std::string> names,
                                          std::vector<double> local) {
  const std::size_t count = names.size();
  const int workers = comm.size();
  const auto n = static_cast<double>(workers);
  WorkerStatistics s;
  // Every worker's norms: each fills its row of a zero table, a sum gathers them.
  s.norms.assign(static_cast<std::size_t>(workers) * count, 0.0);
  std::copy_n(local.begin(), count, s.norms.begin() + static_cast<std::ptrdiff_t>(comm.rank() * count));
  comm.allreduce(std::span<double>(s.norms), ReduceOp::sum);
  comm.allreduce(std::span<double>(local), ReduceOp::sum);
  for (std::size_t t = 0; t < count; ++t) {
    core::TensorMetrics m;
    m.name = names[t];
    m.norm_mean = local[t] / n;
    m.norm_variance = std::max(0.0, local[count + t] / n - m.norm_mean * m.norm_mean);
    m.consensus_distance = local[2 * count + t] / n;
    s.mean_norm_sq += local[count + t] / n;
    s.tensors.push_back(std::move(m));
  }
  return s;
}

topology::PolicyObservation WorkerStatistics::observation(std::int64_t iteration, double train_loss) const {
  topology::PolicyObservation o;
  o.iteration = iteration;
  o.train_loss = train_loss;
  o.mean_norm_sq = mean_norm_sq;
  for (const auto& m : tensors) {
    o.consensus_distance += m.consensus_distance;
    o.norm_variance += m.norm_variance;
  }
  return o;
}

core::MetricsRow WorkerStatistics::row(std::int64_t iteration, double epoch, double lr,
                                       double train_loss) const {
  core::MetricsRow row;
  row.iteration = iteration;
  row.epoch = epoch;
  row.lr = lr;
  row.train_loss = train_loss;
  const topology::PolicyObservation totals = observation(iteration, train_loss);
  row.consensus_distance = totals.consensus_distance;
  row.norm_variance = totals.norm_variance;
  row.tensors = tensors;
  row.replica_norms = norms;
  return row;
}

std::pair<std::size_t, std::size_t> evaluation_slice(std::size_t samples, int rank, int workers) {
  const auto w = static_cast<std::size_t>(workers);
  const auto r = static_cast<std::size_t>(rank);
  return {samples * r / w, samples * (r + 1) / w};
}

void combine_evaluations(Communicator& comm, double slice_loss_sum, double slice_correct, std::size_t samples,
                         double own_accuracy, double own_loss, core::MetricsRow& row) {
  const auto n = static_cast<double>(comm.size());
  std::array<double, 4> sums{slice_loss_sum, slice_correct, own_accuracy, own_loss};
  comm.allreduce(std::span<double>(sums), ReduceOp::sum);
  std::array<double, 2> extremes{-own_accuracy, own_accuracy};
  comm.allreduce(std::span<double>(extremes), ReduceOp::max);
  row.test_loss = sums[0] / static_cast<double>(samples);
  row.test_accuracy = sums[1] / static_cast<double>(samples);
  row.replica_accuracy_mean = sums[2] / n;
  row.replica_loss_mean = sums[3] / n;
  row.replica_accuracy_min = -extremes[0];
  row.replica_accuracy_max = extremes[1];
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
