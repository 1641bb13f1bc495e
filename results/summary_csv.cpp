// A sweep's summary.csv, whose leading columns are the sweep's contract; malformed input throws CsvError
// naming the file, line and column.
#include "results/summary_csv.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <set>
#include <system_error>

namespace dbench::results {

namespace {

constexpr double kUnbounded = std::numeric_limits<double>::max();

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

using R = SummaryRow;

// A number of the contract: written where finite, read within [min, max] (a fraction, a count, a non-negative
// measure: a value outside its range is damage, not data).
Column<R> number(std::string_view name, std::string_view doc, double R::*member, double min = 0.0,
                 double max = kUnbounded) {
  return {name, doc,
          [member](const R& r) {
            return std::isfinite(r.*member) ? fmt::format("{}", r.*member) : std::string();
          },
          [member, name, min, max](R& r, std::string_view field, const CellPlace& at) {
            r.*member = parse_in_range(std::string(field), at.source, at.line, name, min, max);
          }};
}

Column<R> status_column() {
  return {"status", "done | failed | pending", [](const R& r) { return text_field(r.status); },
          [](R& r, std::string_view field, const CellPlace& at) {
            r.status = read_text_field(field);
            if (r.status != "done" && r.status != "failed" && r.status != "pending") {
              throw CsvError(fmt::format("{}: line {}: status '{}' is not done, failed or pending", at.source,
                                         at.line, r.status));
            }
          }};
}

// An int holds the workers of any graph DBench builds; a count beyond it is damage, not a scale.
Column<R> workers_column() {
  return {"workers", "workers (GPUs) of the run", [](const R& r) { return std::to_string(r.workers); },
          [](R& r, std::string_view field, const CellPlace& at) {
            const double workers = parse_in_range(std::string(field), at.source, at.line, "workers", 1.0,
                                                  std::numeric_limits<int>::max());
            if (std::isnan(workers) ? r.done() : workers != std::floor(workers)) {
              throw CsvError(
                  fmt::format("{}: line {}: a done run needs a positive whole number of workers, not '{}'",
                              at.source, at.line, field));
            }
            r.workers = std::isnan(workers) ? 0 : static_cast<int>(workers);
          }};
}

// The seed as the config holds it: every digit of a 64-bit integer.
Column<R> seed_column() {
  return {
      "seed", "the run's seed", [](const R& r) { return r.seed ? std::to_string(*r.seed) : std::string(); },
      [](R& r, std::string_view field, const CellPlace& at) {
        const double value = parse_in_range(std::string(field), at.source, at.line, "seed", 0.0, kUnbounded);
        r.seed.reset();
        if (!std::isnan(value)) {
          std::uint64_t exact = 0;
          const auto [end, error] = std::from_chars(field.data(), field.data() + field.size(), exact);
          r.seed = error == std::errc() && end == field.data() + field.size()
                       ? exact
                       : static_cast<std::uint64_t>(value);
        }
      }};
}

}  // namespace

const ColumnTable<SummaryRow>& summary_columns() {
  static const ColumnTable<R> kTable{{
      text_column<R>("run", "folder name under runs/", &R::run),
      status_column(),
      text_column<R>("label", "the group a run belongs to; seeds are averaged per label", &R::label),
      text_column<R>("algorithm", "centralized | dpsgd", &R::algorithm),
      text_column<R>("graph", "graph kind or policy", &R::graph),
      workers_column(),
      seed_column(),
      number("final_test_accuracy", "test accuracy of the averaged model at the end", &R::final_test_accuracy,
             0.0, 1.0),
      number("best_test_accuracy", "best test accuracy over the evaluations", &R::best_test_accuracy, 0.0,
             1.0),
      number("final_test_loss", "test loss at the end", &R::final_test_loss),
      number("iterations", "iterations run", &R::iterations),
      number("edges", "mean undirected edges of the graphs used", &R::edges),
      number("mean_degree", "2 edges / workers", &R::mean_degree),
      number("spectral_gap", "mean spectral gap of the graphs used", &R::spectral_gap, 0.0, 1.0),
      number("norm_variance_mean", "cross-replica variance of tensor norms, mean over evaluations",
             &R::norm_variance_mean),
      number("norm_variance_final", "cross-replica variance of tensor norms at the end",
             &R::norm_variance_final),
      number("consensus_distance_mean", "consensus distance, mean over evaluations",
             &R::consensus_distance_mean),
      number("consensus_distance_final", "consensus distance at the end", &R::consensus_distance_final),
      number("target_accuracy", "the sweep's target accuracy", &R::target_accuracy, 0.0, 1.0),
      number("iterations_to_target", "first evaluation at or above the target", &R::iterations_to_target),
      number("simulated_time_to_target_s", "simulated clock at that evaluation",
             &R::simulated_time_to_target_s),
      number("seconds_per_iteration", "simulated or measured seconds per iteration",
             &R::seconds_per_iteration),
      number("samples_per_second", "training throughput", &R::samples_per_second),
      number("scaling_efficiency", "throughput against workers x one GPU's", &R::scaling_efficiency),
      number("bytes_per_gpu_per_iteration", "bytes each GPU sends per iteration",
             &R::bytes_per_gpu_per_iteration),
      number("bytes_per_gpu", "bytes each GPU sent over the run", &R::bytes_per_gpu),
      number("simulated_seconds", "the simulated run's length", &R::simulated_seconds),
      number("wall_seconds", "the run's wall-clock time", &R::wall_seconds),
      text_column<R>("timing_model", "the model whose time is simulated", &R::timing_model),
      text_column<R>("platform", "the simulated platform's name", &R::platform),
      number("parameters", "the timing model's parameter count", &R::parameters),
      number("epochs", "train.epochs when the budget is in epochs", &R::epochs),
      number("global_batch", "workers x batch_per_worker", &R::global_batch),
      number("train_samples", "the training set's size", &R::train_samples),
      number("samples", "samples trained on: iterations x global batch", &R::samples),
      number("peak_lr", "the learning rate after linear scaling", &R::peak_lr),
  }};
  return kTable;
}

std::span<const std::string_view> required_summary_columns() {
  static const std::vector<std::string_view> kNames = [] {
    std::vector<std::string_view> names;
    for (const auto& column : summary_columns().columns) {
      names.push_back(column.name);
    }
    return names;
  }();
  return kNames;
}

namespace {

// A grid axis named like a contract column ("algorithm", "seed") is written under this prefix, so that no
// two columns share a name.
constexpr std::string_view kAxisPrefix = "grid.";

bool contract_column(std::string_view name) {
  const auto columns = required_summary_columns();
  return std::find(columns.begin(), columns.end(), name) != columns.end();
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
  const ColumnTable<R>& columns = summary_columns();
  std::set<std::string_view> contract(required_summary_columns().begin(), required_summary_columns().end());
  std::vector<SummaryRow> runs;
  for (std::size_t r = 0; r < table.rows.size(); ++r) {
    const auto& row = table.rows[r];
    SummaryRow run;
    for (const Column<R>& column : columns.columns) {
      const auto at = static_cast<std::size_t>(table.column(column.name));
      column.read(run, row[at], CellPlace{source, r + 2, column.name});
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

namespace dbench::results {

std::string write_summary_csv(std::span<const SummaryRow> rows, std::span<const std::string> axis_keys) {
  std::string out;
  for (const auto& column : summary_columns().columns) {
    out += out.empty() ? "" : ",";
    out += text_field(column.name);
  }
  for (const std::string& key : axis_keys) {
    out += ',';
    out += text_field(summary_axis_column(key));
  }
  out += '\n';
  for (const SummaryRow& row : rows) {
    std::string line;
    for (const auto& column : summary_columns().columns) {
      line += line.empty() ? "" : ",";
      line += column.write(row);
    }
    for (const auto& [key, value] : row.axes) {
      line += ',';
      line += text_field(value);
    }
    out += line + '\n';
  }
  return out;
}

}  // namespace dbench::results
