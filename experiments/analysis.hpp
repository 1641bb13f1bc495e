// Statistics for sweeps (correlations with p-values, line fits) and the study's analysis of a sweep's
// summary.csv: per-scale tables, correlations of accuracy with connectivity and parameter variance, and
// verdicts on the study's three observations. Plain values; no Torch, no Eigen.
#pragma once

#include <array>
#include <cmath>
#include <cstddef>
#include <limits>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace dbench::experiments {

/// A summary.csv (or other CSV input) that is missing a column or holds a malformed value.
class AnalysisError : public std::runtime_error {
 public:
  /// Wraps a complete, user-facing message.
  explicit AnalysisError(const std::string& message) : std::runtime_error(message) {}
};

/// Quiet NaN, the value of every undefined statistic.
inline constexpr double kUndefined = std::numeric_limits<double>::quiet_NaN();

/// A correlation coefficient with its sample size and two-sided p-value (H0: no correlation).
struct Correlation {
  double coefficient = kUndefined;  ///< Pearson r or Spearman rho; NaN when undefined
  std::size_t n = 0;                ///< pairs used (pairs with a non-finite value are left out)
  double p_value = kUndefined;      ///< from Student's t with n - 2 degrees of freedom
  std::string reason;               ///< why the coefficient is undefined; empty when it is defined
  /// Whether the coefficient is a number.
  bool defined() const { return std::isfinite(coefficient); }
};

/// Least-squares line y = intercept + slope * x.
struct LineFit {
  double slope = kUndefined;
  double intercept = kUndefined;
  double r_squared = kUndefined;  ///< NaN when y is constant
  std::size_t n = 0;              ///< pairs used (pairs with a non-finite value are left out)
  std::string reason;             ///< why the fit is undefined; empty when it is defined
  /// Whether slope and intercept are numbers.
  bool defined() const { return std::isfinite(slope); }
};

/// Regularized incomplete beta function I_x(a, b) for a, b > 0 and x in [0, 1] (continued fraction).
double regularized_incomplete_beta(double a, double b, double x);

/// Two-sided p-value P(|T| >= |t|) of Student's t distribution with `degrees_of_freedom` > 0.
double student_t_two_sided_p(double t, double degrees_of_freedom);

/// Ranks 1..n of `values`; tied values share the average of the ranks they span.
std::vector<double> average_ranks(std::span<const double> values);

/// Pearson's r of the finite pairs, with t = r sqrt((n - 2) / (1 - r^2)) for the p-value. Undefined (NaN and
/// a reason) with fewer than 3 pairs or a constant variable.
Correlation pearson(std::span<const double> x, std::span<const double> y);

/// Spearman's rho: Pearson's r of the average ranks of the finite pairs, p-value as for Pearson.
Correlation spearman(std::span<const double> x, std::span<const double> y);

/// Least-squares line through the finite pairs; undefined with fewer than 3 pairs or a constant x.
LineFit fit_line(std::span<const double> x, std::span<const double> y);

/// Mean and sample standard deviation (n - 1) of the finite values.
struct Spread {
  double mean = kUndefined;
  double stddev = kUndefined;  ///< NaN for fewer than 2 values
  std::size_t n = 0;           ///< finite values
};

/// The spread of the finite values among `values`.
Spread spread(std::span<const double> values);

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

/// The runs of one label at one scale, averaged over seeds.
struct GroupStats {
  std::string label;
  std::string algorithm;
  std::string graph;
  int workers = 0;
  std::size_t runs = 0;            ///< done runs (seeds) in the group
  std::size_t reached_target = 0;  ///< runs whose accuracy reached target_accuracy
  double target_accuracy = kUndefined;
  Spread final_accuracy;
  Spread best_accuracy;
  Spread iterations_to_target;  ///< over the runs that reached the target
  Spread simulated_time_to_target_s;
  Spread bytes_per_gpu;
  Spread bytes_per_gpu_per_iteration;
  Spread edges;
  Spread spectral_gap;
  Spread norm_variance_mean;
  Spread norm_variance_final;
  Spread consensus_distance_mean;
  Spread samples_per_second;
  Spread scaling_efficiency;
  Spread seconds_per_iteration;

