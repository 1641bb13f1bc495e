// A run's curves from its CSV files, read through the results tree so that no path leads out of DIR, and
// the mean curve over seeds.
#include "report/report_curves.hpp"

#include <fmt/core.h>

#include <map>
#include <string>

#include "analysis/statistics.hpp"
#include "report/report.hpp"
#include "results/results_tree.hpp"
#include "results/run_csv.hpp"

namespace dbench::report {
namespace fs = std::filesystem;
using analysis::kUndefined;
using analysis::spread;
using results::ResultsTree;
namespace {

// Clock at each evaluation: accuracy_time.csv where the simulator wrote it, otherwise trace.csv, whose row i
// ends iteration i (so an evaluation after k iterations reads row k - 1).
std::map<double, double> evaluation_times(const ResultsTree& tree, const fs::path& run_dir) {
  std::map<double, double> times;
  if (const fs::path file = run_dir / "accuracy_time.csv"; tree.exists(file)) {
    for (const auto& row : results::read_accuracy_time_csv(tree.read(file), tree.shown(file).string())) {
      times[static_cast<double>(row.iteration)] = row.simulated_time_s;
    }
  } else if (const fs::path trace = run_dir / "trace.csv"; tree.exists(trace)) {
    times[0.0] = 0.0;
    for (const auto& row : results::read_trace_csv(tree.read(trace), tree.shown(trace).string())) {
      times[static_cast<double>(row.iteration) + 1.0] = row.elapsed_s;
    }
  }
  return times;
}

}  // namespace

Curve read_curve(const ResultsTree& tree, const fs::path& run_dir) {
  const fs::path file = run_dir / "metrics.csv";
  const auto metrics = results::read_metrics_csv(tree.read(file), tree.shown(file).string());
  const auto times = evaluation_times(tree, run_dir);
  Curve c;
  for (const results::MetricsRecord& row : metrics.rows) {
    const auto iteration = static_cast<double>(row.iteration);
    c.iteration.push_back(iteration);
    c.accuracy.push_back(row.test_accuracy);
    c.norm_variance.push_back(row.norm_variance);
    c.consensus_distance.push_back(row.consensus_distance);
    const auto time = times.find(iteration);
    c.time_s.push_back(time == times.end() ? kUndefined : time->second);
  }
  return c;
}

Curve mean_curve(const std::vector<Curve>& curves) {
  struct Sums {
    std::vector<double> accuracy, norm_variance, consensus_distance, time_s;
  };
  std::map<double, Sums> by_iteration;
  for (const auto& c : curves) {
    for (std::size_t i = 0; i < c.iteration.size(); ++i) {
      Sums& s = by_iteration[c.iteration[i]];
      s.accuracy.push_back(c.accuracy[i]);
      s.norm_variance.push_back(c.norm_variance[i]);
      s.consensus_distance.push_back(c.consensus_distance[i]);
      s.time_s.push_back(c.time_s[i]);
    }
  }
  Curve mean;
  for (const auto& [iteration, s] : by_iteration) {
    mean.iteration.push_back(iteration);
    mean.accuracy.push_back(spread(s.accuracy).mean);
    mean.norm_variance.push_back(spread(s.norm_variance).mean);
    mean.consensus_distance.push_back(spread(s.consensus_distance).mean);
    mean.time_s.push_back(spread(s.time_s).mean);
  }
  return mean;
}

}  // namespace dbench::report
