// Finished run directories into summary.csv: whether a run is finished, its summary row read off its
// files (with graph statistics cached per sweep), and the table itself.
#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <optional>
#include <stdexcept>
#include <system_error>

#include "experiments/sim_setup.hpp"
#include "experiments/sweep.hpp"
#include "experiments/sweep_internal.hpp"
#include "results/csv.hpp"
#include "results/results_tree.hpp"
#include "results/run_csv.hpp"
#include "results/summary_csv.hpp"
#include "results/summary_json.hpp"
#include "topology/generators.hpp"
#include "topology/graph_analysis.hpp"
#include "topology/spectral.hpp"

namespace dbench::experiments {
namespace {

namespace fs = std::filesystem;

// A CSV file of a run directory, read through results' reader for it.
template <class Reader>
auto read_run_file(const fs::path& path, Reader reader) {
  return reader(results::read_results_file(path, path), path.string());
}

// A recorded value as summary.csv keeps it: NaN (an empty cell) where it is unknown.
template <class T>
double known(const std::optional<T>& value) {
  return value ? static_cast<double>(*value) : results::kEmpty;
}

double known(double value) {
  return value;
}

}  // namespace

RunCheck check_run(const fs::path& run_dir, const ExperimentConfig& config, bool timing_only) {
  std::error_code ec;
  if (!fs::exists(run_dir, ec)) {
    return {};
  }
  const fs::path config_file = run_dir / "config.toml";
  if (!fs::is_regular_file(config_file, ec)) {
    return {false, fmt::format("no config.toml in {}", run_dir.string())};
  }
  try {
    if (load_config_file(config_file, {}, timing_only ? Validation::timing_only : Validation::full) !=
        config) {
      return {false, fmt::format("{} differs from the sweep's config for this run", config_file.string())};
    }
  } catch (const std::exception& e) {
    return {false, e.what()};  // a config this version cannot read is not the run it would now get
  }
  const fs::path summary = run_dir / "summary.json";
  if (!fs::exists(summary, ec)) {
    return {false, fmt::format("no summary.json in {}", run_dir.string())};
  }
  try {
    // The config is the same for both kinds of run; only summary.json tells a timing-only run from a trained
    // one, and a sweep that asks for one must not keep the other.
    if (results::read_summary_json(summary).timing_only != timing_only) {
      return {false,
              fmt::format("{} is from a {} run, the sweep asks for a {} one", summary.string(),
                          timing_only ? "trained" : "timing-only", timing_only ? "timing-only" : "trained")};
    }
  } catch (const results::SummaryJsonError& e) {
    return {false, e.what()};
  }
  return {true, {}};
}

bool run_finished(const fs::path& run_dir, const ExperimentConfig& config, bool timing_only) {
  return check_run(run_dir, config, timing_only).finished;
}

std::span<const std::string_view> summary_columns() {
  return results::required_summary_columns();
}

const GraphStatsCache::Family& GraphStatsCache::family(const ExperimentConfig& config,
                                                       const std::string& kind) {
  ExperimentConfig with_kind = config;
  with_kind.algorithm.graph = kind;
  const topology::GraphSpec spec = graph_spec(with_kind);
  const bool seeded =
      spec.kind == topology::GraphKind::random_regular || spec.kind == topology::GraphKind::erdos_renyi;
  const std::string key =
      fmt::format("{} n={} shape={}x{} degree={} p={} seed={}", kind, spec.nodes, spec.torus_rows,
                  spec.torus_cols, spec.degree, spec.probability, seeded ? spec.seed : 0);
  if (const auto it = families_.find(key); it != families_.end()) {
    return it->second;
  }
  const topology::GraphSequence sequence = topology::make_graph(spec);
  Family family;
  family.kind = sequence.kind();
  for (const auto& round : sequence.rounds()) {
    std::vector<std::uint64_t> pairs;
    for (int i = 0; i < round.nodes(); ++i) {
      for (const auto& entry : round.row(i)) {
        if (entry.from != i && entry.weight != 0.0) {
          const auto lo = static_cast<std::uint64_t>(std::min(i, entry.from));
          const auto hi = static_cast<std::uint64_t>(std::max(i, entry.from));
          pairs.push_back(lo << 32 | hi);
        }
      }
    }
    std::sort(pairs.begin(), pairs.end());
    family.edges.push_back(
        static_cast<std::int64_t>(std::unique(pairs.begin(), pairs.end()) - pairs.begin()));
  }
  try {
    family.spectral_gap = topology::analyze(sequence).spectral_gap;
  } catch (const topology::SpectralError&) {
    // Too large and too slow to mix for the iterative solver (the 131,072-node torus, 256 x 512): the gap is
    // unknown, an empty cell; the run's timing and metrics stand without it.
    family.spectral_gap = std::numeric_limits<double>::quiet_NaN();
  }
  return families_.emplace(key, std::move(family)).first->second;
}

namespace {

// The design columns: what the budget is and means at this run's scale.
void describe_design(const ExperimentConfig& config, results::SummaryRow& s) {
  const TrainConfig& t = config.train;
  if (t.epochs > 0.0) {
    s.epochs = t.epochs;
  }
  s.global_batch = static_cast<double>(global_batch(t));
  s.train_samples = known(train_samples(t));
  s.samples = static_cast<double>(global_batch(t) * t.iterations);
  s.peak_lr = peak_lr(t);
}

}  // namespace

results::SummaryRow pending_summary(const ExperimentConfig& config) {
  results::SummaryRow summary;
  describe_design(config, summary);
  summary.algorithm = config.algorithm.kind;
  summary.workers = config.train.workers;
  summary.seed = config.seed;
  try {
    summary.graph = make_policy(without_timing(config))->name();
  } catch (const std::exception&) {
    summary.graph = config.algorithm.graph;
  }
  return summary;
}

results::SummaryRow summarize_run(const fs::path& run_dir, double target_accuracy, GraphStatsCache& cache) {
  // The run was checked when it was made; a timing-only run's config may name more replicas than samples.
  const ExperimentConfig config = load_config_file(run_dir / "config.toml", {}, Validation::keys_only);
  results::SummaryRow s;
  describe_design(config, s);
  s.algorithm = config.algorithm.kind;
  s.workers = config.train.workers;
  s.seed = config.seed;

  const results::SummaryJson summary = results::read_summary_json(run_dir / "summary.json");
  s.graph = summary.graph;
  if (!summary.timing_only) {
    s.target_accuracy = target_accuracy;  // a timing-only run has no accuracy to reach it with
  }
  s.final_test_accuracy = known(summary.final_test_accuracy);
  s.best_test_accuracy = known(summary.best_test_accuracy);
  s.final_test_loss = known(summary.final_test_loss);
  s.iterations = static_cast<double>(summary.iterations);
  s.seconds_per_iteration = summary.seconds_per_iteration;
  s.samples_per_second = summary.samples_per_second;
  s.scaling_efficiency = known(summary.scaling_efficiency);
  s.bytes_per_gpu_per_iteration = known(summary.bytes_per_gpu_per_iteration);
  s.simulated_seconds = known(summary.simulated_seconds);
  s.wall_seconds = summary.wall_seconds;
  s.timing_model = summary.timing_model.value_or(config.platform.timing_model);
  s.platform = summary.platform.value_or("");
  s.parameters = known(summary.timing_model_parameters);

  // Replica statistics: the mean over evaluations after the start (iteration 0 is consensus by construction).
  // A timing-only run has no replicas, hence no metrics.csv.
  const std::vector<results::MetricsRecord> metrics =
      summary.timing_only ? std::vector<results::MetricsRecord>()
                          : read_run_file(run_dir / "metrics.csv", results::read_metrics_csv).rows;
  if (!metrics.empty()) {
    double variance_sum = 0.0;
    double consensus_sum = 0.0;
    int variance_count = 0;
    int consensus_count = 0;
    for (const results::MetricsRecord& row : metrics) {
      if (std::isnan(s.iterations_to_target) && row.test_accuracy >= target_accuracy) {
        s.iterations_to_target = static_cast<double>(row.iteration);
      }
      if (row.iteration <= 0) {
        continue;
      }
      if (!std::isnan(row.norm_variance)) {
        variance_sum += row.norm_variance;
        ++variance_count;
      }
      if (!std::isnan(row.consensus_distance)) {
        consensus_sum += row.consensus_distance;
        ++consensus_count;
      }
    }
    if (variance_count > 0) {
      s.norm_variance_mean = variance_sum / variance_count;
    }
    if (consensus_count > 0) {
      s.consensus_distance_mean = consensus_sum / consensus_count;
    }
    s.norm_variance_final = known(metrics.back().norm_variance);
    s.consensus_distance_final = known(metrics.back().consensus_distance);
  }

  if (!std::isnan(s.iterations_to_target)) {
    for (const auto& row : read_run_file(run_dir / "accuracy_time.csv", results::read_accuracy_time_csv)) {
      if (static_cast<double>(row.iteration) == s.iterations_to_target) {
        s.simulated_time_to_target_s = known(row.simulated_time_s);
        break;
      }
    }
  }

  const std::vector<results::TraceRow> trace = read_run_file(run_dir / "trace.csv", results::read_trace_csv);
  if (!trace.empty()) {
    double total = 0.0;
    for (const results::TraceRow& row : trace) {
      total += std::isnan(row.bytes_sent) ? 0.0 : row.bytes_sent;
    }
    s.bytes_per_gpu = total;
  }

  // Edges and spectral gap of the graph each iteration used: all-reduce and global averaging count as the
  // complete graph (gap 1); a round of a time-varying family has its own edges and the family's gap.
  const std::vector<results::ScheduleRecord> schedule =
      read_run_file(run_dir / "schedule.csv", results::read_schedule_csv);
  if (!schedule.empty()) {
    std::map<std::string, const GraphStatsCache::Family*> families;
    if (config.algorithm.kind != "centralized") {
      std::vector<std::string> kinds = {config.algorithm.graph};
      if (config.algorithm.graph == "ada") {
        // A rung gossips on its exchange between global averages.
        kinds.clear();
        for (const auto& rung : split_names(config.algorithm.ada_ladder)) {
          kinds.push_back(ada_rung_exchange(rung));
        }
      } else if (config.algorithm.graph == "switch") {
        kinds = split_names(config.algorithm.switch_graphs);
      }
      for (const auto& kind : kinds) {
        if (kind != "allreduce" && kind != "global-average" && kind != "local") {
          const auto& family = cache.family(config, kind);
          families.emplace(family.kind, &family);
        }
      }
    }
    const double n = config.train.workers;
    double edges_sum = 0.0;
    double gap_sum = 0.0;
    for (std::size_t r = 0; r < schedule.size(); ++r) {
      const std::string& name = schedule[r].graph;
      if (name == "allreduce" || name == "global-average") {
        edges_sum += n * (n - 1.0) / 2.0;
        gap_sum += 1.0;
        continue;
      }
      if (name == "local") {
        continue;  // no edges, and no mixing at all
      }
      const GraphStatsCache::Family* family = nullptr;
      std::size_t round = 0;
      if (const auto it = families.find(name); it != families.end()) {
        family = it->second;
      } else if (const auto slash = name.rfind('/'); slash != std::string::npos) {
        if (const auto prefixed = families.find(name.substr(0, slash)); prefixed != families.end()) {
          family = prefixed->second;
          round = std::strtoull(name.c_str() + slash + 1, nullptr, 10);
        }
      }
      if (family == nullptr) {
        throw std::runtime_error(fmt::format("{}: row {}: graph '{}' is not one that {}'s config uses",
                                             (run_dir / "schedule.csv").string(), r + 2, name,
                                             run_dir.string()));
      }
      edges_sum += static_cast<double>(family->edges[round % family->edges.size()]);
      gap_sum += family->spectral_gap;
    }
    const auto rows = static_cast<double>(schedule.size());
    s.edges = edges_sum / rows;
    s.mean_degree = 2.0 * s.edges / n;
    s.spectral_gap = gap_sum / rows;
  }
  return s;
}

std::string_view run_status_name(RunStatus status) {
  switch (status) {
    case RunStatus::done:
      return "done";
    case RunStatus::failed:
      return "failed";
    case RunStatus::pending:
      return "pending";
  }
  return "pending";
}

std::string summary_csv(const SweepConfig& sweep, std::span<const SweepRun> runs,
                        std::span<const results::SummaryRow> summaries, std::span<const RunStatus> statuses) {
  std::vector<std::string> keys;
  for (const auto& axis : sweep.grid) {
    keys.push_back(axis.key);
  }
  std::vector<results::SummaryRow> rows;
  for (std::size_t r = 0; r < runs.size(); ++r) {
    results::SummaryRow row = summaries[r];
    row.run = runs[r].id;
    row.label = runs[r].label;
    row.status = std::string(run_status_name(statuses[r]));
    row.axes.clear();
    for (std::size_t k = 0; k < runs[r].axis_values.size(); ++k) {
      row.axes.emplace_back(k < keys.size() ? keys[k] : std::string(), runs[r].axis_values[k]);
    }
    rows.push_back(std::move(row));
  }
  return results::write_summary_csv(rows, keys);
}

}  // namespace dbench::experiments
