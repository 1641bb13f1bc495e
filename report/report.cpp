// Reports of a sweep or of one run, rendered both as a self-contained report.html and as report.md with
// plots/. This file holds the report of one run and `write_report`, which stages everything in a hidden
// directory inside DIR and renames it into place at the end.
#include "report/report.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <system_error>
#include <utility>

#include "report/report_curves.hpp"
#include "report/report_document.hpp"
#include "report/report_plots.hpp"
#include "report/report_sweep.hpp"
#include "results/results_dir.hpp"
#include "results/results_tree.hpp"
#include "results/run_csv.hpp"
#include "results/summary_csv.hpp"
#include "results/summary_json.hpp"

namespace dbench::report {
namespace fs = std::filesystem;

namespace {

// The report of one run: what summary.json says, its curves from metrics.csv, and summary.json's keys.
Document run_report(const results::ResultsTree& tree, Plots& plots) {
  const fs::path& dir = tree.root();
  const results::SummaryJson summary =
      results::parse_summary_json(tree.read("summary.json"), tree.shown("summary.json").string());
  // Keys that only some runs carry (the model, the simulated platform).
  const auto text = [](const std::optional<std::string>& value) {
    return value.value_or(std::string(kNone));
  };
  const bool simulated = summary.engine == "sim";
  Document doc(
      fmt::format("DBench run report: {}", summary.name.empty() ? dir.filename().string() : summary.name));
  doc.paragraph(fmt::format(
      "{} in {}: {} ({}, {}) on {} workers, {} iterations; final test accuracy {} (best {}), {} s per "
      "iteration "
      "({}), {} samples/s.",
      simulated ? "Simulated run" : "Run", dir.string(), text(summary.model), summary.algorithm,
      summary.graph, summary.workers, summary.iterations,
      percent(summary.final_test_accuracy.value_or(results::kEmpty)),
      percent(summary.best_test_accuracy.value_or(results::kEmpty)), number(summary.seconds_per_iteration),
      simulated ? fmt::format("simulated on {}", text(summary.platform)) : std::string("measured"),
      number(summary.samples_per_second)));

  const Curve c = read_curve(tree, "");
  const std::string clock = simulated ? "simulated time (s)" : "time (s)";
  PlotSpec accuracy{"accuracy-iteration", "Test accuracy of the averaged model", "iteration",
                    "test accuracy (%)"};
  Series a{"averaged model", zip(c.iteration, c.accuracy, 100.0), "linespoints", std::string(kPalette[5])};
  accuracy.series.push_back(a);
  {
    // The replicas' own accuracy, where the run recorded it (files written before it was have no such
    // column).
    const auto metrics =
        results::read_metrics_csv(tree.read("metrics.csv"), tree.shown("metrics.csv").string());
    if (std::any_of(metrics.rows.begin(), metrics.rows.end(), [](const results::MetricsRecord& row) {
          return !std::isnan(row.replica_accuracy_mean);
        })) {
      Series r{"replicas (mean)", {}, "linespoints", std::string(kPalette[1]), true};
      for (const results::MetricsRecord& row : metrics.rows) {
        r.points.emplace_back(static_cast<double>(row.iteration), 100.0 * row.replica_accuracy_mean);
      }
      accuracy.series.push_back(std::move(r));
    }
  }
  PlotSpec by_time{"accuracy-time", fmt::format("Test accuracy against {}", clock), clock,
                   "test accuracy (%)"};
  a.points = zip(c.time_s, c.accuracy, 100.0);
  by_time.series.push_back(a);
  PlotSpec variance{"norm-variance", "Cross-replica variance of parameter-tensor norms", "iteration",
                    "norm variance (sum over tensors)"};
  variance.log_y = true;
  variance.series.push_back(
      {"norm variance", zip(c.iteration, c.norm_variance), "linespoints", std::string(kPalette[6])});
  drop_rounding_noise(variance.series);
  PlotSpec consensus{"consensus-distance", "Consensus distance: mean over replicas of |x_i - x_mean|^2",
                     "iteration", "consensus distance"};
  consensus.log_y = true;
  consensus.series.push_back({"consensus distance", zip(c.iteration, c.consensus_distance), "linespoints",
                              std::string(kPalette[3])});
  drop_rounding_noise(consensus.series);

  const std::array<std::pair<std::string, std::string>, 4> figures = {{
      {"accuracy-iteration", "Test accuracy against iteration."},
      {"accuracy-time", fmt::format("Test accuracy against {}.", clock)},
      {"norm-variance",
       "Norm variance against iteration (log scale; rounding noise below 1e-12 of the largest "
       "is not drawn)."},
      {"consensus-distance", "Consensus distance against iteration (log scale)."},
  }};
  for (auto* spec : {&accuracy, &by_time, &variance, &consensus}) {
    plots.add(std::move(*spec));
  }
  doc.heading("Curves");
  for (const auto& [name, caption] : figures) {
    if (plots.has(name)) {
      doc.figure(name, caption);
    } else {
      doc.paragraph(
          fmt::format("(No plot {}: no drawable values, e.g. centralized replicas stay identical.)", name));
    }
  }
  doc.heading("Summary");
  Table t{{"key", "value"}, {}};
  const nlohmann::json written = results::summary_json_object(summary);
  for (const auto& [key, v] : written.items()) {
    if (v.is_number_float()) {
      t.rows.push_back({key, number(v.get<double>(), 6)});
    } else if (v.is_primitive()) {
      t.rows.push_back({key, v.is_string() ? v.get<std::string>() : v.dump()});
    }
  }
  doc.table(std::move(t));
  return doc;
}

// Staging: everything is written under DIR/.report.tmp-<pid>-<random> (a results::StagingDir beside
// DIR/report, so that one a killed report left behind is removed by the next report into DIR) and moved into
// place at the end.
class Staging {
 public:
  /// The staging directory in `dir`, with its plots/ and work/ folders; registered with `cleanup` (when
  /// given) so that a stop signal removes it.
  Staging(const fs::path& dir, results::StagingCleanup* cleanup) : dir_(dir / "report", cleanup) {
    fs::create_directory(path() / "plots");
    fs::create_directory(path() / "work");
  }

