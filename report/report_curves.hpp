// A run's curves read from its CSV files (metrics.csv, and the clock from accuracy_time.csv or trace.csv)
// through the results tree, and their mean over seeds. Internal to the report.
#pragma once

#include <cstddef>
#include <filesystem>
#include <optional>
#include <string_view>
#include <vector>

#include "results/csv.hpp"

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

/// A CSV file of a run, read through the results tree: columns by name and number cells, with errors that
/// name the file, the line and the column.
class RunTable {
 public:
  /// Reads and parses `relative` (a path inside the tree); throws results::ResultsTreeError or
  /// results::CsvError.
  RunTable(const results::ResultsTree& tree, const std::filesystem::path& relative);

  /// The number of data rows.
  std::size_t rows() const { return table_.rows.size(); }

  /// The column `name`; throws ReportError naming the file and the column when it is missing.
  std::size_t column(std::string_view name) const;

  /// The column `name`, or nullopt when the file has none.
  std::optional<std::size_t> optional_column(std::string_view name) const;

  /// The number in a cell (NaN when empty); throws ReportError naming the cell when it is not a number.
  double number(std::size_t row, std::size_t column) const;

  /// The text of a cell.
  const std::string& text(std::size_t row, std::size_t column) const { return table_.rows[row][column]; }

 private:
  std::filesystem::path file_;
  results::CsvTable table_;
};

/// The curve of the run whose files are under `run_dir` (relative to the tree's root; empty for the root).
Curve read_curve(const results::ResultsTree& tree, const std::filesystem::path& run_dir);

/// Mean over runs at each iteration that some run evaluated (seeds of one label share the evaluation grid).
Curve mean_curve(const std::vector<Curve>& curves);

}  // namespace dbench::report
