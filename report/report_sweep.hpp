// The report of a sweep: overview, the study's observations, Ada, scaling, one section per scale, with the
// curves of its done runs. Internal to the report.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "report/report.hpp"
#include "report/report_document.hpp"

namespace dbench::results {
class ResultsTree;
}  // namespace dbench::results

namespace dbench::report {

class Plots;

/// A sweep's report, and the done runs and files it did not read.
struct SweepDocument {
  Document document;
  std::vector<LeftOut> left_out;
};

/// The report of the sweep in `tree` (summary.csv, runs/), its plots added to `plots`; a timing-only sweep's
/// is timing_sweep_report's (report_timing.hpp), the others the study's. A done run whose
/// files cannot be read is left out of the curves and listed. Throws ReportError naming summary.csv when its
/// analysis fails, and results::ResultsTreeError or results::CsvError when summary.csv cannot be read or
/// parsed.
SweepDocument sweep_report(const results::ResultsTree& tree, Plots& plots);

}  // namespace dbench::report
