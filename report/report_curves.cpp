// A run's curves from its CSV files, read through the results tree so that no path leads out of DIR, and
// the mean curve over seeds.
#include "report/report_curves.hpp"

#include <fmt/core.h>

#include <cstdlib>
#include <map>
#include <string>

#include "analysis/statistics.hpp"
#include "report/report.hpp"
#include "results/results_tree.hpp"

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
    const RunTable t(tree, file);
    const std::size_t it = t.column("iteration");
    const std::size_t time = t.column("simulated_time_s");
    for (std::size_t r = 0; r < t.rows(); ++r) {
      times[t.number(r, it)] = t.number(r, time);
    }
  } else if (const fs::path trace = run_dir / "trace.csv"; tree.exists(trace)) {
    const RunTable t(tree, trace);
    const std::size_t it = t.column("iteration");
    const std::size_t elapsed = t.column("elapsed_s");
    times[0.0] = 0.0;
    for (std::size_t r = 0; r < t.rows(); ++r) {
      times[t.number(r, it) + 1.0] = t.number(r, elapsed);
    }
  }
  return times;
}

}  // namespace

RunTable::RunTable(const ResultsTree& tree, const fs::path& relative)
    : file_(tree.shown(relative)), table_(results::parse_csv(tree.read(relative), file_.string())) {}

std::size_t RunTable::column(std::string_view name) const {
  const int c = table_.column(name);
  if (c < 0) {
    throw ReportError(fmt::format("{} lacks the column '{}'", file_.string(), name));
  }
  return static_cast<std::size_t>(c);
}

std::optional<std::size_t> RunTable::optional_column(std::string_view name) const {
  const int c = table_.column(name);
  return c < 0 ? std::nullopt : std::optional<std::size_t>(static_cast<std::size_t>(c));
}

double RunTable::number(std::size_t row, std::size_t column) const {
  const std::string& text = table_.rows[row][column];
  if (text.empty()) {
    return kUndefined;
  }
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size()) {
    throw ReportError(fmt::format("{}: line {}: column '{}' holds '{}', which is not a number",
                                  file_.string(), row + 2, table_.header[column], text));
  }
  return value;
}

Curve read_curve(const ResultsTree& tree, const fs::path& run_dir) {
  const RunTable t(tree, run_dir / "metrics.csv");
  const std::size_t it = t.column("iteration");
  const std::size_t accuracy = t.column("test_accuracy");
  const std::size_t variance = t.column("norm_variance");
  const std::size_t consensus = t.column("consensus_distance");
  const auto times = evaluation_times(tree, run_dir);
  Curve c;
  for (std::size_t r = 0; r < t.rows(); ++r) {
    const double iteration = t.number(r, it);
    c.iteration.push_back(iteration);
    c.accuracy.push_back(t.number(r, accuracy));
    c.norm_variance.push_back(t.number(r, variance));
    c.consensus_distance.push_back(t.number(r, consensus));
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
