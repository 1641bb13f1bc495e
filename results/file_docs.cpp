#include "results/file_docs.hpp"

#include <string_view>
#include <vector>

#include "results/graphs_csv.hpp"
#include "results/run_csv.hpp"
#include "results/summary_csv.hpp"
#include "results/summary_json.hpp"
#include "results/validation_csv.hpp"

namespace dbench::results {
namespace {

/// A table cell: pipes escaped so that a meaning never splits the row.
std::string cell(std::string_view text) {
  std::string out;
  for (const char c : text) {
    if (c == '|') {
      out += "\\|";
    } else {
      out += c;
    }
  }
  return out;
}

/// One CSV file's section.
template <class R>
std::string csv_section(std::string_view file, std::string_view row, const ColumnTable<R>& table) {
  std::string text =
      "## `" + std::string(file) + "`\n\n" + std::string(row) + "\n\n| column | meaning |\n|---|---|\n";
  for (const ColumnDoc& column : documented_columns(table)) {
    text += "| `" + cell(column.name) + "` | " + cell(column.doc) + " |\n";
  }
  return text + "\n";
}

}  // namespace

std::string results_files_markdown() {
  std::string text =
      "# The files a run and a sweep write\n\n"
      "Made from the tables in `results/` that write and read these files (a test keeps this page equal to "
      "them: after changing a table, run `DBENCH_UPDATE_DOCS=1 build/tests/results/dbench_tests_results "
      "-tc='results::docs*'`). Numbers are written in the shortest form that reads back to the same value; "
      "an empty cell is a value the run did not have. `<tensor>` stands for each parameter tensor's name.\n\n"
      "A run directory (`dbench simulate`, `dbench train`) holds `config.toml` (the resolved config), "
      "`summary.json`, `metrics.csv`, `schedule.csv`, `trace.csv` and, as the run asks, `replica_norms.csv`, "
      "`trace_worker.csv` and `accuracy_time.csv`. A sweep directory holds `summary.csv` and a run directory "
      "per run under `runs/`.\n\n";
  text +=
      "## `summary.json`\n\nThe run's summary, written last: a run without it did not finish.\n\n"
      "| key | type | meaning |\n|---|---|---|\n";
  for (const KeyDoc& key : documented_keys(summary_json_keys())) {
    text += "| `" + cell(key.name) + "` | " + cell(key.type) + " | " + cell(key.doc) + " |\n";
  }
  text += "\n";
  text += csv_section("metrics.csv", "A row per evaluation (iteration 0 is the initial state).",
                      metrics_columns());
  text += csv_section("replica_norms.csv", "A row per replica and evaluation: the L2 norm of each tensor.",
                      replica_norms_columns());
  text += csv_section("schedule.csv", "A row per iteration: the communication the schedule chose.",
                      schedule_columns());
  text += csv_section("trace.csv", "A row per iteration: its time and its parts.", trace_columns());
  text += csv_section("trace_worker.csv", "A row per iteration and GPU (worker).", worker_trace_columns());
  text += csv_section("accuracy_time.csv", "A row per evaluation, against the simulated (or measured) time.",
                      accuracy_time_columns());
  text +=
      csv_section("summary.csv",
                  "A sweep's row per run; after these columns come the sweep's grid axes, one column each "
                  "(`grid.NAME` where an axis is named like a column above).",
                  summary_columns());
  text += csv_section("graphs.csv", "`dbench graphs`: a row per communication graph.", graphs_columns());
  text += csv_section("validation.csv", "`dbench validate`: a row per case, measured against simulated.",
                      validation_columns());
  text += csv_section("accuracy.csv", "`dbench validate`: a row per evaluation of a case on both engines.",
                      accuracy_comparison_columns());
  return text;
}

}  // namespace dbench::results
