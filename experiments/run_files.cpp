#include "experiments/run_files.hpp"

#include <fmt/core.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>

namespace dbench::experiments {
namespace {

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

/// Shortest text that reads back to the same double, so byte-identical runs give byte-identical files.
std::string num(double value) {
  if (std::isnan(value)) {
    return "";
  }
  return fmt::format("{}", value);
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
      schedule_("iteration,graph,signal\n"),
      started_s_(now_s()),
      terminal_(isatty(STDERR_FILENO) != 0) {}

void RunRecorder::on_schedule(std::int64_t iteration, const topology::ScheduleStep& step) {
  schedule_ += fmt::format("{},{},{}\n", iteration, step.name, num(step.signal));
  if (step.graph != nullptr) {
    messages_ += static_cast<std::int64_t>(step.graph->entries().size()) - step.graph->nodes();
  }
}

void RunRecorder::on_metrics(const core::MetricsRow& row) {
  if (metrics_.empty()) {
    metrics_ =
        "iteration,epoch,lr,train_loss,test_loss,test_accuracy,consensus_distance,norm_variance,"
        "replica_accuracy_mean,replica_accuracy_min,replica_accuracy_max,replica_loss_mean";
    for (const auto& t : row.tensors) {
      metrics_ += fmt::format(",norm_mean:{0},norm_var:{0},consensus:{0}", t.name);
    }
    metrics_ += '\n';
  }
  metrics_ +=
      fmt::format("{},{},{},{},{},{},{},{},{},{},{},{}", row.iteration, num(row.epoch), num(row.lr),
                  num(row.train_loss), num(row.test_loss), num(row.test_accuracy),
                  num(row.consensus_distance), num(row.norm_variance), num(row.replica_accuracy_mean),
                  num(row.replica_accuracy_min), num(row.replica_accuracy_max), num(row.replica_loss_mean));
  for (const auto& t : row.tensors) {
    metrics_ += fmt::format(",{},{},{}", num(t.norm_mean), num(t.norm_variance), num(t.consensus_distance));
  }
  metrics_ += '\n';
  if (norms_.empty()) {
    norms_ = "iteration,replica";
    for (const auto& t : row.tensors) {
      norms_ += ',';
      norms_ += t.name;
    }
    norms_ += '\n';
  }
  const std::size_t tensors = row.tensors.size();
  for (std::size_t i = 0; tensors > 0 && i < row.replica_norms.size() / tensors; ++i) {
    norms_ += fmt::format("{},{}", row.iteration, i);
    for (std::size_t t = 0; t < tensors; ++t) {
      norms_ += ',';
      norms_ += num(row.replica_norms[i * tensors + t]);
    }
    norms_ += '\n';
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

std::string trace_csv(std::span<const TraceRow> rows) {
  std::string out = "iteration,graph,compute_s,comm_s,total_s,bytes_sent,elapsed_s\n";
  double elapsed = 0.0;
  for (const TraceRow& row : rows) {
    elapsed += row.total_s;
    out += fmt::format("{},{},{},{},{},{},{}\n", row.iteration, row.graph, row.compute_s, row.comm_s,
                       row.total_s, row.bytes_sent, elapsed);
  }
  return out;
}

std::string worker_trace_csv(std::span<const WorkerTraceRow> rows) {
  const auto optional = [](const std::optional<double>& value) {
    return value ? fmt::format("{}", *value) : std::string();
  };
  std::string out = "iteration,worker,compute_s,comm_s,total_s,bytes_sent,loss,lr\n";
  for (const WorkerTraceRow& row : rows) {
    out += fmt::format("{},{},{},{},{},{},{},{}\n", row.iteration, row.worker, row.compute_s, row.comm_s,
                       row.total_s, row.bytes_sent, optional(row.loss), optional(row.lr));
  }
  return out;
}

}  // namespace dbench::experiments
