#include "validation/comparison.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <map>
#include <stdexcept>
#include <string>

#include "results/csv.hpp"
#include "results/number.hpp"
#include "results/run_csv.hpp"
#include "results/validation_csv.hpp"

namespace dbench::validation {
namespace {

std::string case_name(const ValidationCase& c) {
  return fmt::format("{}/{}", c.algorithm, c.graph);
}

}  // namespace

Evaluations read_evaluations(std::string_view metrics_csv) {
  results::CsvRecords<results::MetricsRecord> records;
  try {
    records = results::read_metrics_csv(metrics_csv, "metrics.csv");
  } catch (const results::CsvError& e) {
    throw std::invalid_argument(e.what());
  }
  Evaluations evaluations;
  for (const results::MetricsRecord& row : records.rows) {
    evaluations.iterations.push_back(static_cast<double>(row.iteration));
    evaluations.test_accuracy.push_back(row.test_accuracy);
  }
  return evaluations;
}

PartTimes mean_parts(std::string_view trace_csv, std::int64_t warmup, std::span<const double> skip) {
  std::vector<results::IterationTimes> rows;
  try {
    rows = results::read_iteration_times(trace_csv, "trace");
  } catch (const results::CsvError& e) {
    throw std::invalid_argument(e.what());
  }
  // Per iteration: sums over its rows and the row count.
  std::map<double, std::array<double, 4>> per_iteration;
  for (const results::IterationTimes& row : rows) {
    if (row.iteration < static_cast<double>(warmup) ||
        std::find(skip.begin(), skip.end(), row.iteration) != skip.end()) {
      continue;
    }
    auto& sums = per_iteration[row.iteration];
    sums[0] += row.compute_s;
    sums[1] += row.comm_s;
    sums[2] += row.total_s;
    sums[3] += 1.0;
  }
  if (per_iteration.empty()) {
    throw std::invalid_argument(fmt::format(
        "trace: {} rows, no iteration left after {} warm-up iterations and {} evaluation iterations",
        rows.size(), warmup, skip.size()));
  }
  PartTimes parts;
  const auto count = static_cast<double>(per_iteration.size());
  for (const auto& [iteration, sums] : per_iteration) {
    parts.compute_s += sums[0] / sums[3] / count;
    parts.comm_s += sums[1] / sums[3] / count;
    parts.total_s += sums[2] / sums[3] / count;
  }
  return parts;
}

PartTimes median_parts(std::span<const PartTimes> runs) {
  if (runs.empty()) {
    throw std::invalid_argument("median_parts: no runs");
  }
  const auto middle = [&](double PartTimes::*part) {
    std::vector<double> values;
    for (const PartTimes& run : runs) {
      values.push_back(run.*part);
    }
    std::sort(values.begin(), values.end());
    return values[values.size() / 2];
  };
  return {.total_s = middle(&PartTimes::total_s),
          .compute_s = middle(&PartTimes::compute_s),
          .comm_s = middle(&PartTimes::comm_s)};
}

std::vector<double> evaluation_iterations(std::string_view metrics_csv) {
  std::vector<double> measured;
  for (const double k : read_evaluations(metrics_csv).iterations) {
    if (k > 0.0) {
      measured.push_back(k - 1.0);
    }
  }
  return measured;
}

double relative_error(double simulated, double measured) {
  if (measured == 0.0) {
    return simulated == 0.0 ? 0.0 : std::numeric_limits<double>::infinity();
  }
  return std::abs(simulated - measured) / std::abs(measured);
}

double accuracy_difference(const ValidationCase& c) {
  if (c.runtime_accuracy.size() != c.numerics_accuracy.size()) {
    return std::numeric_limits<double>::infinity();
  }
  double worst = 0.0;
  for (std::size_t i = 0; i < c.runtime_accuracy.size(); ++i) {
    worst = std::max(worst, std::abs(c.runtime_accuracy[i] - c.numerics_accuracy[i]));
  }
  return worst;
}

nlohmann::json validation_json(std::span<const ValidationCase> cases) {
  nlohmann::json rows = nlohmann::json::array();
  double worst = 0.0;
  double worst_compute = 0.0;
  double worst_comm = 0.0;
  double worst_accuracy = 0.0;
  const auto parts = [](const PartTimes& p) {
    return nlohmann::json{
        {"seconds_per_iteration", p.total_s}, {"compute_s", p.compute_s}, {"comm_s", p.comm_s}};
  };
  // JSON has no infinity: an unmatched accuracy curve is reported as null.
  const auto number = [](double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); };
  for (const auto& c : cases) {
    const double total = relative_error(c.simulated.total_s, c.measured.total_s);
    const double accuracy = accuracy_difference(c);
    const double compute = relative_error(c.simulated.compute_s, c.measured.compute_s);
    const double comm = relative_error(c.simulated.comm_s, c.measured.comm_s);
    worst = std::max(worst, total);
    worst_compute = std::max(worst_compute, compute);
    worst_comm = std::max(worst_comm, comm);
    worst_accuracy = std::max(worst_accuracy, accuracy);
    rows.push_back({{"case", case_name(c)},
                    {"algorithm", c.algorithm},
                    {"graph", c.graph},
                    {"model", c.model},
                    {"workers", c.workers},
                    {"measured", parts(c.measured)},
                    {"measured_runs_seconds_per_iteration", c.measured_runs},
                    {"measured_run", c.measured_run},
                    {"simulated", parts(c.simulated)},
                    {"relative_error",
                     {{"seconds_per_iteration", number(total)},
                      {"compute_s", number(compute)},
                      {"comm_s", number(comm)}}},
                    {"accuracy_difference", number(accuracy)},
                    {"evaluations", c.runtime_accuracy.size()}});
  }
  return {{"cases", rows},
          {"max_relative_error", number(worst)},
          {"max_relative_error_compute", number(worst_compute)},
          {"max_relative_error_comm", number(worst_comm)},
          {"max_accuracy_difference", number(worst_accuracy)}};
}

