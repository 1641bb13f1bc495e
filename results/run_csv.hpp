// The CSV files of a run directory, each one record type and one column table (results/columns.hpp): what
// the engines write and what the report and the sweep summary read back.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "results/columns.hpp"

namespace dbench::results {

/// One tensor's columns of a metrics.csv row.
struct TensorMetrics {
  double norm_mean = kEmpty;
  double norm_var = kEmpty;
  double consensus = kEmpty;
};

/// One row of metrics.csv: one evaluation.
struct MetricsRecord {
  std::int64_t iteration = 0;
  double epoch = kEmpty;
  double lr = kEmpty;
  double train_loss = kEmpty;
  double test_loss = kEmpty;
  double test_accuracy = kEmpty;
  double consensus_distance = kEmpty;
  double norm_variance = kEmpty;
  double replica_accuracy_mean = kEmpty;
  double replica_accuracy_min = kEmpty;
  double replica_accuracy_max = kEmpty;
  double replica_loss_mean = kEmpty;
  std::vector<TensorMetrics> tensors;  ///< in the order of the file's tensor names
};

/// One row of replica_norms.csv: one replica at one evaluation.
struct ReplicaNormsRecord {
  std::int64_t iteration = 0;
  std::int64_t replica = 0;
  std::vector<double> norms;  ///< each tensor's L2 norm in this replica before averaging
};

/// One row of schedule.csv: the communication step of one iteration.
struct ScheduleRecord {
  std::int64_t iteration = 0;
  std::string graph;
  double signal = kEmpty;  ///< what an adaptive policy measured, where it did
};

/// One row of trace.csv: one iteration of the whole run. A synchronous step goes at the pace of its slowest
/// GPU, so each engine reports the iteration as its slowest (runtime) or mean (simulator) GPU saw it.
struct TraceRow {
  std::int64_t iteration = 0;
  std::string graph;        ///< as schedule.csv names it
  double compute_s = 0.0;   ///< the local step
  double comm_s = 0.0;      ///< communication not hidden behind compute, waiting for peers included
  double total_s = 0.0;     ///< the iteration
  double bytes_sent = 0.0;  ///< per GPU (mean)
  double elapsed_s = 0.0;   ///< the clock at the end of the iteration (trace_csv sums total_s)
};

/// One row of trace_worker.csv: one iteration of one GPU.
struct WorkerTraceRow {
  std::int64_t iteration = 0;
  std::int64_t worker = 0;
  double compute_s = 0.0;
  double comm_s = 0.0;
  double total_s = 0.0;
  double bytes_sent = 0.0;
  std::optional<double> loss;  ///< this GPU's batch loss, where the engine keeps it
  std::optional<double> lr;    ///< the learning rate used, where the engine keeps it
};

/// One row of accuracy_time.csv: one evaluation on the simulated clock.
struct AccuracyTimeRecord {
  std::int64_t iteration = 0;
  double simulated_time_s = 0.0;
  double test_accuracy = kEmpty;
  double test_loss = kEmpty;
  double train_loss = kEmpty;
  double consensus_distance = kEmpty;
};

/// The times of one row of trace.csv or trace_worker.csv, the columns both files share.
struct IterationTimes {
  double iteration = 0.0;
  double compute_s = kEmpty;
  double comm_s = kEmpty;
  double total_s = kEmpty;
};

/// metrics.csv's columns, then norm_mean:, norm_var: and consensus: per tensor.
const ColumnTable<MetricsRecord>& metrics_columns();
/// replica_norms.csv's columns, then one per tensor.
const ColumnTable<ReplicaNormsRecord>& replica_norms_columns();
/// schedule.csv's columns.
const ColumnTable<ScheduleRecord>& schedule_columns();
/// trace.csv's columns.
const ColumnTable<TraceRow>& trace_columns();
/// trace_worker.csv's columns.
const ColumnTable<WorkerTraceRow>& worker_trace_columns();
/// accuracy_time.csv's columns.
const ColumnTable<AccuracyTimeRecord>& accuracy_time_columns();

/// trace.csv of `rows`, each row's elapsed_s the sum of total_s up to it.
std::string trace_csv(std::span<const TraceRow> rows);

/// trace_worker.csv of `rows` (loss and lr empty where absent).
std::string worker_trace_csv(std::span<const WorkerTraceRow> rows);

/// accuracy_time.csv of `rows`.
std::string accuracy_time_csv(std::span<const AccuracyTimeRecord> rows);

/// Reads metrics.csv (`source` names it in errors); throws CsvError.
CsvRecords<MetricsRecord> read_metrics_csv(std::string_view text, std::string_view source);
/// Reads replica_norms.csv; throws CsvError.
CsvRecords<ReplicaNormsRecord> read_replica_norms_csv(std::string_view text, std::string_view source);
/// Reads schedule.csv; throws CsvError.
std::vector<ScheduleRecord> read_schedule_csv(std::string_view text, std::string_view source);
/// Reads trace.csv; throws CsvError.
std::vector<TraceRow> read_trace_csv(std::string_view text, std::string_view source);
/// Reads trace_worker.csv; throws CsvError.
std::vector<WorkerTraceRow> read_worker_trace_csv(std::string_view text, std::string_view source);
/// Reads the times of trace.csv or trace_worker.csv (empty cells NaN); throws CsvError for a missing column
/// or a cell that is not a number.
std::vector<IterationTimes> read_iteration_times(std::string_view text, std::string_view source);
/// Reads accuracy_time.csv; throws CsvError.
std::vector<AccuracyTimeRecord> read_accuracy_time_csv(std::string_view text, std::string_view source);

}  // namespace dbench::results
