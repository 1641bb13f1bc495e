// A sweep's summary.csv read into typed rows, one per run (the columns every summary.csv starts with are the
// sweep's contract).
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "results/columns.hpp"
#include "results/csv.hpp"
#include "results/number.hpp"

namespace dbench::results {

/// One row of a sweep's summary.csv. Numbers are NaN where the field is empty (e.g. a pending run, or a
/// target that was never reached).
struct SummaryRow {
  std::string run;        ///< folder name under runs/
  std::string status;     ///< done | failed | pending
  std::string label;      ///< the group a run belongs to, e.g. "ring" or "ada"; seeds are averaged per label
  std::string algorithm;  ///< centralized | dpsgd
  std::string graph;      ///< graph kind or policy
  int workers = 0;
  std::optional<std::uint64_t> seed;  ///< the run's seed, every digit of it
  double final_test_accuracy = kEmpty;
  double best_test_accuracy = kEmpty;
  double final_test_loss = kEmpty;
  double iterations = kEmpty;
  double edges = kEmpty;  ///< mean undirected edges of the graphs used (centralized: complete graph)
  double mean_degree = kEmpty;
  double spectral_gap = kEmpty;
  double norm_variance_mean = kEmpty;  ///< cross-replica variance of tensor norms, mean over evaluations
  double norm_variance_final = kEmpty;
  double consensus_distance_mean = kEmpty;
  double consensus_distance_final = kEmpty;
  double target_accuracy = kEmpty;
  double iterations_to_target = kEmpty;
  double simulated_time_to_target_s = kEmpty;
  double seconds_per_iteration = kEmpty;
  double samples_per_second = kEmpty;
  double scaling_efficiency = kEmpty;
  double bytes_per_gpu_per_iteration = kEmpty;
  double bytes_per_gpu = kEmpty;
  double simulated_seconds = kEmpty;
  double wall_seconds = kEmpty;
  std::string timing_model;    ///< platform.timing_model: the model whose time and efficiency are simulated
  std::string platform;        ///< the simulated platform's name (a preset's, or a calibration file's base)
  double parameters = kEmpty;  ///< the timing model's parameter count, from its profile
  // The training design: the budget and what it means at this scale.
  double epochs = kEmpty;         ///< train.epochs when the budget is in epochs; empty: in iterations
  double global_batch = kEmpty;   ///< workers x batch_per_worker
  double train_samples = kEmpty;  ///< the training set's size (empty for imagenet-folder)
  double samples = kEmpty;        ///< samples the run trains on: iterations x global batch
  double peak_lr = kEmpty;        ///< the learning rate after linear scaling
  std::vector<std::pair<std::string, std::string>> axes;  ///< the grid axes' columns after the contract's

  /// Whether the run finished (only done runs carry numbers).
  bool done() const { return status == "done"; }
  /// Whether the run all-reduces gradients instead of gossiping.
  bool centralized() const { return algorithm == "centralized"; }
  /// Whether the run trained nothing and was only timed (a done run without an accuracy).
  bool timing_only() const { return done() && std::isnan(final_test_accuracy); }
  /// Whether the run used Ada, the adaptive graph policy.
  bool adaptive() const { return graph == "ada"; }
};

/// summary.csv's contract: the columns every summary.csv starts with, in order, before the grid axes.
const ColumnTable<SummaryRow>& summary_columns();

/// The columns every summary.csv starts with, in order (summary_columns()' names).
std::span<const std::string_view> required_summary_columns();

/// The column of summary.csv that holds grid axis `key`: the key itself, or "grid.KEY" for an axis named like
/// a contract column ("algorithm", "seed"), so that no two columns share a name.
std::string summary_axis_column(std::string_view key);

/// The grid axis that summary.csv's column `column` holds (summary_axis_column's inverse).
std::string summary_axis_key(std::string_view column);

/// A sweep's summary.csv: the contract's columns then one per grid axis (`axis_keys`, named by
/// summary_axis_column), one line per row, whose `axes` hold its values in `axis_keys`' order.
std::string write_summary_csv(std::span<const SummaryRow> rows, std::span<const std::string> axis_keys);

/// Parses a sweep's summary.csv: text cells as results::text_field wrote them, and every number in its
/// column's range (accuracies and the spectral gap in [0, 1], workers a whole number in [1, 2^31 - 1], the
/// rest finite and non-negative). Throws CsvError naming `source` and a missing column, an unknown status, or
/// a field that is not a number or lies outside its column's range.
std::vector<SummaryRow> parse_summary_csv(std::string_view text, std::string_view source);

}  // namespace dbench::results
