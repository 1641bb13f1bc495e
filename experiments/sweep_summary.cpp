// Finished run directories into summary.csv: whether a run is finished, its summary row read off its
// files (with graph statistics cached per sweep), and the table itself.
#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <stdexcept>
#include <system_error>

#include "experiments/sim_setup.hpp"
#include "experiments/sweep.hpp"
#include "experiments/sweep_internal.hpp"
#include "results/csv.hpp"
#include "results/results_tree.hpp"
#include "results/summary_csv.hpp"
#include "results/summary_json.hpp"
#include "topology/analysis.hpp"
#include "topology/generators.hpp"

namespace dbench::experiments {
namespace {

namespace fs = std::filesystem;

// A CSV file of a run directory, read by column name.
class RunCsv {
 public:
  explicit RunCsv(const fs::path& path)
      : path_(path), table_(results::parse_csv(results::read_results_file(path, path), path.string())) {}

  std::size_t rows() const { return table_.rows.size(); }

  std::size_t column(std::string_view name) const {
    const int at = table_.column(name);
    if (at < 0) {
      throw std::runtime_error(fmt::format("{}: no column '{}'", path_.string(), name));
    }
    return static_cast<std::size_t>(at);
  }

  const std::string& cell(std::size_t row, std::size_t column) const {
    static const std::string kEmpty;
    const auto& cells = table_.rows[row];
    return column < cells.size() ? cells[column] : kEmpty;
  }

  /// The number in a cell; nullopt for an empty cell; throws naming the file for anything else.
  std::optional<double> number(std::size_t row, std::size_t column) const {
    const std::string& text = cell(row, column);
    if (text.empty()) {
      return std::nullopt;
    }
    char* end = nullptr;
    const double value = std::strtod(text.c_str(), &end);
    if (end != text.c_str() + text.size()) {
      throw std::runtime_error(fmt::format("{}: row {}, column '{}': '{}' is not a number", path_.string(),
                                           row + 2, table_.header[column], text));
    }
    return value;
  }

