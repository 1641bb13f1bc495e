// Rank 0's record of a `dbench train` run: the simulator's metrics.csv and schedule.csv, plus the measured
// trace.csv and trace_worker.csv. `dbench calibrate` times the training loop with it too.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "experiments/run_files.hpp"
#include "runtime/worker.hpp"

namespace dbench::experiments {

/// Rank 0's results: the simulator's RunRecorder for metrics.csv and schedule.csv (same columns), plus
/// trace.csv; what was recorded before a checkpoint is carried over on resume.
class TrainRecorder final : public runtime::TrainObserver {
 public:
  TrainRecorder(std::int64_t iterations, bool progress) : recorder_(iterations, progress) {}

  void on_schedule(std::int64_t iteration, const topology::ScheduleStep& step) override {
    recorder_.on_schedule(iteration, step);
    set_graph(iteration, step.name);
  }
  void on_metrics(const core::MetricsRow& row) override { recorder_.on_metrics(row); }
  void on_iteration(std::int64_t iteration) override { recorder_.on_iteration(iteration); }
  void on_trace(const std::vector<std::vector<runtime::StepTrace>>& per_worker) override;
  std::string checkpoint_state() const override;
  void restore_state(const std::string& state) override;

  /// metrics.csv of the whole run.
  std::string metrics_csv() const;
  /// replica_norms.csv of the whole run.
  std::string replica_norms_csv() const;
  /// schedule.csv of the whole run.
  std::string schedule_csv() const;
  /// trace.csv: one row per iteration, the simulator's columns.
  const std::string& trace() const { return trace_; }
  /// trace_worker.csv: one row per iteration and worker.
  const std::string& worker_trace() const { return worker_trace_; }
  /// Gossip messages of the whole run.
  std::int64_t gossip_messages() const { return messages_prefix_ + recorder_.gossip_messages(); }

 private:
  void set_graph(std::int64_t iteration, const std::string& name) {
    const auto at = static_cast<std::size_t>(iteration);
    if (graphs_.size() <= at) {
      graphs_.resize(at + 1);
    }
    graphs_[at] = name;
  }

  RunRecorder recorder_;
  std::vector<std::string> graphs_;  ///< schedule.csv's graph of each iteration
  std::string metrics_prefix_;
  std::string schedule_prefix_;
  std::string norms_prefix_;
  std::int64_t messages_prefix_ = 0;
  std::string trace_;
  std::string worker_trace_;
};

}  // namespace dbench::experiments