  const fs::path& path() const { return dir_.path(); }

  /// Moves plots/, report.md and report.html into `dir`, report.html last: it is the file readers open.
  void commit(const fs::path& dir) const {
    const auto hold = dir_.hold();
    results::replace_directory(path() / "plots", dir / "plots", "plots");
    rename(path() / "report.md", dir / "report.md");
    rename(path() / "report.html", dir / "report.html");
  }

 private:
  static void rename(const fs::path& from, const fs::path& to) {
    std::error_code ec;
    fs::rename(from, to, ec);
    if (ec) {
      throw ReportError(fmt::format("cannot move {} into place: {}", to.string(), ec.message()));
    }
  }

  results::StagingDir dir_;
};

}  // namespace

ReportResult write_report(const fs::path& given, results::StagingCleanup* cleanup) {
  std::error_code ec;
  if (!fs::is_directory(given, ec)) {
    throw ReportError(fmt::format("{} is not a directory", given.string()));
  }
  fs::path dir = fs::absolute(given).lexically_normal();
  if (!dir.has_filename()) {
    dir = dir.parent_path();  // "." and "results/sweep/" name folders whose names title the report
  }
  // DIR is untrusted input: every file below is opened through the tree, which refuses paths out of DIR.
  const results::ResultsTree tree(dir);
  const bool sweep = tree.exists("summary.csv");
  const bool run = tree.exists("summary.json") && tree.exists("metrics.csv");
  if (!sweep && !run) {
    throw ReportError(fmt::format(
        "{} is neither a sweep directory (no summary.csv) nor a run's results directory (no summary.json and "
        "metrics.csv)",
        dir.string()));
  }
  // The report replaces report.html, report.md and plots/ in DIR: only DBench's own folders are written into.
  const std::string_view marker = sweep ? results::kSweepMarkerName : results::ResultsDir::kMarkerName;
  if (!fs::is_regular_file(fs::symlink_status(dir / marker, ec))) {
    throw ReportError(fmt::format(
        "refusing to write a report into {}: it has {} but no {} file, so it is not a folder DBench {} (a "
        "report replaces report.html, report.md and plots/ there); a folder written by an older DBench is "
        "taken once that file is created in it",
        dir.string(), sweep ? "summary.csv" : "summary.json", marker,
        sweep ? "ran a sweep in" : "wrote a run's results into"));
  }

  // Read and analyze everything before the first file is written, so that bad input changes nothing.
  Plots plots;
  Document doc("");
  std::vector<LeftOut> left_out;
  if (sweep) {
    SweepDocument sweep_doc = sweep_report(tree, plots);
    doc = std::move(sweep_doc.document);
    left_out = std::move(sweep_doc.left_out);
  } else {
    doc = run_report(tree, plots);
  }

  const Staging staging(dir, cleanup);
  const auto svgs = plots.render(staging.path() / "work", staging.path() / "plots");
  write_text(staging.path() / "report.md", doc.markdown());
  write_text(staging.path() / "report.html", doc.html(svgs));
  staging.commit(dir);

  ReportResult result;
  result.html = dir / "report.html";
  result.markdown = dir / "report.md";
  result.plots = static_cast<int>(svgs.size());
  result.sweep = sweep;
  result.left_out = std::move(left_out);
  for (const auto& spec : plots.specs()) {
    result.plot_names.push_back(spec.name);
  }
  return result;
}

}  // namespace dbench::report
