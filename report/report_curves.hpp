// A run's curves read from its CSV files (metrics.csv, and the clock from accuracy_time.csv or trace.csv)
// through the results tree, and their mean over seeds. Internal to the report.
#pragma once

#include <filesystem>
#include <vector>

namespace dbench::results {
class ResultsTree;
}  // namespace dbench::results

namespace dbench::report {

/// A run's evaluations: iteration, test accuracy of the averaged model, norm variance, consensus distance,
/// and the clock (simulated, or measured for dbench train) at each evaluation; NaN where unknown.
struct Curve {
  std::vector<double> iteration;
  std::vector<double> accuracy;
  std::vector<double> norm_variance;
  std::vector<double> consensus_distance;
  std::vector<double> time_s;
};

/// The curve of the run whose files are under `run_dir` (relative to the tree's root; empty for the root).
Curve read_curve(const results::ResultsTree& tree, const std::filesystem::path& run_dir);

/// Mean over runs at each iteration that some run evaluated (seeds of one label share the evaluation grid).
Curve mean_curve(const std::vector<Curve>& curves);

}  // namespace dbench::report