 private:
  fs::path path_;
  results::CsvTable table_;
};

std::string csv_cell(std::string_view text) {
  return results::text_field(text);
}

std::string csv_number(const std::optional<double>& value) {
  return value && std::isfinite(*value) ? fmt::format("{}", *value) : std::string();
}

std::string csv_number(const std::optional<std::int64_t>& value) {
  return value ? std::to_string(*value) : std::string();
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
  family.spectral_gap = topology::analyze(sequence).spectral_gap;
  return families_.emplace(key, std::move(family)).first->second;
}

namespace {

// The design columns: what the budget is and means at this run's scale.
void describe_design(const ExperimentConfig& config, RunSummary& s) {
  const TrainConfig& t = config.train;
  if (t.epochs > 0.0) {
    s.epochs = t.epochs;
  }
  s.global_batch = global_batch(t);
  s.train_samples = train_samples(t);
  s.samples = s.global_batch * t.iterations;
  s.peak_lr = peak_lr(t);
}

}  // namespace

RunSummary pending_summary(const ExperimentConfig& config) {
  RunSummary summary;
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

RunSummary summarize_run(const fs::path& run_dir, double target_accuracy, GraphStatsCache& cache) {
  // The run was checked when it was made; a timing-only run's config may name more replicas than samples.
  const ExperimentConfig config = load_config_file(run_dir / "config.toml", {}, Validation::keys_only);
  RunSummary s;
  describe_design(config, s);
  s.algorithm = config.algorithm.kind;
  s.workers = config.train.workers;
  s.seed = config.seed;

  const results::SummaryJson summary = results::read_summary_json(run_dir / "summary.json");
  s.graph = summary.graph;
  if (!summary.timing_only) {
    s.target_accuracy = target_accuracy;  // a timing-only run has no accuracy to reach it with
  }
  s.final_test_accuracy = summary.final_test_accuracy;
  s.best_test_accuracy = summary.best_test_accuracy;
  s.final_test_loss = summary.final_test_loss;
  s.iterations = summary.iterations;
  s.seconds_per_iteration = summary.seconds_per_iteration;
  s.samples_per_second = summary.samples_per_second;
  s.scaling_efficiency = summary.scaling_efficiency;
  s.bytes_per_gpu_per_iteration = summary.bytes_per_gpu_per_iteration;
  s.simulated_seconds = summary.simulated_seconds;
  s.wall_seconds = summary.wall_seconds;
  s.timing_model = summary.timing_model.value_or(config.platform.timing_model);
  s.platform = summary.platform.value_or("");
  s.parameters = summary.timing_model_parameters;

  // Replica statistics: the mean over evaluations after the start (iteration 0 is consensus by construction).
  // A timing-only run has no replicas, hence no metrics.csv.
  const std::optional<RunCsv> metrics_file =
      summary.timing_only ? std::nullopt : std::optional<RunCsv>(std::in_place, run_dir / "metrics.csv");
  if (metrics_file && metrics_file->rows() > 0) {
    const RunCsv& metrics = *metrics_file;
    const std::size_t iteration = metrics.column("iteration");
    const std::size_t accuracy = metrics.column("test_accuracy");
    const std::size_t variance = metrics.column("norm_variance");
    const std::size_t consensus = metrics.column("consensus_distance");
    double variance_sum = 0.0;
    double consensus_sum = 0.0;
    int variance_count = 0;
    int consensus_count = 0;
    for (std::size_t r = 0; r < metrics.rows(); ++r) {
      const auto t = metrics.number(r, iteration);
      if (!s.iterations_to_target) {
        if (const auto a = metrics.number(r, accuracy); a && t && *a >= target_accuracy) {
          s.iterations_to_target = static_cast<std::int64_t>(*t);
        }
      }
      if (!t || *t <= 0) {
        continue;
      }
      if (const auto v = metrics.number(r, variance)) {
        variance_sum += *v;
        ++variance_count;
      }
      if (const auto c = metrics.number(r, consensus)) {
        consensus_sum += *c;
        ++consensus_count;
      }
    }
    if (variance_count > 0) {
      s.norm_variance_mean = variance_sum / variance_count;
    }
    if (consensus_count > 0) {
      s.consensus_distance_mean = consensus_sum / consensus_count;
    }
    s.norm_variance_final = metrics.number(metrics.rows() - 1, variance);
    s.consensus_distance_final = metrics.number(metrics.rows() - 1, consensus);
  }

  if (s.iterations_to_target) {
    const RunCsv clock(run_dir / "accuracy_time.csv");
    const std::size_t iteration = clock.column("iteration");
    const std::size_t time = clock.column("simulated_time_s");
    for (std::size_t r = 0; r < clock.rows(); ++r) {
      if (clock.number(r, iteration) == static_cast<double>(*s.iterations_to_target)) {
        s.simulated_time_to_target_s = clock.number(r, time);
        break;
      }
    }
  }

  const RunCsv trace(run_dir / "trace.csv");
  if (trace.rows() > 0) {
    const std::size_t bytes = trace.column("bytes_sent");
    double total = 0.0;
    for (std::size_t r = 0; r < trace.rows(); ++r) {
      total += trace.number(r, bytes).value_or(0.0);
    }
    s.bytes_per_gpu = total;
  }

  // Edges and spectral gap of the graph each iteration used: all-reduce and global averaging count as the
  // complete graph (gap 1); a round of a time-varying family has its own edges and the family's gap.
  const RunCsv schedule(run_dir / "schedule.csv");
  if (schedule.rows() > 0) {
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
    const std::size_t graph = schedule.column("graph");
    double edges_sum = 0.0;
    double gap_sum = 0.0;
    for (std::size_t r = 0; r < schedule.rows(); ++r) {
      const std::string& name = schedule.cell(r, graph);
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
    const auto rows = static_cast<double>(schedule.rows());
    s.edges = edges_sum / rows;
    s.mean_degree = 2.0 * *s.edges / n;
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
                        std::span<const RunSummary> summaries, std::span<const RunStatus> statuses) {
  std::string out;
  for (const auto column : summary_columns()) {
    out += out.empty() ? "" : ",";
    out += column;
  }
  for (const auto& axis : sweep.grid) {
    out += ',';
    out += csv_cell(results::summary_axis_column(axis.key));
  }
  out += "\n";
  for (std::size_t r = 0; r < runs.size(); ++r) {
    const SweepRun& run = runs[r];
    const RunSummary& s = summaries[r];
    const std::vector<std::string> cells = {
        csv_cell(run.id),
        std::string(run_status_name(statuses[r])),
        csv_cell(run.label),
        csv_cell(s.algorithm),
        csv_cell(s.graph),
        std::to_string(s.workers),
        std::to_string(s.seed),
        csv_number(s.final_test_accuracy),
        csv_number(s.best_test_accuracy),
        csv_number(s.final_test_loss),
        csv_number(s.iterations),
        csv_number(s.edges),
        csv_number(s.mean_degree),
        csv_number(s.spectral_gap),
        csv_number(s.norm_variance_mean),
        csv_number(s.norm_variance_final),
        csv_number(s.consensus_distance_mean),
        csv_number(s.consensus_distance_final),
        csv_number(s.target_accuracy),
        csv_number(s.iterations_to_target),
        csv_number(s.simulated_time_to_target_s),
        csv_number(s.seconds_per_iteration),
        csv_number(s.samples_per_second),
        csv_number(s.scaling_efficiency),
        csv_number(s.bytes_per_gpu_per_iteration),
        csv_number(s.bytes_per_gpu),
        csv_number(s.simulated_seconds),
        csv_number(s.wall_seconds),
        csv_cell(s.timing_model),
        csv_cell(s.platform),
        csv_number(s.parameters),
        csv_number(s.epochs),
        std::to_string(s.global_batch),
        csv_number(s.train_samples),
        std::to_string(s.samples),
        csv_number(std::optional<double>(s.peak_lr)),
    };
    std::string line;
    for (const auto& cell : cells) {
      line += line.empty() ? "" : ",";
      line += cell;
    }
    for (const auto& value : run.axis_values) {
      line += ',';
      line += csv_cell(value);
    }
    out += line + "\n";
  }
  return out;
}

}  // namespace dbench::experiments
