// CSV text (RFC 4180) parsed into a table, and a sweep's summary.csv read from it into typed rows (the
// columns every summary.csv starts with are the sweep's contract).
#pragma once

#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "experiments/statistics.hpp"

namespace dbench::experiments {

/// A summary.csv (or other CSV input) that is missing a column or holds a malformed value.
class AnalysisError : public std::runtime_error {
 public:
  /// Wraps a complete, user-facing message.
  explicit AnalysisError(const std::string& message) : std::runtime_error(message) {}
};

/// A parsed CSV file: a header and rows of fields (RFC 4180 quoting; a trailing newline is optional).
struct CsvTable {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
  /// Index of the column `name`, or -1.
  int column(std::string_view name) const;
};

/// Parses CSV text; `source` names the file in errors (e.g. a row with more fields than the header).
CsvTable parse_csv(std::string_view text, std::string_view source);

/// One row of a sweep's summary.csv. Numbers are NaN where the field is empty (e.g. a pending run, or a
/// target that was never reached).
struct SummaryRow {
  std::string run;        ///< folder name under runs/
  std::string status;     ///< done | failed | pending
  std::string label;      ///< the group a run belongs to, e.g. "ring" or "ada"; seeds are averaged per label
  std::string algorithm;  ///< centralized | dpsgd
  std::string graph;      ///< graph kind or policy
  int workers = 0;
  double seed = kUndefined;
  double final_test_accuracy = kUndefined;
  double best_test_accuracy = kUndefined;
  double final_test_loss = kUndefined;
  double iterations = kUndefined;
  double edges = kUndefined;  ///< mean undirected edges of the graphs used (centralized: complete graph)
  double mean_degree = kUndefined;
  double spectral_gap = kUndefined;
  double norm_variance_mean = kUndefined;  ///< cross-replica variance of tensor norms, mean over evaluations
  double norm_variance_final = kUndefined;
  double consensus_distance_mean = kUndefined;
  double consensus_distance_final = kUndefined;
  double target_accuracy = kUndefined;
  double iterations_to_target = kUndefined;
  double simulated_time_to_target_s = kUndefined;
  double seconds_per_iteration = kUndefined;
  double samples_per_second = kUndefined;
  double scaling_efficiency = kUndefined;
  double bytes_per_gpu_per_iteration = kUndefined;
  double bytes_per_gpu = kUndefined;
  double simulated_seconds = kUndefined;
  double wall_seconds = kUndefined;
  std::vector<std::pair<std::string, std::string>> axes;  ///< the grid axes' columns after the contract's

  /// Whether the run finished (only done runs carry numbers).
  bool done() const { return status == "done"; }
  /// Whether the run all-reduces gradients instead of gossiping.
  bool centralized() const { return algorithm == "centralized"; }
  /// Whether the run used Ada, the adaptive graph policy.
  bool adaptive() const { return graph == "ada"; }
};

/// The columns every summary.csv starts with, in order (the sweep's contract).
std::span<const std::string_view> required_summary_columns();

/// Parses a sweep's summary.csv. Throws AnalysisError naming `source` and a missing column, an unknown
/// status or a field that is not a number.
std::vector<SummaryRow> parse_summary_csv(std::string_view text, std::string_view source);

}  // namespace dbench::experiments