std::string validation_markdown(std::span<const ValidationCase> cases) {
  std::string out =
      "| case | model | workers | measured s/it | simulated s/it | error | measured compute s | simulated "
      "compute s | error | measured comm s | simulated comm s | error | accuracy difference |\n"
      "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";
  double worst = 0.0;
  double worst_compute = 0.0;
  double worst_comm = 0.0;
  for (const auto& c : cases) {
    const double total = relative_error(c.simulated.total_s, c.measured.total_s);
    worst = std::max(worst, total);
    worst_compute = std::max(worst_compute, relative_error(c.simulated.compute_s, c.measured.compute_s));
    worst_comm = std::max(worst_comm, relative_error(c.simulated.comm_s, c.measured.comm_s));
    out += fmt::format(
        "| {} | {} | {} | {:.3e} | {:.3e} | {:.1f} % | {:.3e} | {:.3e} | {:.1f} % | {:.3e} | {:.3e} | {:.1f} "
        "% "
        "| {:.2e} |\n",
        case_name(c), c.model, c.workers, c.measured.total_s, c.simulated.total_s, 100.0 * total,
        c.measured.compute_s, c.simulated.compute_s,
        100.0 * relative_error(c.simulated.compute_s, c.measured.compute_s), c.measured.comm_s,
        c.simulated.comm_s, 100.0 * relative_error(c.simulated.comm_s, c.measured.comm_s),
        accuracy_difference(c));
  }
  out += fmt::format(
      "\nLargest relative error of seconds per iteration: {:.1f} %; of compute: {:.1f} %; of communication: "
      "{:.1f} %\n",
      100.0 * worst, 100.0 * worst_compute, 100.0 * worst_comm);
  return out;
}

namespace {

// One part of an iteration as validation.csv states it.
results::ValidationTimes times(double measured_s, double simulated_s) {
  return {measured_s, simulated_s, relative_error(simulated_s, measured_s)};
}

}  // namespace

std::string validation_csv(std::span<const ValidationCase> cases) {
  std::vector<results::ValidationRow> rows;
  for (const auto& c : cases) {
    rows.push_back({case_name(c), c.algorithm, c.graph, c.model, c.workers,
                    times(c.measured.total_s, c.simulated.total_s),
                    times(c.measured.compute_s, c.simulated.compute_s),
                    times(c.measured.comm_s, c.simulated.comm_s), accuracy_difference(c)});
  }
  return results::validation_csv(rows);
}

std::string accuracy_csv(std::span<const ValidationCase> cases) {
  std::vector<results::AccuracyComparisonRow> rows;
  for (const auto& c : cases) {
    const std::size_t n =
        std::min({c.iterations.size(), c.runtime_accuracy.size(), c.numerics_accuracy.size()});
    for (std::size_t i = 0; i < n; ++i) {
      rows.push_back({c.iterations[i], case_name(c), c.runtime_accuracy[i], c.numerics_accuracy[i]});
    }
  }
  return results::accuracy_comparison_csv(rows);
}

}  // namespace dbench::validation
