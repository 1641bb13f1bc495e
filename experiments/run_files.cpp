#include "experiments/run_files.hpp"

#include <fmt/core.h>
#include <unistd.h>

#include <chrono>
#include <cstddef>
#include <cstdio>

namespace dbench::experiments {
namespace {

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// metrics.csv's and replica_norms.csv's columns per tensor are named after the tensors of the first row.
std::vector<std::string> tensor_names(const core::MetricsRow& row) {
  std::vector<std::string> names;
  for (const auto& t : row.tensors) {
    names.push_back(t.name);
  }
  return names;
}

results::MetricsRecord metrics_record(const core::MetricsRow& row) {
  results::MetricsRecord r{row.iteration,
                           row.epoch,
                           row.lr,
                           row.train_loss,
                           row.test_loss,
                           row.test_accuracy,
                           row.consensus_distance,
                           row.norm_variance,
                           row.replica_accuracy_mean,
                           row.replica_accuracy_min,
                           row.replica_accuracy_max,
                           row.replica_loss_mean,
                           {}};
  for (const auto& t : row.tensors) {
    r.tensors.push_back({t.norm_mean, t.norm_variance, t.consensus_distance});
  }
  return r;
}

}  // namespace

results::ResultsDir stage_results(const std::filesystem::path& target, const ExperimentConfig& config,
                                  results::StagingCleanup* cleanup) {
  results::ResultsDir dir(target, cleanup);
  dir.write_text("config.toml", to_toml(config));
  return dir;
}

RunRecorder::RunRecorder(std::int64_t total_iterations, bool progress)
    : total_(total_iterations),
      progress_(progress),
      schedule_(results::csv_header(results::schedule_columns())),
      started_s_(now_s()),
      terminal_(isatty(STDERR_FILENO) != 0) {}

void RunRecorder::on_schedule(std::int64_t iteration, const topology::ScheduleStep& step) {
  schedule_ += results::csv_row(results::schedule_columns(),
                                results::ScheduleRecord{iteration, step.name, step.signal});
  if (step.graph != nullptr) {
    messages_ += static_cast<std::int64_t>(step.graph->entries().size()) - step.graph->nodes();
  }
}

void RunRecorder::on_metrics(const core::MetricsRow& row) {
  const std::vector<std::string> tensors = tensor_names(row);
  if (metrics_.empty()) {
    metrics_ = results::csv_header(results::metrics_columns(), tensors);
  }
  metrics_ += results::csv_row(results::metrics_columns(), metrics_record(row), tensors.size());
  if (norms_.empty()) {
    norms_ = results::csv_header(results::replica_norms_columns(), tensors);
  }
  const std::size_t count = tensors.size();
  for (std::size_t i = 0; count > 0 && i < row.replica_norms.size() / count; ++i) {
    results::ReplicaNormsRecord norms{row.iteration, static_cast<std::int64_t>(i), {}};
    norms.norms.assign(row.replica_norms.begin() + static_cast<std::ptrdiff_t>(i * count),
                       row.replica_norms.begin() + static_cast<std::ptrdiff_t>((i + 1) * count));
    norms_ += results::csv_row(results::replica_norms_columns(), norms, count);
  }
  last_accuracy_ = row.test_accuracy;
}

void RunRecorder::on_iteration(std::int64_t iteration) {
  if (!progress_) {
    return;
  }
  const double now = now_s();
  const bool last = iteration + 1 == total_;
  // A terminal gets one line redrawn every second; a log file a new line every ten.
  if (!last && now - last_print_s_ < (terminal_ ? 1.0 : 10.0)) {
    return;
  }
  last_print_s_ = now;
  const double done = static_cast<double>(iteration + 1);
  const double rate = done / std::max(1e-9, now - started_s_);
  const double eta = static_cast<double>(total_ - iteration - 1) / rate;
  fmt::print(stderr, "{}  iteration {}/{} ({:3.0f}%)  test accuracy {:.4f}  {:.1f} it/s  ETA {:.0f} s   {}",
             terminal_ ? "\r" : "", iteration + 1, total_, 100.0 * done / static_cast<double>(total_),
             last_accuracy_, rate, eta, (last || !terminal_) ? "\n" : "");
  std::fflush(stderr);
}

}  // namespace dbench::experiments
