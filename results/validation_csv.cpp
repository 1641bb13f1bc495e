// The column tables of `dbench validate`'s CSV files.
#include "results/validation_csv.hpp"

namespace dbench::results {
namespace {

// A measure column of one member of one of a row's ValidationTimes.
Column<ValidationRow> times_column(std::string_view name, std::string_view doc,
                                   ValidationTimes ValidationRow::*part, double ValidationTimes::*member) {
  return {name, doc, [part, member](const ValidationRow& r) { return format_measure(r.*part.*member); },
          [part, member](ValidationRow& r, std::string_view field, const CellPlace& at) {
            r.*part.*member = read_measure_cell(field, at);
          }};
}

}  // namespace

const ColumnTable<ValidationRow>& validation_columns() {
  using R = ValidationRow;
  using T = ValidationTimes;
  static const ColumnTable<R> kTable{{
      text_column<R>("case", "algorithm/graph", &R::case_name),
      text_column<R>("algorithm", "centralized | dpsgd", &R::algorithm),
      text_column<R>("graph", "the graph or all-reduce", &R::graph),
      text_column<R>("model", "the model trained", &R::model),
      count_column<R>("workers", "workers of both runs", &R::workers),
      times_column("measured_s", "measured seconds per iteration", &R::iteration, &T::measured_s),
      times_column("simulated_s", "simulated seconds per iteration", &R::iteration, &T::simulated_s),
      times_column("relative_error", "|simulated - measured| / measured", &R::iteration, &T::relative_error),
      times_column("measured_compute_s", "measured compute per iteration", &R::compute, &T::measured_s),
      times_column("simulated_compute_s", "simulated compute per iteration", &R::compute, &T::simulated_s),
      times_column("compute_relative_error", "relative error of compute", &R::compute, &T::relative_error),
      times_column("measured_comm_s", "measured exposed communication per iteration", &R::comm,
                   &T::measured_s),
      times_column("simulated_comm_s", "simulated exposed communication per iteration", &R::comm,
                   &T::simulated_s),
      times_column("comm_relative_error", "relative error of communication", &R::comm, &T::relative_error),
      measure_column<R>("accuracy_difference", "largest |runtime - numerics| test accuracy",
                        &R::accuracy_difference),
  }};
  return kTable;
}

const ColumnTable<AccuracyComparisonRow>& accuracy_comparison_columns() {
  using R = AccuracyComparisonRow;
  static const ColumnTable<R> kTable{{
      measure_column<R>("iteration", "iterations completed", &R::iteration),
      text_column<R>("case", "algorithm/graph", &R::case_name),
      measure_column<R>("runtime_test_accuracy", "the runtime's averaged model", &R::runtime_test_accuracy),
      measure_column<R>("numerics_test_accuracy", "the simulator's numerics", &R::numerics_test_accuracy),
  }};
  return kTable;
}

std::string validation_csv(std::span<const ValidationRow> rows) {
  return write_csv(validation_columns(), rows);
}

std::string accuracy_comparison_csv(std::span<const AccuracyComparisonRow> rows) {
  return write_csv(accuracy_comparison_columns(), rows);
}

std::vector<ValidationRow> read_validation_csv(std::string_view text, std::string_view source) {
  return read_csv(validation_columns(), text, source).rows;
}

std::vector<AccuracyComparisonRow> read_accuracy_comparison_csv(std::string_view text,
                                                                std::string_view source) {
  return read_csv(accuracy_comparison_columns(), text, source).rows;
}

}  // namespace dbench::results
