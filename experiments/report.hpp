#pragma once

#include <filesystem>

namespace dbench::experiments {

/// What `write_report` produced.
struct ReportResult {
  std::filesystem::path html;      ///< report.html, self-contained (plots inline as SVG)
  std::filesystem::path markdown;  ///< report.md, plots referenced from plots/
  int plots = 0;                   ///< number of plots written
};

/// Writes report.html, report.md and plots/ into `dir`: a sweep's directory (summary.csv and runs/) or a
/// single run's results directory (summary.json and metrics.csv). Throws std::runtime_error naming what is
/// missing or malformed.
ReportResult write_report(const std::filesystem::path& dir);

}  // namespace dbench::experiments
