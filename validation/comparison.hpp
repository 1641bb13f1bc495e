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

/// Seconds per iteration and its parts from a trace: trace.csv (one row per iteration) or trace_worker.csv
/// (one row per iteration and worker). Per iteration the mean over its rows (workers), then the mean over
/// the iterations from `warmup` on, leaving out those in `skip` (iterations that also measured the replicas
/// for an evaluation). The mean over workers, not the slowest: workers sharing cores are descheduled in turn,
/// so each iteration has a slow worker while all keep the same pace; the slowest one's time summed over
/// iterations exceeds the run's wall time. Throws std::invalid_argument on a trace without the columns or
/// without iterations left.
PartTimes mean_parts(std::string_view trace_csv, std::int64_t warmup, std::span<const double> skip = {});

/// Several runs' parts, each part its own median over the runs (the upper middle of an even count): a run's
/// communication varies more than its total (one run of LeNet on 2 workers communicated 541 us against
/// 365-446 us in the four others of the same total), so the median run's parts would carry its spell.
/// Throws std::invalid_argument on no runs.
PartTimes median_parts(std::span<const PartTimes> runs);

/// The iterations of a run that measured its replicas: metrics.csv's `iteration` k > 0 is written after
/// iteration k - 1, which measured them.
std::vector<double> evaluation_iterations(std::string_view metrics_csv);

/// A run's evaluations, from its metrics.csv (read by results' metrics table): per row the iteration and the
/// averaged model's test accuracy (NaN where empty).
struct Evaluations {
  std::vector<double> iterations;
  std::vector<double> test_accuracy;
};

/// Reads metrics.csv's evaluations; throws std::invalid_argument saying why the text is not a metrics.csv.
Evaluations read_evaluations(std::string_view metrics_csv);

/// One validated case: the same config run by both engines.
struct ValidationCase {
  std::string algorithm;  ///< centralized | dpsgd
  std::string graph;      ///< all-reduce, ring, exponential, one-peer-exponential, ...
  std::string model;      ///< mlp, lenet, ...
  int workers = 0;
  /// The runtime's traces: each part the median over the runs (the upper middle one of an even count)
  PartTimes measured;
  std::vector<double> measured_runs;      ///< seconds per iteration of every runtime run, fastest first
  std::string measured_run;               ///< the median run's directory name
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
