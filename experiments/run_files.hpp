// The files of a results directory that both engines write, with the columns the README documents.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

#include "core/numerics.hpp"
#include "experiments/config.hpp"
#include "results/results_dir.hpp"
#include "results/run_csv.hpp"
#include "results/summary_json.hpp"

namespace dbench::experiments {

/// The results directory of a run, staged for `target` with the resolved config.toml written at once, as
/// every run must (see results::ResultsDir); throws results::ResultsDirError.
results::ResultsDir stage_results(const std::filesystem::path& target, const ExperimentConfig& config,
                                  results::StagingCleanup* cleanup = nullptr);

/// Accumulates metrics.csv and schedule.csv as a run produces them, and prints progress.
class RunRecorder final : public core::NumericsObserver {
 public:
  /// `total_iterations` sizes the progress line; `progress` false keeps stderr quiet.
  RunRecorder(std::int64_t total_iterations, bool progress);

  void on_schedule(std::int64_t iteration, const topology::ScheduleStep& step) override;
  void on_metrics(const core::MetricsRow& row) override;
  void on_iteration(std::int64_t iteration) override;

  /// metrics.csv: iteration, epoch, lr, train_loss, test_loss, test_accuracy, consensus_distance,
  /// norm_variance, replica statistics, then per tensor norm_mean/norm_var/consensus columns.
  const std::string& metrics_csv() const noexcept { return metrics_; }
  /// replica_norms.csv: iteration, replica, then each tensor's L2 norm in that replica before averaging.
  const std::string& replica_norms_csv() const noexcept { return norms_; }
  /// schedule.csv: iteration, graph.
  const std::string& schedule_csv() const noexcept { return schedule_; }
  /// Messages sent per iteration, summed over the run (edges of each iteration's graph; all-reduce counts 0).
  std::int64_t gossip_messages() const noexcept { return messages_; }

 private:
  std::int64_t total_;
  bool progress_;
  std::string metrics_;
  std::string schedule_;
  std::string norms_;
  std::int64_t messages_ = 0;
  double last_accuracy_ = 0.0;
  double started_s_;
  double last_print_s_ = -1.0;
  bool terminal_;
};

using results::trace_csv;
using results::TraceRow;
using results::worker_trace_csv;
using results::WorkerTraceRow;

/// summary.json's first keys, the same from both engines: the run's name, engine, algorithm and graph.
inline results::SummaryJson summary_header(const ExperimentConfig& config, const char* engine,
                                           const std::string& graph) {
  results::SummaryJson summary;
  summary.name = config.name;
  summary.engine = engine;
  summary.algorithm = config.algorithm.kind;
  summary.graph = graph;
  return summary;
}

/// summary.json's keys of a finished training run, the same from both engines (`Result`: core::NumericsResult
/// or runtime::TrainResult).
template <class Result>
void add_training_summary(results::SummaryJson& summary, const ExperimentConfig& config, const Result& result,
                          std::int64_t gossip_messages) {
  summary.model = config.train.model;
  summary.dataset = config.train.dataset;
  // The training set's size as the budget counts it: every view of every image.
  summary.train_samples = train_samples(config.train);
  summary.augment_copies = config.train.augment_copies;
  summary.workers = result.workers;
  summary.iterations = result.iterations;
  summary.parameters_per_worker = result.parameters;
  summary.final_test_accuracy = result.final_test_accuracy;
  summary.final_test_loss = result.final_test_loss;
  summary.best_test_accuracy = result.best_test_accuracy;
  summary.gossip_messages = gossip_messages;
}

}  // namespace dbench::experiments
