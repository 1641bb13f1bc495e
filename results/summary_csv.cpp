// A sweep's summary.csv, whose leading columns are the sweep's contract; malformed input throws CsvError
// naming the file, line and column.
#include "results/summary_csv.hpp"

#include <fmt/core.h>

#include <array>
#include <charconv>
#include <cmath>
#include <set>
#include <system_error>

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

// The numeric columns of the contract and where each lands in a SummaryRow.
struct NumberColumn {
  std::string_view name;
  double SummaryRow::*member;
};

constexpr std::array<NumberColumn, 27> kNumberColumns = {{
    {"seed", &SummaryRow::seed},
    {"final_test_accuracy", &SummaryRow::final_test_accuracy},
    {"best_test_accuracy", &SummaryRow::best_test_accuracy},
    {"final_test_loss", &SummaryRow::final_test_loss},
    {"iterations", &SummaryRow::iterations},
    {"edges", &SummaryRow::edges},
    {"mean_degree", &SummaryRow::mean_degree},
    {"spectral_gap", &SummaryRow::spectral_gap},
    {"norm_variance_mean", &SummaryRow::norm_variance_mean},
    {"norm_variance_final", &SummaryRow::norm_variance_final},
    {"consensus_distance_mean", &SummaryRow::consensus_distance_mean},
    {"consensus_distance_final", &SummaryRow::consensus_distance_final},
    {"target_accuracy", &SummaryRow::target_accuracy},
    {"iterations_to_target", &SummaryRow::iterations_to_target},
    {"simulated_time_to_target_s", &SummaryRow::simulated_time_to_target_s},
    {"seconds_per_iteration", &SummaryRow::seconds_per_iteration},
    {"samples_per_second", &SummaryRow::samples_per_second},
    {"scaling_efficiency", &SummaryRow::scaling_efficiency},
    {"bytes_per_gpu_per_iteration", &SummaryRow::bytes_per_gpu_per_iteration},
    {"bytes_per_gpu", &SummaryRow::bytes_per_gpu},
    {"simulated_seconds", &SummaryRow::simulated_seconds},
    {"parameters", &SummaryRow::parameters},
    {"epochs", &SummaryRow::epochs},
    {"global_batch", &SummaryRow::global_batch},
    {"train_samples", &SummaryRow::train_samples},
    {"samples", &SummaryRow::samples},
    {"peak_lr", &SummaryRow::peak_lr},
}};

double parse_number(const std::string& field, std::string_view source, std::size_t line,
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
  double value = 0.0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size()) {
    throw CsvError(fmt::format("{}: line {}: column '{}' holds '{}', which is not a number", source, line,
                               column, field));
  }
  return value;
}

}  // namespace

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
    run.run = row[text_column("run")];
    run.status = row[text_column("status")];
    run.label = row[text_column("label")];
    run.algorithm = row[text_column("algorithm")];
    run.graph = row[text_column("graph")];
    run.timing_model = row[text_column("timing_model")];
    run.platform = row[text_column("platform")];
    if (run.status != "done" && run.status != "failed" && run.status != "pending") {
      throw CsvError(
          fmt::format("{}: line {}: status '{}' is not done, failed or pending", source, line, run.status));
    }
    const double workers = parse_number(row[text_column("workers")], source, line, "workers");
    if (run.done() && !(workers >= 1.0 && workers == std::floor(workers))) {
      throw CsvError(fmt::format("{}: line {}: a done run needs a positive whole number of workers, not '{}'",
                                 source, line, row[text_column("workers")]));
    }
    run.workers = std::isfinite(workers) ? static_cast<int>(workers) : 0;
    for (const auto& column : kNumberColumns) {
      run.*column.member = parse_number(row[text_column(column.name)], source, line, column.name);
    }
    run.wall_seconds = parse_number(row[text_column("wall_seconds")], source, line, "wall_seconds");
    for (std::size_t c = 0; c < table.header.size(); ++c) {
      if (!contract.contains(table.header[c])) {
        run.axes.emplace_back(table.header[c], row[c]);
      }
    }
    runs.push_back(std::move(run));
  }
  return runs;
}

}  // namespace dbench::results
