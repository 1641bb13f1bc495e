// The tables `dbench validate` writes, each one record and one column table (results/columns.hpp):
// validation.csv (measured against simulated seconds per iteration) and accuracy.csv (the two curves).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "results/columns.hpp"

namespace dbench::results {

/// One part of an iteration in validation.csv (the whole iteration, compute, exposed communication): its
/// measured and simulated seconds per iteration and |simulated - measured| / measured, infinite where only
/// the measured time is 0.
struct ValidationTimes {
  double measured_s = 0.0;
  double simulated_s = 0.0;
  double relative_error = 0.0;
};

/// One row of validation.csv: one case, measured on the runtime and simulated on the calibrated platform.
struct ValidationRow {
  std::string case_name;  ///< algorithm/graph
  std::string algorithm;
  std::string graph;
  std::string model;
  std::int64_t workers = 0;
  ValidationTimes iteration;         ///< columns measured_s, simulated_s, relative_error
  ValidationTimes compute;           ///< columns measured_compute_s, simulated_compute_s, ...
  ValidationTimes comm;              ///< columns measured_comm_s, simulated_comm_s, ...
  double accuracy_difference = 0.0;  ///< largest |runtime - numerics| test accuracy
};

/// One row of accuracy.csv: one evaluation of one case on both engines.
struct AccuracyComparisonRow {
  double iteration = 0.0;
  std::string case_name;
  double runtime_test_accuracy = 0.0;
  double numerics_test_accuracy = 0.0;
};

/// validation.csv's columns.
const ColumnTable<ValidationRow>& validation_columns();
/// accuracy.csv's columns.
const ColumnTable<AccuracyComparisonRow>& accuracy_comparison_columns();

/// validation.csv of `rows`.
std::string validation_csv(std::span<const ValidationRow> rows);
/// accuracy.csv of `rows`.
std::string accuracy_comparison_csv(std::span<const AccuracyComparisonRow> rows);

/// Reads validation.csv; throws CsvError.
std::vector<ValidationRow> read_validation_csv(std::string_view text, std::string_view source);
/// Reads accuracy.csv; throws CsvError.
std::vector<AccuracyComparisonRow> read_accuracy_comparison_csv(std::string_view text,
                                                                std::string_view source);

}  // namespace dbench::results
