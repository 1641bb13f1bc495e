// The report of a timing-only sweep (`timing_only = true`): nothing was trained, so no accuracy, variance or
// verdicts; scaling efficiency against model size instead, per platform and scale. Internal to the report.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "report/report_document.hpp"
#include "results/summary_csv.hpp"

namespace dbench::report {

class Plots;

/// Whether `rows` are a timing-only sweep's: at least one run is done and no done run has an accuracy.
bool timing_only_sweep(const std::vector<results::SummaryRow>& rows);

/// The report of a timing-only sweep named `name`: for each platform and number of workers a plot of
/// scaling efficiency against the timing model's parameters (log scale), one series per communication (the
/// all-reduce, each graph; with the value of any further grid axis), and the table of those numbers; then
/// `sweep_toml`, the sweep config, when given. Its plots are added to `plots`.
Document timing_sweep_report(const std::string& name, const std::vector<results::SummaryRow>& rows,
                             const std::optional<std::string>& sweep_toml, Plots& plots);

}  // namespace dbench::report
