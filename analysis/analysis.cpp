// The study's verdicts on a sweep: groups of seeds per label and scale, correlations of accuracy with
// connectivity and parameter variance, the three observations' rules, and Ada against the other graphs.
#include "analysis/analysis.hpp"

#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>

namespace dbench::analysis {

using results::SummaryRow;

std::string_view verdict_name(Verdict verdict) {
  switch (verdict) {
    case Verdict::holds:
      return "holds";
    case Verdict::does_not_hold:
      return "does not hold";
    case Verdict::inconclusive:
      break;
  }
  return "inconclusive here";
}

std::vector<const SummaryRow*> runs_at(const std::vector<SummaryRow>& runs, int workers) {
  std::vector<const SummaryRow*> selected;
  for (const auto& run : runs) {
    if (run.done() && (workers == 0 || run.workers == workers)) {
      selected.push_back(&run);
    }
  }
  return selected;
}

namespace {

constexpr double kSignificance = 0.05;   // p below this counts as a correlation
constexpr std::size_t kEnoughRuns = 20;  // with this many runs, p >= kSignificance counts as no correlation
constexpr double kMaterialPp = 1.0;      // accuracy differences of at least this many points count
constexpr double kMaterialEfficiency = 0.01;

template <typename Value>
std::vector<double> column_of(const std::vector<const SummaryRow*>& runs, Value value) {
  std::vector<double> out;
  out.reserve(runs.size());
  for (const SummaryRow* run : runs) {
    out.push_back(value(*run));
  }
  return out;
}

std::vector<double> member_of(const std::vector<const SummaryRow*>& runs, double SummaryRow::*member) {
  return column_of(runs, [member](const SummaryRow& r) { return r.*member; });
}

GroupStats group_stats(const std::vector<const SummaryRow*>& runs) {
  GroupStats g;
  const SummaryRow& first = *runs.front();
  g.label = first.label;
  g.algorithm = first.algorithm;
  g.graph = first.graph;
  g.workers = first.workers;
  g.runs = runs.size();
  g.target_accuracy = spread(member_of(runs, &SummaryRow::target_accuracy)).mean;
  g.final_accuracy = spread(member_of(runs, &SummaryRow::final_test_accuracy));
  g.best_accuracy = spread(member_of(runs, &SummaryRow::best_test_accuracy));
  g.iterations_to_target = spread(member_of(runs, &SummaryRow::iterations_to_target));
  g.reached_target = g.iterations_to_target.n;
  g.simulated_time_to_target_s = spread(member_of(runs, &SummaryRow::simulated_time_to_target_s));
  g.bytes_per_gpu = spread(member_of(runs, &SummaryRow::bytes_per_gpu));
  g.bytes_per_gpu_per_iteration = spread(member_of(runs, &SummaryRow::bytes_per_gpu_per_iteration));
  g.edges = spread(member_of(runs, &SummaryRow::edges));
  g.spectral_gap = spread(member_of(runs, &SummaryRow::spectral_gap));
  g.norm_variance_mean = spread(member_of(runs, &SummaryRow::norm_variance_mean));
  g.norm_variance_final = spread(member_of(runs, &SummaryRow::norm_variance_final));
  g.consensus_distance_mean = spread(member_of(runs, &SummaryRow::consensus_distance_mean));
  g.samples_per_second = spread(member_of(runs, &SummaryRow::samples_per_second));
  g.scaling_efficiency = spread(member_of(runs, &SummaryRow::scaling_efficiency));
  g.seconds_per_iteration = spread(member_of(runs, &SummaryRow::seconds_per_iteration));
  g.iterations = spread(member_of(runs, &SummaryRow::iterations));
  return g;
}

AccuracyCorrelation correlate(const std::vector<const SummaryRow*>& runs, std::string quantity,
                              double SummaryRow::*member, bool log_for_pearson) {
  AccuracyCorrelation c;
  const std::vector<double> accuracy = member_of(runs, &SummaryRow::final_test_accuracy);
  const std::vector<double> values = member_of(runs, member);
  std::vector<double> pearson_values = values;
  if (log_for_pearson) {
    for (double& v : pearson_values) {
      v = v > 0.0 ? std::log10(v) : kUndefined;
    }
  }
  c.pearson_on = log_for_pearson ? fmt::format("log10({})", quantity) : quantity;
  c.quantity = std::move(quantity);
  c.pearson = pearson(pearson_values, accuracy);
  c.spearman = spearman(values, accuracy);
  return c;
}

ScaleAnalysis analyze_scale(const std::vector<SummaryRow>& runs, int workers) {
  const auto at = runs_at(runs, workers);
  ScaleAnalysis s;
  s.workers = workers;
  s.runs = at.size();
  s.edges = correlate(at, "edges", &SummaryRow::edges, true);
  s.norm_variance_mean = correlate(at, "norm_variance_mean", &SummaryRow::norm_variance_mean, false);
  s.norm_variance_final = correlate(at, "norm_variance_final", &SummaryRow::norm_variance_final, false);
  s.spectral_gap = correlate(at, "spectral_gap", &SummaryRow::spectral_gap, false);
  const std::vector<double> accuracy = member_of(at, &SummaryRow::final_test_accuracy);
  const std::vector<double> log_edges =
      column_of(at, [](const SummaryRow& r) { return r.edges > 0.0 ? std::log10(r.edges) : kUndefined; });
  s.accuracy_vs_log10_edges = fit_line(log_edges, accuracy);
  s.accuracy_vs_norm_variance_mean = fit_line(member_of(at, &SummaryRow::norm_variance_mean), accuracy);
  return s;
}

std::string format_correlation(const Correlation& c, std::string_view symbol) {
  if (!c.defined()) {
    return fmt::format("{} undefined ({})", symbol, c.reason);
  }
  return fmt::format("{} = {:.3f} (p = {:.3g}, n = {})", symbol, c.coefficient, c.p_value, c.n);
}

// Rule shared by observations 2 and 3: the sign of Spearman's rho at the largest scale, significant at 5 %.
Verdict correlation_verdict(const Correlation& c, bool expect_positive) {
  if (!c.defined()) {
    return Verdict::inconclusive;
  }
  const bool expected_sign = expect_positive ? c.coefficient > 0.0 : c.coefficient < 0.0;
  if (c.p_value < kSignificance) {
    return expected_sign ? Verdict::holds : Verdict::does_not_hold;
  }
  return c.n >= kEnoughRuns ? Verdict::does_not_hold : Verdict::inconclusive;
}

const GroupStats* find_group(const std::vector<GroupStats>& groups, const std::string& label, int workers) {
  for (const auto& g : groups) {
    if (g.label == label && g.workers == workers) {
      return &g;
    }
  }
  return nullptr;
}

bool static_decentralized(const GroupStats& g) {
  return !g.centralized() && !g.adaptive();
}

Observation scalability_observation(const SweepAnalysis& a) {
  Observation o;
  o.claim =
      "Decentralized training shows the same scalability and generality problems as centralized training as "
      "the scale grows";
  o.rule = fmt::format(
      "From the smallest to the largest scale, over the static decentralized labels present at both: holds "
      "if "
      "their mean final accuracy falls, or their gap to centralized training widens, by more than the "
      "threshold max({0:g} pp, twice the largest seed standard deviation among the groups compared), and the "
      "mean scaling efficiency falls by at least {1:g}; does not hold if none of the three happens and the "
      "threshold is {0:g} pp (seeds agree well enough for a {0:g} pp change to show); otherwise, or with one "
      "scale, inconclusive",
      kMaterialPp, kMaterialEfficiency);
  if (a.scales.size() < 2) {
    o.evidence = fmt::format("one scale only ({} workers)", a.scales.empty() ? 0 : a.scales.front());
    return o;
  }
  const int small = a.scales.front();
  const int large = a.scales.back();
  std::vector<double> small_accuracy, large_accuracy, small_efficiency, large_efficiency;
  std::vector<std::string> labels;
  double seed_spread_pp = 0.0;  // largest seed standard deviation among the groups compared
  const auto note_spread = [&](const GroupStats& g) {
    if (std::isfinite(g.final_accuracy.stddev)) {
      seed_spread_pp = std::max(seed_spread_pp, 100.0 * g.final_accuracy.stddev);
    }
  };
  for (const auto& label : a.labels) {
    const GroupStats* s = find_group(a.groups, label, small);
    const GroupStats* l = find_group(a.groups, label, large);
    if (s == nullptr || l == nullptr) {
      continue;
    }
    small_efficiency.push_back(s->scaling_efficiency.mean);
    large_efficiency.push_back(l->scaling_efficiency.mean);
    if (static_decentralized(*s)) {
      small_accuracy.push_back(s->final_accuracy.mean);
      large_accuracy.push_back(l->final_accuracy.mean);
      labels.push_back(label);
      note_spread(*s);
      note_spread(*l);
    }
  }
  if (labels.empty()) {
    o.evidence = fmt::format("no static decentralized label ran at both {} and {} workers", small, large);
    return o;
  }
  const auto centralized = std::find_if(a.labels.begin(), a.labels.end(), [&](const std::string& label) {
    const GroupStats* s = find_group(a.groups, label, small);
    const GroupStats* l = find_group(a.groups, label, large);
    return s != nullptr && l != nullptr && s->centralized();
  });
  if (centralized != a.labels.end()) {
    note_spread(*find_group(a.groups, *centralized, small));
    note_spread(*find_group(a.groups, *centralized, large));
  }
  const double threshold_pp = std::max(kMaterialPp, 2.0 * seed_spread_pp);
  const double accuracy_change_pp = 100.0 * (spread(large_accuracy).mean - spread(small_accuracy).mean);
  const double efficiency_change = spread(large_efficiency).mean - spread(small_efficiency).mean;
  const bool accuracy_falls = accuracy_change_pp < -threshold_pp;
  const bool efficiency_falls = efficiency_change <= -kMaterialEfficiency;
  o.evidence =
      fmt::format("{} -> {} workers, labels {}: decentralized accuracy {:.2f}% -> {:.2f}% ({:+.2f} pp)",
                  small, large, fmt::join(labels, ", "), 100.0 * spread(small_accuracy).mean,
                  100.0 * spread(large_accuracy).mean, accuracy_change_pp);
  bool gap_widens = false;
  if (centralized != a.labels.end()) {
    const double small_gap_pp = 100.0 * (find_group(a.groups, *centralized, small)->final_accuracy.mean -
                                         spread(small_accuracy).mean);
    const double large_gap_pp = 100.0 * (find_group(a.groups, *centralized, large)->final_accuracy.mean -
                                         spread(large_accuracy).mean);
    gap_widens = large_gap_pp - small_gap_pp > threshold_pp;
    o.evidence += fmt::format("; gap to {} {:.2f} pp -> {:.2f} pp", *centralized, small_gap_pp, large_gap_pp);
  } else {
    o.evidence += "; no centralized label at both scales (gap not measured)";
  }
  o.evidence += fmt::format("; threshold {:.2f} pp (largest seed standard deviation {:.2f} pp)", threshold_pp,
                            seed_spread_pp);
  o.evidence += fmt::format("; mean scaling efficiency {:.3f} -> {:.3f}", spread(small_efficiency).mean,
                            spread(large_efficiency).mean);
  const std::vector<const SummaryRow*> decentralized = [&] {
    std::vector<const SummaryRow*> out;
    for (const auto& run : a.runs) {
      if (!run.centralized() && !run.adaptive()) {
        out.push_back(&run);
      }
    }
    return out;
  }();
  const Correlation trend =
      spearman(column_of(decentralized, [](const SummaryRow& r) { return static_cast<double>(r.workers); }),
               member_of(decentralized, &SummaryRow::final_test_accuracy));
  o.evidence += fmt::format("; decentralized accuracy against workers: {}", format_correlation(trend, "rho"));
  if ((accuracy_falls || gap_widens) && efficiency_falls) {
    o.verdict = Verdict::holds;
  } else if (!accuracy_falls && !gap_widens && !efficiency_falls && threshold_pp == kMaterialPp) {
    o.verdict = Verdict::does_not_hold;
  }
  return o;
}

Observation correlation_observation(const SweepAnalysis& a, std::string claim, std::string_view quantity,
                                    bool expect_positive, AccuracyCorrelation ScaleAnalysis::*member) {
  Observation o;
  o.claim = std::move(claim);
  o.rule = fmt::format(
      "At the largest scale: holds if Spearman's rho between final accuracy and {0} is {1} with p < {2:g}; "
      "does "
      "not hold if rho has the other sign with p < {2:g}, or if p >= {2:g} with at least {3} runs; otherwise "
      "inconclusive",
      quantity, expect_positive ? "positive" : "negative", kSignificance, kEnoughRuns);
  std::vector<std::string> parts;
  for (auto it = a.per_scale.rbegin(); it != a.per_scale.rend(); ++it) {
    const AccuracyCorrelation& c = (*it).*member;
    parts.push_back(fmt::format("{} workers: {}, Pearson on {} {}", it->workers,
                                format_correlation(c.spearman, "rho"), c.pearson_on,
                                format_correlation(c.pearson, "r")));
  }
  o.evidence = fmt::format("{}", fmt::join(parts, "; "));
  if (!a.per_scale.empty()) {
    o.verdict = correlation_verdict((a.per_scale.back().*member).spearman, expect_positive);
  }
  return o;
}

}  // namespace

std::string label_context(const std::string& label) {
  const std::size_t space = label.find(' ');
  return space == std::string::npos ? std::string() : label.substr(space);
}

namespace {

AdaComparison compare_ada(const SweepAnalysis& a, const GroupStats& ada) {
  AdaComparison c;
  c.label = ada.label;
  c.workers = ada.workers;
  c.accuracy = ada.final_accuracy.mean;
  c.iterations_to_target = ada.iterations_to_target.mean;
  c.simulated_time_to_target_s = ada.simulated_time_to_target_s.mean;
  const GroupStats* centralized = nullptr;
  const GroupStats* best_static = nullptr;
  const GroupStats* fastest_static = nullptr;
  const GroupStats* fastest = nullptr;
  const std::string context = label_context(ada.label);
  for (const auto& g : a.groups) {
    if (g.workers != ada.workers || g.adaptive() || label_context(g.label) != context) {
      continue;
    }
    if (g.runs > 0 && g.reached_target == g.runs && std::isfinite(g.simulated_time_to_target_s.mean) &&
        (fastest == nullptr ||
         g.simulated_time_to_target_s.mean < fastest->simulated_time_to_target_s.mean)) {
      fastest = &g;
    }
    if (g.centralized() && centralized == nullptr) {
      centralized = &g;
    }
    if (static_decentralized(g)) {
      if (best_static == nullptr || g.final_accuracy.mean > best_static->final_accuracy.mean) {
        best_static = &g;
      }
      if (std::isfinite(g.iterations_to_target.mean) &&
          (fastest_static == nullptr ||
           g.iterations_to_target.mean < fastest_static->iterations_to_target.mean)) {
        fastest_static = &g;
      }
    }
  }
  if (centralized != nullptr) {
    c.vs_centralized_pp = 100.0 * (ada.final_accuracy.mean - centralized->final_accuracy.mean);
    c.centralized_iterations_to_target = centralized->iterations_to_target.mean;
    c.centralized_simulated_time_to_target_s = centralized->simulated_time_to_target_s.mean;
    if (centralized->bytes_per_gpu.mean > 0.0) {
      c.bytes_per_gpu_vs_centralized = ada.bytes_per_gpu.mean / centralized->bytes_per_gpu.mean;
    }
  }
  if (best_static != nullptr) {
    c.best_static_label = best_static->label;
    c.vs_best_static_pp = 100.0 * (ada.final_accuracy.mean - best_static->final_accuracy.mean);
  }
  if (fastest_static != nullptr) {
    c.fastest_static_label = fastest_static->label;
    c.best_static_iterations_to_target = fastest_static->iterations_to_target.mean;
  }
  if (fastest != nullptr) {
    c.fastest_label = fastest->label;
    c.fastest_time_to_target_s = fastest->simulated_time_to_target_s.mean;
    if (ada.runs > 0 && ada.reached_target == ada.runs) {
      c.time_vs_fastest = ada.simulated_time_to_target_s.mean / c.fastest_time_to_target_s;
    }
  }
  return c;
}

// The verdicts and tables of a set of rows that share one training design (or are read as one).
SweepAnalysis analyze_rows(const std::vector<SummaryRow>& rows) {
  SweepAnalysis a;
  for (const auto& run : rows) {
    if (run.done()) {
      ++a.done;
      a.runs.push_back(run);
    } else if (run.status == "failed") {
      ++a.failed;
    } else {
      ++a.pending;
    }
  }
  if (a.runs.empty()) {
    throw AnalysisError(
        fmt::format("no run is done yet ({} pending, {} failed): nothing to analyze", a.pending, a.failed));
  }
  std::set<int> scales;
  std::vector<std::string> centralized, middle, adaptive;
  for (const auto& run : a.runs) {
    scales.insert(run.workers);
    auto& bucket = run.centralized() ? centralized : run.adaptive() ? adaptive : middle;
    if (std::find(bucket.begin(), bucket.end(), run.label) == bucket.end()) {
      bucket.push_back(run.label);
    }
  }
  a.scales.assign(scales.begin(), scales.end());
  for (auto* bucket : {&centralized, &middle, &adaptive}) {
    for (const auto& label : *bucket) {
      if (std::find(a.labels.begin(), a.labels.end(), label) == a.labels.end()) {
        a.labels.push_back(label);
      }
    }
  }
  for (int workers : a.scales) {
    for (const auto& label : a.labels) {
      std::vector<const SummaryRow*> members;
      for (const auto& run : a.runs) {
        if (run.workers == workers && run.label == label) {
          members.push_back(&run);
        }
      }
      if (!members.empty()) {
        a.groups.push_back(group_stats(members));
      }
    }
    a.per_scale.push_back(analyze_scale(a.runs, workers));
  }
  a.observations[0] = scalability_observation(a);
  a.observations[1] = correlation_observation(
      a, "Accuracy is correlated with the number of connections in the communication graph", "edges", true,
      &ScaleAnalysis::edges);
  a.observations[2] = correlation_observation(
      a, "Accuracy is very sensitive to the variance of parameter tensors across replicas",
      "norm_variance_mean (higher variance, lower accuracy)", false, &ScaleAnalysis::norm_variance_mean);
  for (const auto& g : a.groups) {
    if (g.adaptive()) {
      a.ada.push_back(compare_ada(a, g));
    }
  }
  return a;
}

// Whole numbers in full (6451200 samples, not 6.4512e+06), others in the shortest form.
std::string number_text(double v) {
  if (!std::isfinite(v)) {
    return "?";
  }
  return v == std::floor(v) && std::abs(v) < 1e15 ? fmt::format("{:.0f}", v) : fmt::format("{:g}", v);
}

// Why runs at `s` cannot carry a verdict about the graphs, or "" when they can. `starved_graphs`: whether
// graphs too short to mix count (an observation correlates every graph; Ada's comparison reads centralized
// training and the fastest alternative, so a scale where centralized training trained is sound for it).
std::string scale_doubt(const DesignScale& s, bool starved_graphs = true) {
  std::vector<std::string> parts;
  if (s.collapsed()) {
    parts.push_back(
        fmt::format("centralized training collapsed ({:.1f} %, {:.1f} pp below the smallest scale)",
                    100.0 * s.centralized_accuracy, s.centralized_drop_pp));
  }
  if (starved_graphs && !s.starved_labels.empty()) {
    parts.push_back(fmt::format("too few iterations to mix for {}", fmt::join(s.starved_labels, ", ")));
  }
  return parts.empty() ? std::string() : fmt::format("{} workers: {}", s.workers, fmt::join(parts, " and "));
}

// What `sub` (the runs of one design) trained at each scale, and which graphs its budget starved.
Design describe_design(const SweepAnalysis& sub, std::string name) {
  Design d;
  d.name = std::move(name);
  d.runs = sub.runs.size();
  d.observations = sub.observations;
  for (const int workers : sub.scales) {
    DesignScale s;
    s.workers = workers;
    const auto at = runs_at(sub.runs, workers);
    s.global_batch = at.front()->global_batch;
    s.iterations = spread(member_of(at, &SummaryRow::iterations)).mean;
    s.samples = spread(member_of(at, &SummaryRow::samples)).mean;
    for (const SummaryRow* run : at) {
      if (std::isfinite(run->peak_lr) &&
          std::find(s.peak_lrs.begin(), s.peak_lrs.end(), run->peak_lr) == s.peak_lrs.end()) {
        s.peak_lrs.push_back(run->peak_lr);
      }
    }
    if (std::isfinite(at.front()->train_samples) && workers > 0) {
      s.samples_per_replica = at.front()->train_samples / workers;
    }
    d.scales.push_back(std::move(s));
  }
  // Centralized training per scale against the same label at the smallest scale it ran at.
  for (const auto& label : sub.labels) {
    const GroupStats* smallest = nullptr;
    for (const auto& g : sub.groups) {
      if (g.label != label || g.algorithm != "centralized") {
        continue;
      }
      smallest = smallest == nullptr || g.workers < smallest->workers ? &g : smallest;
    }
    if (smallest == nullptr) {
      continue;
    }
    for (const auto& g : sub.groups) {
      if (g.label != label) {
        continue;
      }
      auto scale = std::find_if(d.scales.begin(), d.scales.end(),
                                [&](const DesignScale& s) { return s.workers == g.workers; });
      const double accuracy = g.final_accuracy.mean;
      const double drop = 100.0 * (smallest->final_accuracy.mean - accuracy);
      if (!std::isfinite(scale->centralized_accuracy) || accuracy < scale->centralized_accuracy) {
        scale->centralized_accuracy = accuracy;
      }
      if (!std::isfinite(scale->centralized_drop_pp) || drop > scale->centralized_drop_pp) {
        scale->centralized_drop_pp = drop;
      }
    }
  }
  const SummaryRow& first = sub.runs.front();
  if (std::isfinite(first.epochs)) {
    d.description = fmt::format(
        "fixed sample budget: every run trains {} epochs of the {}-sample training set ({} samples), so more "
        "replicas train with a larger global batch for fewer iterations",
        number_text(first.epochs), number_text(first.train_samples), number_text(d.scales.front().samples));
  } else {
    d.description = fmt::format(
        "fixed iterations: every run trains {} iterations, so more replicas also see more samples ({} at {} "
        "workers, {} at {}): scale and training length change together",
        number_text(first.iterations), number_text(d.scales.front().samples), d.scales.front().workers,
        number_text(d.scales.back().samples), d.scales.back().workers);
  }
  for (const auto& g : sub.groups) {
    const double gap = g.spectral_gap.mean;
    if (!static_decentralized(g) || !(gap > 0.0) || !std::isfinite(gap)) {
      continue;
    }
    const double mixing = std::log(static_cast<double>(g.workers)) / gap;
    if (g.iterations.mean < mixing) {
      d.starved.push_back({g.label, g.workers, g.iterations.mean, gap, mixing});
      for (auto& s : d.scales) {
        if (s.workers == g.workers) {
          s.starved_labels.push_back(g.label);
        }
      }
    }
  }
  // Observation 1 compares the scales and reads the trend across all of them; 2 and 3 are decided at the
  // largest scale.
  for (std::size_t i = 0; i < d.observations.size(); ++i) {
    std::vector<std::string> doubts;
    for (std::size_t k = i == 0 ? 0 : d.scales.size() - 1; k < d.scales.size(); ++k) {
      if (const std::string doubt = scale_doubt(d.scales[k]); !doubt.empty()) {
        doubts.push_back(doubt);
      }
    }
    d.observations[i].regime = fmt::format("{}", fmt::join(doubts, "; "));
  }
  return d;
}

}  // namespace

std::string design_name(const SummaryRow& run) {
  return std::isfinite(run.epochs) ? fmt::format("{} epochs", number_text(run.epochs))
                                   : fmt::format("{} iterations", number_text(run.iterations));
}

std::string Design::per_scale() const {
  std::vector<std::string> parts;
  for (const auto& s : scales) {
    std::vector<std::string> lrs;
    for (const double lr : s.peak_lrs) {
      lrs.push_back(fmt::format("{:.4g}", lr));
    }
    parts.push_back(fmt::format("{} workers: global batch {}, {} iterations, {} samples, lr {}", s.workers,
                                number_text(s.global_batch), number_text(std::round(s.iterations)),
                                number_text(s.samples),
                                lrs.empty() ? "?" : fmt::format("{}", fmt::join(lrs, " / "))));
  }
  return fmt::format("{}", fmt::join(parts, "; "));
}

std::vector<int> Design::collapsed_scales() const {
  std::vector<int> out;
  for (const auto& s : scales) {
    if (s.collapsed()) {
      out.push_back(s.workers);
    }
  }
  return out;
}

std::string Design::regime_warning() const {
  std::vector<std::string> parts;
  for (const auto& s : scales) {
    if (!s.collapsed()) {
      continue;
    }
    parts.push_back(fmt::format(
        "at {} workers centralized training reached {:.1f} %, {:.1f} pp below its accuracy at the smallest "
        "scale ({} samples per replica, {} iterations, peak lr {})",
        s.workers, 100.0 * s.centralized_accuracy, s.centralized_drop_pp,
        number_text(std::round(s.samples_per_replica)), number_text(std::round(s.iterations)),
        s.peak_lrs.empty() ? std::string("?")
                           : fmt::format("{:.4g}", *std::max_element(s.peak_lrs.begin(), s.peak_lrs.end()))));
  }
  if (!starved.empty()) {
    std::vector<std::string> graphs;
    for (const auto& g : starved) {
      graphs.push_back(fmt::format("{} at {} workers", g.label, g.workers));
    }
    parts.push_back(
        fmt::format("{} had fewer iterations than their graphs need to mix", fmt::join(graphs, ", ")));
  }
  if (parts.empty()) {
    return "";
  }
  return fmt::format(
      "The design {} starves part of this sweep: {}. A comparison of graphs there measures the budget, not "
      "the graphs; every verdict that rests on those runs is marked.",
      name, fmt::join(parts, "; "));
}

namespace {

// Each Ada comparison in doubt where centralized training collapsed at its scale under its design (named in
// brackets in the label where a sweep holds several).
void mark_ada_regime(SweepAnalysis& a) {
  for (auto& c : a.ada) {
    for (const auto& d : a.designs) {
      if (a.designs.size() > 1 && !c.label.ends_with(fmt::format("[{}]", d.name))) {
        continue;
      }
      for (const auto& s : d.scales) {
        if (s.workers == c.workers) {
          c.regime = scale_doubt(s, false);
        }
      }
    }
  }
}

}  // namespace

SweepAnalysis analyze_sweep(const std::vector<SummaryRow>& rows) {
  std::vector<std::string> names;
  for (const auto& run : rows) {
    if (run.done() && std::find(names.begin(), names.end(), design_name(run)) == names.end()) {
      names.push_back(design_name(run));
    }
  }
  if (names.size() <= 1) {
    SweepAnalysis a = analyze_rows(rows);  // throws when no run is done, so there is one design
    a.designs.push_back(describe_design(a, names.front()));
    a.observations = a.designs.front().observations;
    mark_ada_regime(a);
    return a;
  }
  // Several designs: each label is read per design, and each design gets its own verdicts.
  std::vector<SummaryRow> labelled = rows;
  for (auto& run : labelled) {
    if (run.done()) {
      run.label += fmt::format(" [{}]", design_name(run));
    }
  }
  SweepAnalysis a = analyze_rows(labelled);
  for (const auto& name : names) {
    std::vector<SummaryRow> subset;
    for (const auto& run : rows) {
      if (run.done() && design_name(run) == name) {
        subset.push_back(run);
      }
    }
    a.designs.push_back(describe_design(analyze_rows(subset), name));
  }
  a.observations = a.designs.front().observations;
  mark_ada_regime(a);
  return a;
}

}  // namespace dbench::analysis
