// The column tables of a run directory's CSV files, their writers and their readers.
#include "results/run_csv.hpp"

#include <fmt/core.h>

#include <array>

namespace dbench::results {

const ColumnTable<MetricsRecord>& metrics_columns() {
  using R = MetricsRecord;
  // A reader needs the iteration and the averaged model's accuracy, norm variance and consensus distance; the
  // rest may be missing from files other tools wrote.
  static const ColumnTable<R> kTable{
      {
          count_column<R>("iteration", "iterations completed", &R::iteration),
          number_column<R>("epoch", "passes over each replica's own shard", &R::epoch, false),
          number_column<R>("lr", "learning rate of the last iteration", &R::lr, false),
          number_column<R>("train_loss", "mean over replicas of the last batch loss", &R::train_loss, false),
          number_column<R>("test_loss", "test loss of the averaged model", &R::test_loss, false),
          number_column<R>("test_accuracy", "test accuracy of the averaged model", &R::test_accuracy),
          number_column<R>("consensus_distance", "mean squared distance of the replicas to their average",
                           &R::consensus_distance),
          number_column<R>("norm_variance", "cross-replica variance of tensor norms", &R::norm_variance),
          number_column<R>("replica_accuracy_mean", "mean test accuracy of the replicas",
                           &R::replica_accuracy_mean, false),
          number_column<R>("replica_accuracy_min", "lowest replica test accuracy", &R::replica_accuracy_min,
                           false),
          number_column<R>("replica_accuracy_max", "highest replica test accuracy", &R::replica_accuracy_max,
                           false),
          number_column<R>("replica_loss_mean", "mean test loss of the replicas", &R::replica_loss_mean,
                           false),
      },
      ColumnGroup<R>{
          "tensor",
          {
              {"norm_mean:", "mean over replicas of the tensor's L2 norm",
               [](const R& r, std::size_t k) { return format_number(r.tensors[k].norm_mean); },
               [](R& r, std::size_t k, std::string_view field, const CellPlace& at) {
                 r.tensors[k].norm_mean = read_number_cell(field, at).value_or(kEmpty);
               }},
              {"norm_var:", "variance over replicas of the tensor's L2 norm",
               [](const R& r, std::size_t k) { return format_number(r.tensors[k].norm_var); },
               [](R& r, std::size_t k, std::string_view field, const CellPlace& at) {
                 r.tensors[k].norm_var = read_number_cell(field, at).value_or(kEmpty);
               }},
              {"consensus:", "the tensor's consensus distance",
               [](const R& r, std::size_t k) { return format_number(r.tensors[k].consensus); },
               [](R& r, std::size_t k, std::string_view field, const CellPlace& at) {
                 r.tensors[k].consensus = read_number_cell(field, at).value_or(kEmpty);
               }},
          },
          [](R& r, std::size_t keys) { r.tensors.resize(keys); },
      },
  };
  return kTable;
}

const ColumnTable<ReplicaNormsRecord>& replica_norms_columns() {
  using R = ReplicaNormsRecord;
  static const ColumnTable<R> kTable{
      {
          count_column<R>("iteration", "iterations completed", &R::iteration),
          count_column<R>("replica", "the replica (worker) index", &R::replica),
      },
      ColumnGroup<R>{
          "tensor",
          {
              {"", "the tensor's L2 norm in this replica before averaging",
               [](const R& r, std::size_t k) { return format_number(r.norms[k]); },
               [](R& r, std::size_t k, std::string_view field, const CellPlace& at) {
                 r.norms[k] = read_number_cell(field, at).value_or(kEmpty);
               }},
          },
          [](R& r, std::size_t keys) { r.norms.resize(keys, kEmpty); },
      },
  };
  return kTable;
}

const ColumnTable<ScheduleRecord>& schedule_columns() {
  using R = ScheduleRecord;
  static const ColumnTable<R> kTable{{
      count_column<R>("iteration", "the iteration", &R::iteration),
      text_column<R>("graph", "the communication graph or step it used", &R::graph),
      number_column<R>("signal", "what an adaptive policy measured (empty otherwise)", &R::signal, false),
  }};
  return kTable;
}

const ColumnTable<TraceRow>& trace_columns() {
  using R = TraceRow;
  static const ColumnTable<R> kTable{{
      count_column<R>("iteration", "the iteration", &R::iteration),
      text_column<R>("graph", "the graph it used, as schedule.csv names it", &R::graph),
      number_column<R>("compute_s", "the local step", &R::compute_s),
      number_column<R>("comm_s", "communication not hidden behind compute", &R::comm_s),
      number_column<R>("total_s", "the iteration", &R::total_s),
      number_column<R>("bytes_sent", "bytes sent per GPU (mean)", &R::bytes_sent),
      number_column<R>("elapsed_s", "the clock at the end of the iteration", &R::elapsed_s),
  }};
  return kTable;
}

const ColumnTable<WorkerTraceRow>& worker_trace_columns() {
  using R = WorkerTraceRow;
  static const ColumnTable<R> kTable{{
      count_column<R>("iteration", "the iteration", &R::iteration),
      count_column<R>("worker", "the GPU (worker) index", &R::worker),
      number_column<R>("compute_s", "this GPU's local step", &R::compute_s),
      number_column<R>("comm_s", "this GPU's communication not hidden behind compute", &R::comm_s),
      number_column<R>("total_s", "this GPU's iteration", &R::total_s),
      number_column<R>("bytes_sent", "bytes this GPU sent", &R::bytes_sent),
      optional_column<R>("loss", "this GPU's batch loss, where the engine keeps it", &R::loss),
      optional_column<R>("lr", "the learning rate used, where the engine keeps it", &R::lr),
  }};
  return kTable;
}

const ColumnTable<AccuracyTimeRecord>& accuracy_time_columns() {
  using R = AccuracyTimeRecord;
  static const ColumnTable<R> kTable{{
      count_column<R>("iteration", "iterations completed", &R::iteration),
      number_column<R>("simulated_time_s", "the simulated clock after them", &R::simulated_time_s),
      number_column<R>("test_accuracy", "test accuracy of the averaged model", &R::test_accuracy),
      number_column<R>("test_loss", "test loss of the averaged model", &R::test_loss),
      number_column<R>("train_loss", "mean over replicas of the last batch loss", &R::train_loss),
      number_column<R>("consensus_distance", "mean squared distance of the replicas to their average",
                       &R::consensus_distance),
  }};
  return kTable;
}

std::string trace_csv(std::span<const TraceRow> rows) {
  std::string out = csv_header(trace_columns());
  double elapsed = 0.0;
  for (TraceRow row : rows) {
    elapsed += row.total_s;
    row.elapsed_s = elapsed;
    out += csv_row(trace_columns(), row);
  }
  return out;
}

std::string worker_trace_csv(std::span<const WorkerTraceRow> rows) {
  return write_csv(worker_trace_columns(), rows);
}

std::string accuracy_time_csv(std::span<const AccuracyTimeRecord> rows) {
  return write_csv(accuracy_time_columns(), rows);
}

CsvRecords<MetricsRecord> read_metrics_csv(std::string_view text, std::string_view source) {
  return read_csv(metrics_columns(), text, source);
}

CsvRecords<ReplicaNormsRecord> read_replica_norms_csv(std::string_view text, std::string_view source) {
  return read_csv(replica_norms_columns(), text, source);
}

std::vector<ScheduleRecord> read_schedule_csv(std::string_view text, std::string_view source) {
  return read_csv(schedule_columns(), text, source).rows;
}

std::vector<TraceRow> read_trace_csv(std::string_view text, std::string_view source) {
  return read_csv(trace_columns(), text, source).rows;
}

std::vector<WorkerTraceRow> read_worker_trace_csv(std::string_view text, std::string_view source) {
  return read_csv(worker_trace_columns(), text, source).rows;
}

std::vector<IterationTimes> read_iteration_times(std::string_view text, std::string_view source) {
  // Only the shared columns count: the rest of either file is the other table's business.
  const CsvTable csv = parse_csv(text, source);
  std::vector<std::size_t> at;
  std::vector<std::string_view> names;
  for (const std::string_view name : {"iteration", "compute_s", "comm_s", "total_s"}) {
    const int column = csv.column(name);
    if (column < 0) {
      throw CsvError(fmt::format("{} lacks the column '{}'", source, name));
    }
    at.push_back(static_cast<std::size_t>(column));
    names.push_back(name);
  }
  std::vector<IterationTimes> rows;
  for (std::size_t r = 0; r < csv.rows.size(); ++r) {
    std::array<double, 4> cells{};
    for (std::size_t c = 0; c < 4; ++c) {
      cells[c] = read_number_cell(csv.rows[r][at[c]], CellPlace{source, r + 2, names[c]}).value_or(kEmpty);
    }
    rows.push_back({cells[0], cells[1], cells[2], cells[3]});
  }
  return rows;
}

std::vector<AccuracyTimeRecord> read_accuracy_time_csv(std::string_view text, std::string_view source) {
  return read_csv(accuracy_time_columns(), text, source).rows;
}

}  // namespace dbench::results