  /// Whether the group all-reduces gradients.
  bool centralized() const { return algorithm == "centralized"; }
  /// Whether the group runs Ada.
  bool adaptive() const { return graph == "ada"; }
};

/// Correlations of final test accuracy with one quantity over the done runs of one scale.
struct AccuracyCorrelation {
  std::string quantity;    ///< the summary.csv column, e.g. "edges"
  std::string pearson_on;  ///< what Pearson's r was computed on, e.g. "log10(edges)"
  Correlation pearson;
  Correlation spearman;
};

/// The study's correlations at one scale (one value of workers).
struct ScaleAnalysis {
  int workers = 0;
  std::size_t runs = 0;       ///< done runs at this scale
  AccuracyCorrelation edges;  ///< Pearson on log10(edges): edge counts span orders of magnitude
  AccuracyCorrelation norm_variance_mean;
  AccuracyCorrelation norm_variance_final;
  AccuracyCorrelation spectral_gap;
  LineFit accuracy_vs_log10_edges;         ///< final accuracy = intercept + slope * log10(edges)
  LineFit accuracy_vs_norm_variance_mean;  ///< final accuracy = intercept + slope * norm_variance_mean
};

/// Verdict of a stated rule applied to a sweep's numbers.
enum class Verdict { holds, does_not_hold, inconclusive };

/// "holds", "does not hold" or "inconclusive here".
std::string_view verdict_name(Verdict verdict);

/// One of the study's observations checked against a sweep.
struct Observation {
  std::string claim;  ///< the observation, as the study states it
  std::string rule;   ///< how the verdict is decided from the numbers
  Verdict verdict = Verdict::inconclusive;
  std::string evidence;  ///< the numbers the verdict rests on
};

/// Ada against centralized training and the static graphs at one scale.
struct AdaComparison {
  std::string label;  ///< the Ada group's label
  int workers = 0;
  double accuracy = kUndefined;              ///< Ada's mean final accuracy
  double vs_centralized_pp = kUndefined;     ///< Ada minus centralized, percentage points
  std::string best_static_label;             ///< the most accurate static (non-Ada) decentralized group
  double vs_best_static_pp = kUndefined;     ///< Ada minus that group, percentage points
  double iterations_to_target = kUndefined;  ///< Ada's mean over seeds that reached the target
  double centralized_iterations_to_target = kUndefined;
  double best_static_iterations_to_target = kUndefined;  ///< fewest among static decentralized groups
  std::string fastest_static_label;                      ///< the group with those fewest iterations
  double bytes_per_gpu_vs_centralized = kUndefined;      ///< ratio of total bytes sent per GPU
  double simulated_time_to_target_s = kUndefined;
  double centralized_simulated_time_to_target_s = kUndefined;
  /// Whether Ada's accuracy is within 1 percentage point of centralized training's (or above it).
  bool matches_centralized() const { return vs_centralized_pp > -1.0; }
};

/// Everything the sweep report states, computed from summary.csv alone.
struct SweepAnalysis {
  std::size_t done = 0;
  std::size_t failed = 0;
  std::size_t pending = 0;
  std::vector<SummaryRow> runs;     ///< the done runs
  std::vector<int> scales;          ///< distinct workers values, ascending
  std::vector<std::string> labels;  ///< centralized labels first, Ada last, the rest in order of appearance
  std::vector<GroupStats> groups;   ///< by scale, then in the order of `labels`
  std::vector<ScaleAnalysis> per_scale;  ///< one per scale, ascending
  std::array<Observation, 3> observations;
  std::vector<AdaComparison> ada;  ///< one per Ada label and scale (NaN where a comparison group is missing)
};

/// Analyzes the rows of a summary.csv. Throws AnalysisError when no run is done.
SweepAnalysis analyze_sweep(const std::vector<SummaryRow>& rows);

/// The done runs among `runs` at `workers` (all scales when workers is 0).
std::vector<const SummaryRow*> runs_at(const std::vector<SummaryRow>& runs, int workers);

}  // namespace dbench::experiments
