// Measured against simulated: per case (algorithm and graph), seconds per iteration and its compute and
// communication parts, relative errors, and the accuracy curves of the runtime and the numerics.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace dbench::validation {

/// One iteration's time and its parts, as trace.csv holds them.
struct PartTimes {
  double total_s = 0.0;    ///< seconds per iteration
  double compute_s = 0.0;  ///< forward + backward + fixed overhead
  double comm_s = 0.0;     ///< communication not hidden behind compute
};

/// The median of each of trace.csv's compute_s, comm_s and total_s over its rows, skipping the first
/// `warmup` iterations (caches and MPI connections still settling). Medians, because one descheduled
/// iteration on a shared machine would otherwise dominate a mean. Throws std::invalid_argument on a trace
/// without those columns or without rows after the warm-up.
PartTimes median_parts(std::string_view trace_csv, std::int64_t warmup);

/// One column of a CSV text by header name, as numbers; throws std::invalid_argument naming a missing one.
std::vector<double> csv_column(std::string_view csv, std::string_view column);

/// One validated case: the same config run by both engines.
struct ValidationCase {
  std::string algorithm;  ///< centralized | dpsgd
  std::string graph;      ///< all-reduce, ring, exponential, one-peer-exponential, ...
  std::string model;      ///< mlp, lenet, ...
  int workers = 0;
  PartTimes measured;                     ///< the runtime's trace
  PartTimes simulated;                    ///< the simulator's trace on the calibrated platform
  std::vector<double> iterations;         ///< metrics rows' iterations
  std::vector<double> runtime_accuracy;   ///< test_accuracy of the runtime, per metrics row
  std::vector<double> numerics_accuracy;  ///< test_accuracy of the simulator's numerics, per metrics row
};

/// |simulated - measured| / measured (0 when both are 0, infinity when only measured is).
double relative_error(double simulated, double measured);

/// Largest |runtime - numerics| test accuracy over the metrics rows; infinity when the curves differ in
/// length.
double accuracy_difference(const ValidationCase& c);

/// validation.json: per case the measured and simulated seconds per iteration and parts, their relative
/// errors and the accuracy difference; `max_relative_error` is the largest error of seconds per iteration,
/// `max_accuracy_difference` the largest accuracy difference.
nlohmann::json validation_json(std::span<const ValidationCase> cases);

/// The same table as Markdown (validation.md).
std::string validation_markdown(std::span<const ValidationCase> cases);

/// The same table as CSV (validation.csv), one row per case.
std::string validation_csv(std::span<const ValidationCase> cases);

/// accuracy.csv: iteration, case, runtime and numerics test accuracy side by side.
std::string accuracy_csv(std::span<const ValidationCase> cases);

}  // namespace dbench::validation
