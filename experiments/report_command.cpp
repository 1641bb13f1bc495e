// `dbench report DIR`: the report of a sweep or of one run, written into the directory itself.
#include <fmt/core.h>

#include <memory>
#include <string>

#include "experiments/commands.hpp"
#include "experiments/signal_cleanup.hpp"
#include "report/report.hpp"

namespace dbench::experiments {

void add_report_command(CLI::App& app) {
  // Owned by the callback, so the option lives as long as the App that parses into it.
  auto dir = std::make_shared<std::string>();
  CLI::App* command = app.add_subcommand(
      "report",
      "Write report.html (self-contained, plots inline as SVG), report.md and plots/ into DIR: a sweep's "
      "directory (summary.csv, runs/) or one run's results directory (summary.json, metrics.csv). Plots are "
      "drawn with gnuplot; a failed report leaves existing report files unchanged.");
  command->add_option("DIR", *dir, "sweep or results directory")->required();
  command->callback([dir] {
    SignalCleanup cleanup;  // a stop signal removes the report's staging directory
    const report::ReportResult result = report::write_report(*dir, &cleanup);
    for (const auto& left_out : result.left_out) {
      fmt::print(stderr, "dbench report: left out {}: {}\n", left_out.what, left_out.reason);
    }
    fmt::print("report: {} ({} plots), {}\n", result.html.string(), result.plots, result.markdown.string());
  });
}

}  // namespace dbench::experiments
