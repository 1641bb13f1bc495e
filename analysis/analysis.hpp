// The study's analysis of a sweep's summary.csv: per-scale tables, correlations of accuracy with connectivity
// and parameter variance, and verdicts on the study's three observations. Plain values; no Torch, no Eigen.
#pragma once

#include <array>
#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/statistics.hpp"
#include "results/summary_csv.hpp"

namespace dbench::analysis {

/// A sweep that cannot be analyzed (no run is done yet); the message says why.
class AnalysisError : public std::runtime_error {
 public:
  /// Wraps a complete, user-facing message.
  explicit AnalysisError(const std::string& message) : std::runtime_error(message) {}
};

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
  Spread iterations;

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
  /// Empty when the runs the verdict rests on trained in a sound regime; else why the verdict is in doubt
  /// (a scale where centralized training collapsed, or graphs with too few iterations to mix there).
  std::string regime;
};

/// Ada against centralized training and the static graphs at one scale, among the groups that share its
/// label's context (the other axes' values and the design: "ada preset=frontier" is compared with
/// "centralized preset=frontier").
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
  /// The alternative (centralized or a static graph) with the lowest mean simulated time to the target,
  /// among those whose every run reached it; empty when none did.
  std::string fastest_label;
  double fastest_time_to_target_s = kUndefined;
  /// Ada's mean simulated time to the target over the fastest alternative's (NaN unless every Ada run
  /// reached the target too).
  double time_vs_fastest = kUndefined;
  /// Empty unless centralized training, the bar Ada is held to, collapsed at this scale under its design;
  /// then why the comparison is in doubt (a static graph too short to mix does not put it in doubt).
  std::string regime;
  /// Whether Ada's accuracy is within 0.3 percentage points of centralized training's (or above it).
  bool matches_centralized() const { return vs_centralized_pp >= -0.3; }
};

/// The part of a label after its algorithm: " key=value ..." of the other axes and the design ("" when
/// none). Groups with the same context differ only in their algorithm.
std::string label_context(const std::string& label);

/// How far below its smallest-scale accuracy centralized training may fall at a larger scale, in percentage
/// points, before that scale counts as one where nothing trained well enough for the graphs to be compared
/// (Goyal et al.: a working large-batch recipe stays within about 1 pp up to a global batch of 8-16 k).
inline constexpr double kRegimeDropPp = 3.0;

/// What a training design's budget meant at one scale, and whether training at that scale still worked.
struct DesignScale {
  int workers = 0;
  double global_batch = kUndefined;
  double iterations = kUndefined;
  double samples = kUndefined;              ///< samples each run trained on
  double samples_per_replica = kUndefined;  ///< the training set over the workers: one replica's shard
  std::vector<double> peak_lrs;             ///< the distinct learning rates after linear scaling
  /// Centralized training's mean final accuracy here (the least accurate centralized label, where several
  /// are); NaN without centralized runs.
  double centralized_accuracy = kUndefined;
  /// That label's accuracy at the design's smallest scale minus its accuracy here, in percentage points (the
  /// largest drop among centralized labels); NaN without centralized runs at both scales.
  double centralized_drop_pp = kUndefined;
  /// The static graphs here with too few iterations to mix (see StarvedGroup).
  std::vector<std::string> starved_labels;

  /// Whether centralized training here fell more than kRegimeDropPp below its smallest-scale accuracy: the
  /// design starves this scale, and no verdict about the graphs may rest on it.
  bool collapsed() const { return centralized_drop_pp > kRegimeDropPp; }
};

/// A static graph whose runs had fewer iterations than it needs to mix: ln(workers) / spectral gap, the
/// iterations in which gossip shrinks the replicas' disagreement by a factor of the number of replicas.
struct StarvedGroup {
  std::string label;
  int workers = 0;
  double iterations = kUndefined;
  double spectral_gap = kUndefined;
  double mixing_iterations = kUndefined;
};

/// The runs of one training design (a budget in epochs, or in iterations) and the study's verdicts on them.
struct Design {
  std::string name;         ///< "10 epochs" or "400 iterations": the budget every scale of it shares
  std::string description;  ///< the design and what it holds fixed, in a sentence
  std::size_t runs = 0;     ///< done runs of this design
  std::vector<DesignScale> scales;
  std::array<Observation, 3> observations;
  std::vector<StarvedGroup> starved;

  /// "16 workers: global batch 256, 2344 iterations, lr 0.025; ...": the design beside a verdict.
  std::string per_scale() const;
  /// The scales at which centralized training collapsed (DesignScale::collapsed), ascending.
  std::vector<int> collapsed_scales() const;
  /// Whether a verdict on this design rests on runs its budget starved: a collapsed scale, or a graph with
  /// too few iterations to mix.
  bool regime_unsound() const { return !collapsed_scales().empty() || !starved.empty(); }
  /// Why verdicts on this design are in doubt, in one sentence naming the scales and numbers; empty when the
  /// regime is sound.
  std::string regime_warning() const;
};

/// Everything the sweep report states, computed from summary.csv alone.
struct SweepAnalysis {
  std::size_t done = 0;
  std::size_t failed = 0;
  std::size_t pending = 0;
  std::vector<results::SummaryRow> runs;  ///< the done runs
  std::vector<int> scales;                ///< distinct workers values, ascending
  std::vector<std::string> labels;  ///< centralized labels first, Ada last, the rest in order of appearance
  std::vector<GroupStats> groups;   ///< by scale, then in the order of `labels`
  std::vector<ScaleAnalysis> per_scale;  ///< one per scale, ascending
  std::array<Observation, 3> observations;
  std::vector<AdaComparison> ada;  ///< one per Ada label and scale (NaN where a comparison group is missing)
  /// One per training design among the done runs, in order of appearance; with more than one, every label
  /// carries its design ("ring [10 epochs]"), and `observations` are the first design's.
  std::vector<Design> designs;
};

/// The name of a run's design: "E epochs" for a budget in epochs, "T iterations" otherwise.
std::string design_name(const results::SummaryRow& run);

/// Analyzes the rows of a summary.csv. Throws AnalysisError when no run is done.
SweepAnalysis analyze_sweep(const std::vector<results::SummaryRow>& rows);

/// The done runs among `runs` at `workers` (all scales when workers is 0).
std::vector<const results::SummaryRow*> runs_at(const std::vector<results::SummaryRow>& runs, int workers);

}  // namespace dbench::analysis
