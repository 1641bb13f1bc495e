// Sweeps: a grid of experiment configs, each run as its own `dbench simulate`, and summary.csv, the table of
// one row per run that reports read.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "experiments/config.hpp"
#include "results/summary_csv.hpp"

namespace dbench::experiments {

/// One value of a grid axis or of [set], as written in the sweep file.
struct SweepValue {
  std::string toml;   ///< TOML text, e.g. `16`, `"ring"`, `0.001`, `[64, 32]`
  std::string shown;  ///< as tables and labels show it, e.g. `16`, `ring`, `0.001`, `[64, 32]`
  int line = 0;       ///< where it was written in the sweep file (0: unknown)
  int column = 0;
};

/// One axis of the grid: an experiment config key, or the `algorithm` shorthand, and the values it takes.
struct SweepAxis {
  std::string key;                 ///< as written, e.g. "train.workers", "seed" or "algorithm"
  std::vector<SweepValue> values;  ///< at least one, no two equal
};

/// A parsed and checked sweep config (not yet expanded into runs).
struct SweepConfig {
  std::string name;               ///< names the default output directory results/<name>
  std::string description;        ///< free text
  double target_accuracy = 0.80;  ///< for iterations_to_target and simulated_time_to_target_s
  bool timing_only = false;       ///< each run is `dbench simulate --timing-only`: no training, no accuracy
  std::filesystem::path base;     ///< experiment config every run starts from; empty: the embedded defaults
  std::vector<std::pair<std::string, SweepValue>> set;  ///< [set]: key and value, applied to every run
  std::vector<SweepAxis> grid;  ///< in the order written; the first axis varies slowest
  std::string source;           ///< the sweep file's name in messages
  std::string text;             ///< the sweep file as written (copied to DIR/sweep.toml)
};

/// One point of the grid with its fully validated experiment config.
struct SweepRun {
  std::size_t index = 0;                 ///< position in grid order
  std::string id;                        ///< directory under runs/, e.g. "ring_w1008_s1"
  std::string label;                     ///< what reports group by over seeds, e.g. "ada ada_low=0.001"
  std::vector<std::string> axis_values;  ///< each axis's value as shown, in axis order
  std::vector<std::string> overrides;    ///< `key=value` applied to the base config, in order
  ExperimentConfig config;               ///< the resolved config the run gets

  /// The run's expected cost in arbitrary units (workers x iterations), for ETAs and scheduling.
  double cost() const;
};

/// Parses a sweep config; `folder` resolves a relative `base`. Throws ConfigError naming the key.
SweepConfig parse_sweep(std::string_view toml_text, std::string_view source_name,
                        const std::filesystem::path& folder);

/// Reads and parses a sweep file; the path is the source name of every error.
SweepConfig load_sweep_file(const std::filesystem::path& path);

/// Every run of the grid in grid order, each config built from the base, [set] and the axis values and
/// validated (keys, values, graph, platform); throws ConfigError naming the key and where it was written.
std::vector<SweepRun> expand_sweep(const SweepConfig& sweep);

/// `--shard i/N`: this process runs the grid runs whose index % count == index_1 - 1.
struct Shard {
  int index_1 = 1;  ///< 1-based shard number i
  int count = 1;    ///< number of shards N
  /// Whether grid run `run_index` belongs to this shard.
  bool contains(std::size_t run_index) const {
    return run_index % static_cast<std::size_t>(count) == static_cast<std::size_t>(index_1 - 1);
  }
};

/// Parses "i/N" with 1 <= i <= N; throws ConfigError saying what is expected.
Shard parse_shard(std::string_view text);

/// Whether a grid run's directory holds its finished run and, when it does not, why.
struct RunCheck {
  bool finished = false;
  std::string
      reason;  ///< why the run must be (re)computed; empty when finished or never started (no directory)
};

/// Checks `run_dir` against `config`: a config.toml equal to it and a complete summary.json (see
/// read_summary_json) of the same kind of run, timing only or trained; a missing, unreadable, malformed or
/// incomplete file, or a run of the other kind, is a reason to recompute.
RunCheck check_run(const std::filesystem::path& run_dir, const ExperimentConfig& config, bool timing_only);

/// Whether `run_dir` holds a finished run of `config` (check_run's verdict).
bool run_finished(const std::filesystem::path& run_dir, const ExperimentConfig& config, bool timing_only);

/// The summary.csv columns every sweep writes first, in order; one column per grid axis follows them.
std::span<const std::string_view> summary_columns();

/// Graph statistics (edges per round, spectral gap) by graph spec, so that a 1008-node eigen-solve is done
/// once per sweep rather than once per run.
class GraphStatsCache {
 public:
  /// Undirected edges (no self loops) of each round, and the family's spectral gap as topology::analyze
  /// reports it (static: 1 - |lambda_2|; time-varying: the effective per-iteration gap).
  struct Family {
    std::string kind;                 ///< the sequence's kind, as schedule.csv names it
    std::vector<std::int64_t> edges;  ///< per round
    double spectral_gap = 0.0;
  };

  /// The statistics of the graph `kind` (a graph kind name) built with `config`'s graph parameters.
  const Family& family(const ExperimentConfig& config, const std::string& kind);

 private:
  std::map<std::string, Family> families_;
};

/// The identifying cells of a run that has not finished: algorithm, graph, workers and seed, no results.
results::SummaryRow pending_summary(const ExperimentConfig& config);

/// Reads a finished run's directory (config.toml, summary.json, metrics.csv, schedule.csv, trace.csv,
/// accuracy_time.csv; a timing-only run has no metrics.csv nor accuracy_time.csv) into its summary row;
/// throws std::runtime_error (SummaryJsonError for summary.json) naming the file at fault.
results::SummaryRow summarize_run(const std::filesystem::path& run_dir, double target_accuracy,
                                  GraphStatsCache& cache);

/// Status of a grid run in summary.csv.
enum class RunStatus { done, failed, pending };

/// "done", "failed" or "pending".
std::string_view run_status_name(RunStatus status);

/// summary.csv of a sweep: the header (summary_columns() then the axis keys) and one row per run in grid
/// order; `summaries` and `statuses` are parallel to `runs`.
std::string summary_csv(const SweepConfig& sweep, std::span<const SweepRun> runs,
                        std::span<const results::SummaryRow> summaries, std::span<const RunStatus> statuses);

}  // namespace dbench::experiments
