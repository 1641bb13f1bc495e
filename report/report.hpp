#pragma once

#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

namespace dbench::results {
class StagingCleanup;
}  // namespace dbench::results

namespace dbench::report {

/// A report that cannot be written: the directory is neither a sweep nor a run, an input is missing or
/// malformed, or gnuplot is missing or failed. The message names the path or the tool.
class ReportError : public std::runtime_error {
 public:
  /// Wraps a complete, user-facing message.
  explicit ReportError(const std::string& message) : std::runtime_error(message) {}
};

/// A done run (named by its run cell in summary.csv) or a file that a report did not read, and why.
struct LeftOut {
  std::string what;    ///< e.g. "ring_w8_s1" or "sweep.toml"
  std::string reason;  ///< e.g. "no directory /data/sweep/runs/ring_w8_s1", or that its path leads out of DIR
};

/// What `write_report` produced.
struct ReportResult {
  std::filesystem::path html;           ///< report.html, self-contained (plots inline as SVG)
  std::filesystem::path markdown;       ///< report.md, plots referenced from plots/
  int plots = 0;                        ///< number of plots written
  bool sweep = false;                   ///< a sweep's report (false: a single run's)
  std::vector<std::string> plot_names;  ///< each plot is plots/<name>.svg
  std::vector<LeftOut> left_out;        ///< done runs whose curves are missing and files not read, with why
};

/// Writes report.html, report.md and plots/ into `dir`: a sweep's directory (summary.csv and runs/) or a
/// single run's results directory (summary.json and metrics.csv), holding the marker file DBench writes into
/// each (results::kSweepMarkerName, results::ResultsDir::kMarkerName); any other folder is refused. Plots are
/// drawn by gnuplot. Everything is staged first and moved into place at the end, so a failed report leaves
/// existing report files as they were. DIR is untrusted input: no file is opened through a path (a run cell,
/// a symlink) that leads out of it; a sweep's done run whose files cannot be read is left out of the curves
/// and listed in `left_out`. Throws ReportError, results::CsvError, results::ResultsTreeError,
/// results::SummaryJsonError or results::ResultsDirError naming what is missing, malformed or outside DIR, or
/// what cannot be written. Given `cleanup`, a stop signal removes the staging directory; one that a killed
/// report left in DIR is removed by the next report.
ReportResult write_report(const std::filesystem::path& dir, results::StagingCleanup* cleanup = nullptr);

}  // namespace dbench::report
