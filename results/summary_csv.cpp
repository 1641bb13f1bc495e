// A sweep's summary.csv, whose leading columns are the sweep's contract; malformed input throws CsvError
// naming the file, line and column.
#include "results/summary_csv.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <optional>
#include <set>

namespace dbench::results {

std::span<const std::string_view> required_summary_columns() {
  static constexpr std::array<std::string_view, 36> kColumns = {
      "run",
      "status",
      "label",
      "algorithm",
      "graph",
      "workers",
      "seed",
      "final_test_accuracy",
      "best_test_accuracy",
      "final_test_loss",
      "iterations",
      "edges",
      "mean_degree",
      "spectral_gap",
      "norm_variance_mean",
      "norm_variance_final",
      "consensus_distance_mean",
      "consensus_distance_final",
      "target_accuracy",
      "iterations_to_target",
      "simulated_time_to_target_s",
      "seconds_per_iteration",
      "samples_per_second",
      "scaling_efficiency",
      "bytes_per_gpu_per_iteration",
      "bytes_per_gpu",
      "simulated_seconds",
      "wall_seconds",
      "timing_model",
      "platform",
      "parameters",
      "epochs",
      "global_batch",
      "train_samples",
      "samples",
      "peak_lr",
  };
  return kColumns;
}

namespace {

constexpr double kUnbounded = std::numeric_limits<double>::max();

// The numeric columns of the contract, where each lands in a SummaryRow and the range its values must lie in
// (a fraction, a count, a non-negative measure): a value outside it is damage, not data.
struct NumberColumn {
  std::string_view name;
  double SummaryRow::*member;
  double min = 0.0;
  double max = kUnbounded;
};

constexpr std::array<NumberColumn, 28> kNumberColumns = {{
    {"seed", &SummaryRow::seed},
    {"final_test_accuracy", &SummaryRow::final_test_accuracy, 0.0, 1.0},
    {"best_test_accuracy", &SummaryRow::best_test_accuracy, 0.0, 1.0},
    {"final_test_loss", &SummaryRow::final_test_loss},
    {"iterations", &SummaryRow::iterations},
    {"edges", &SummaryRow::edges},
    {"mean_degree", &SummaryRow::mean_degree},
    {"spectral_gap", &SummaryRow::spectral_gap, 0.0, 1.0},
    {"norm_variance_mean", &SummaryRow::norm_variance_mean},
    {"norm_variance_final", &SummaryRow::norm_variance_final},
    {"consensus_distance_mean", &SummaryRow::consensus_distance_mean},
    {"consensus_distance_final", &SummaryRow::consensus_distance_final},
    {"target_accuracy", &SummaryRow::target_accuracy, 0.0, 1.0},
    {"iterations_to_target", &SummaryRow::iterations_to_target},
    {"simulated_time_to_target_s", &SummaryRow::simulated_time_to_target_s},
    {"seconds_per_iteration", &SummaryRow::seconds_per_iteration},
    {"samples_per_second", &SummaryRow::samples_per_second},
    {"scaling_efficiency", &SummaryRow::scaling_efficiency},
    {"bytes_per_gpu_per_iteration", &SummaryRow::bytes_per_gpu_per_iteration},
    {"bytes_per_gpu", &SummaryRow::bytes_per_gpu},
    {"simulated_seconds", &SummaryRow::simulated_seconds},
    {"wall_seconds", &SummaryRow::wall_seconds},
    {"parameters", &SummaryRow::parameters},
    {"epochs", &SummaryRow::epochs},
    {"global_batch", &SummaryRow::global_batch},
    {"train_samples", &SummaryRow::train_samples},
    {"samples", &SummaryRow::samples},
    {"peak_lr", &SummaryRow::peak_lr},
}};

// A grid axis named like a contract column ("algorithm", "seed") is written under this prefix, so that no
// two columns share a name.
constexpr std::string_view kAxisPrefix = "grid.";

bool contract_column(std::string_view name) {
  const auto columns = required_summary_columns();
  return std::find(columns.begin(), columns.end(), name) != columns.end();
}

// A summary.csv number: empty (or "nan", as older sweeps wrote an unknown value, spaces around allowed) or a
// finite number read by the one parser.
double read_summary_number(const std::string& field, std::string_view source, std::size_t line,
                           std::string_view column) {
  std::string_view text(field);
  while (!text.empty() && text.front() == ' ') {
    text.remove_prefix(1);
  }
  while (!text.empty() && text.back() == ' ') {
    text.remove_suffix(1);
  }
  if (text.empty() || text == "nan" || text == "NaN") {
    return kEmpty;
  }
  const std::optional<double> value = parse_number(text);
  if (!value) {
    throw CsvError(fmt::format("{}: line {}: column '{}' holds '{}', which is not a finite number", source,
                               line, column, field));
  }
  return *value;
}

// read_summary_number, within [min, max].
double parse_in_range(const std::string& field, std::string_view source, std::size_t line,
                      std::string_view column, double min, double max) {
  const double value = read_summary_number(field, source, line, column);
  if (value < min || value > max) {
    throw CsvError(fmt::format("{}: line {}: column '{}' holds {}, outside [{}, {}]", source, line, column,
                               field, min, max == kUnbounded ? std::string("inf") : fmt::format("{}", max)));
  }
  return value;
}

}  // namespace

std::string summary_axis_column(std::string_view key) {
  return contract_column(key) ? std::string(kAxisPrefix) + std::string(key) : std::string(key);
}

std::string summary_axis_key(std::string_view column) {
  if (column.starts_with(kAxisPrefix) && contract_column(column.substr(kAxisPrefix.size()))) {
    column.remove_prefix(kAxisPrefix.size());
  }
  return std::string(column);
}

std::vector<SummaryRow> parse_summary_csv(std::string_view text, std::string_view source) {
  const CsvTable table = parse_csv(text, source);
  for (std::string_view name : required_summary_columns()) {
    if (table.column(name) < 0) {
      throw CsvError(fmt::format("{} lacks the column '{}'", source, name));
    }
  }
  const auto text_column = [&](std::string_view name) {
    return static_cast<std::size_t>(table.column(name));
  };
  std::set<std::string_view> contract(required_summary_columns().begin(), required_summary_columns().end());
  std::vector<SummaryRow> runs;
  for (std::size_t r = 0; r < table.rows.size(); ++r) {
    const auto& row = table.rows[r];
    const std::size_t line = r + 2;
    SummaryRow run;
    run.run = read_text_field(row[text_column("run")]);
    run.status = read_text_field(row[text_column("status")]);
    run.label = read_text_field(row[text_column("label")]);
    run.algorithm = read_text_field(row[text_column("algorithm")]);
    run.graph = read_text_field(row[text_column("graph")]);
    run.timing_model = read_text_field(row[text_column("timing_model")]);
    run.platform = read_text_field(row[text_column("platform")]);
    if (run.status != "done" && run.status != "failed" && run.status != "pending") {
      throw CsvError(
          fmt::format("{}: line {}: status '{}' is not done, failed or pending", source, line, run.status));
    }
    // An int holds the workers of any graph DBench builds; a count beyond it is damage, not a scale.
    const double workers = parse_in_range(row[text_column("workers")], source, line, "workers", 1.0,
                                          std::numeric_limits<int>::max());
    if (std::isnan(workers) ? run.done() : workers != std::floor(workers)) {
      throw CsvError(fmt::format("{}: line {}: a done run needs a positive whole number of workers, not '{}'",
                                 source, line, row[text_column("workers")]));
    }
    run.workers = std::isnan(workers) ? 0 : static_cast<int>(workers);
    for (const auto& column : kNumberColumns) {
      run.*column.member =
          parse_in_range(row[text_column(column.name)], source, line, column.name, column.min, column.max);
    }
    for (std::size_t c = 0; c < table.header.size(); ++c) {
      if (!contract.contains(table.header[c])) {
        run.axes.emplace_back(summary_axis_key(table.header[c]), read_text_field(row[c]));
      }
    }
    runs.push_back(std::move(run));
  }
  return runs;
}

}  // namespace dbench::results
