// The column tables of `dbench validate`'s CSV files.
#include "results/validation_csv.hpp"

namespace dbench::results {

const ColumnTable<ValidationRow>& validation_columns() {
  using R = ValidationRow;
  static const ColumnTable<R> kTable{{
      text_column<R>("case", "algorithm/graph", &R::case_name),
      text_column<R>("algorithm", "centralized | dpsgd", &R::algorithm),
      text_column<R>("graph", "the graph or all-reduce", &R::graph),
      text_column<R>("model", "the model trained", &R::model),
      count_column<R>("workers", "workers of both runs", &R::workers),
      measure_column<R>("measured_s", "measured seconds per iteration", &R::measured_s),
      measure_column<R>("simulated_s", "simulated seconds per iteration", &R::simulated_s),
      measure_column<R>("relative_error", "|simulated - measured| / measured", &R::relative_error),
      measure_column<R>("measured_compute_s", "measured compute per iteration", &R::measured_compute_s),
      measure_column<R>("simulated_compute_s", "simulated compute per iteration", &R::simulated_compute_s),
      measure_column<R>("compute_relative_error", "relative error of compute", &R::compute_relative_error),
      measure_column<R>("measured_comm_s", "measured exposed communication per iteration",
                        &R::measured_comm_s),
      measure_column<R>("simulated_comm_s", "simulated exposed communication per iteration",
                        &R::simulated_comm_s),
      measure_column<R>("comm_relative_error", "relative error of communication", &R::comm_relative_error),
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
