// A parsed sweep expanded into runs: each grid point's id, label and overrides, its config built from the
// base and validated as `dbench simulate` would; and --shard, which splits those runs between processes.
#include "experiments/sweep.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <sstream>
#include <stdexcept>

#include "experiments/config_text.hpp"
#include "experiments/input_keys.hpp"
#include "experiments/sim_setup.hpp"
#include "experiments/sweep_internal.hpp"
#include "experiments/timing_setup.hpp"

namespace dbench::experiments {
namespace {

// Beyond this many runs a grid is almost certainly a mistake (and would take weeks).
constexpr std::size_t kMaxRuns = 100'000;

// A filesystem-safe token of a value for run ids: letters, digits, '.', '_' and '-'.
std::string id_token(std::string_view shown) {
  std::string out;
  for (const char c : shown) {
    const bool keep = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                      c == '.' || c == '-' || c == '_';
    if (keep) {
      out += c;
    } else if (c != '[' && c != ']' && c != ' ' && !out.empty() && out.back() != '-') {
      out += '-';
    }
  }
  while (!out.empty() && out.back() == '-') {
    out.pop_back();
  }
  return out;
}

// A run id short enough for every file named after it (logs/<id>.log, a staging name with a pid): a longer
// one keeps its first kIdChars characters and a hash of the whole, so that distinct values stay apart.
constexpr std::size_t kIdChars = 80;

std::string bounded_id(const std::string& id) {
  if (id.size() <= kIdChars + 17) {
    return id;
  }
  std::uint64_t hash = 14695981039346656037ULL;  // FNV-1a, 64 bits: the same id on every machine
  for (const char c : id) {
    hash = (hash ^ static_cast<unsigned char>(c)) * 1099511628211ULL;
  }
  return fmt::format("{}-{:016x}", id.substr(0, kIdChars), hash);
}

std::string leaf(std::string_view key) {
  const auto dot = key.rfind('.');
  return std::string(dot == std::string_view::npos ? key : key.substr(dot + 1));
}

// Where an override came from, to name it in errors the way the user wrote it.
struct OverrideOrigin {
  std::string text;               ///< the override as passed to load_config, `key=value`
  std::vector<std::string> keys;  ///< config keys it sets
  std::string written;            ///< e.g. `[grid] train.workers = 16`
  int line = 0;
  int column = 0;
};

// Rewrites load_config's lines about overrides ("SRC: KEY: REASON (from --set TEXT)") so that they point at
// the sweep file where the value was written; other lines get the run's id as context.
std::string explain_config_error(const std::string& message, std::string_view base_source,
                                 const SweepConfig& sweep, const SweepRun& run,
                                 const std::vector<OverrideOrigin>& origins) {
  std::string out;
  std::istringstream lines(message);
  for (std::string line; std::getline(lines, line);) {
    std::string rewritten;
    for (const auto& origin : origins) {
      const std::string suffix = fmt::format(" (from --set {})", origin.text);
      const std::string prefix = fmt::format("{}: ", base_source);
      if (line.ends_with(suffix) && line.starts_with(prefix)) {
        const std::string middle = line.substr(prefix.size(), line.size() - prefix.size() - suffix.size());
        rewritten = fmt::format("{}{} (from {}; run {})", where(sweep.source, origin.line, origin.column),
                                middle, origin.written, run.id);
        break;
      }
    }
    if (rewritten.empty()) {
      rewritten = fmt::format("{}: run {}: {}", sweep.source, run.id, line);
    }
    out += out.empty() ? "" : "\n";
    out += rewritten;
  }
  return out;
}

// A graph or platform error ("KEY: REASON") pointed at the sweep value that set KEY, if one did.
std::string explain_key_error(const std::string& what, const SweepConfig& sweep, const SweepRun& run,
                              const std::vector<OverrideOrigin>& origins) {
  const auto colon = what.find(": ");
  const std::string key = colon == std::string::npos ? std::string() : what.substr(0, colon);
  for (auto origin = origins.rbegin(); origin != origins.rend(); ++origin) {
    if (std::find(origin->keys.begin(), origin->keys.end(), key) != origin->keys.end()) {
      return fmt::format("{}{} (from {}; run {})", where(sweep.source, origin->line, origin->column), what,
                         origin->written, run.id);
    }
  }
  return fmt::format("{}: run {}: {}", sweep.source, run.id, what);
}

}  // namespace

// The config with cost-aware Ada off: its policy has the same name and checks the same rungs, without the
// timing simulations that pick rungs (seconds per run at 1008 GPUs, which the sweep's checks need not spend).
ExperimentConfig without_timing(ExperimentConfig config) {
  config.algorithm.ada_cost_aware = false;
  return config;
}

double SweepRun::cost() const {
  return static_cast<double>(config.train.workers) * static_cast<double>(config.train.iterations);
}

std::vector<SweepRun> expand_sweep(const SweepConfig& sweep) {
  const std::string base_source = sweep.base.empty() ? "<defaults>" : sweep.base.string();
  const std::string base_text =
      sweep.base.empty() ? std::string() : read_config_text(sweep.base, "base config");
  // The base alone first, so that its errors point into its own file; its graph and platform are checked
  // per run, with the grid's values.
  load_config(base_text, {}, base_source, Validation::keys_only);

  std::size_t total = 1;
  for (const auto& axis : sweep.grid) {
    if (total > kMaxRuns / axis.values.size()) {
      throw ConfigError(fmt::format("{}: grid: more than {} runs; split the sweep", sweep.source, kMaxRuns));
    }
    total *= axis.values.size();
  }

  // Labels name an axis by its last part unless two axes share it.
  std::map<std::string, int> leaf_uses;
  for (const auto& axis : sweep.grid) {
    ++leaf_uses[leaf(axis.key)];
  }
  const auto label_key = [&](const std::string& key) { return leaf_uses[leaf(key)] > 1 ? key : leaf(key); };
  const auto in_label = [](const std::string& key) {
    return key != kAlgorithmAxis && key != "train.workers" && key != "seed" && key != "algorithm.kind" &&
           key != "algorithm.graph";
  };

  std::vector<SweepRun> runs(total);
  std::map<std::string, std::size_t> ids;
  for (std::size_t index = 0; index < total; ++index) {
    SweepRun& run = runs[index];
    run.index = index;
    std::vector<const SweepValue*> values(sweep.grid.size());
    std::size_t rest = index;
    for (std::size_t a = sweep.grid.size(); a-- > 0;) {
      values[a] = &sweep.grid[a].values[rest % sweep.grid[a].values.size()];
      rest /= sweep.grid[a].values.size();
    }

    std::vector<OverrideOrigin> origins;
    std::string id;
    std::string label_suffix;
    std::string algorithm_label;
    for (const auto& [key, value] : sweep.set) {
      origins.push_back({fmt::format("{}={}", key, value.toml),
                         {key},
                         fmt::format("[set] {} = {}", key, value.toml),
                         value.line,
                         value.column});
    }
    for (std::size_t a = 0; a < sweep.grid.size(); ++a) {
      const std::string& key = sweep.grid[a].key;
      const SweepValue& value = *values[a];
      run.axis_values.push_back(value.shown);
      const std::string written = fmt::format("[grid] {} = {}", key, value.toml);
      std::string token;
      if (key == kAlgorithmAxis) {
        const bool centralized = value.shown == "centralized";
        origins.push_back(
            {fmt::format("algorithm.kind={}", toml_string(centralized ? "centralized" : "dpsgd")),
             {"algorithm.kind"},
             written,
             value.line,
             value.column});
        if (!centralized) {
          origins.push_back({fmt::format("algorithm.graph={}", value.toml),
                             {"algorithm.graph"},
                             written,
                             value.line,
                             value.column});
        }
        token = id_token(value.shown);
        algorithm_label = value.shown;
      } else {
        origins.push_back({fmt::format("{}={}", key, value.toml), {key}, written, value.line, value.column});
        const std::string shown = id_token(value.shown);
        token = key == "train.workers" ? fmt::format("w{}", shown)
                : key == "seed"        ? fmt::format("s{}", shown)
                                       : fmt::format("{}-{}", leaf(key), shown);
      }
      if (in_label(key)) {
        label_suffix += fmt::format(" {}={}", label_key(key), value.shown);
      }
      id += fmt::format("{}{}", id.empty() ? "" : "_", token);
    }
    if (id.empty() || id.front() == '.' || id.front() == '-') {
      id = fmt::format("run{}", id);
    }
    id = bounded_id(id);
    // Distinct values can share a token ("a/b" and "a:b"); the grid index keeps such ids apart, stably.
    if (ids.contains(id)) {
      id += fmt::format("-{}", index);
    }
    ids.emplace(id, index);
    run.id = id;

    run.overrides.push_back(fmt::format("name={}", toml_string(run.id)));
    for (const auto& origin : origins) {
      run.overrides.push_back(origin.text);
    }
    try {
      run.config = load_config(base_text, run.overrides, base_source,
                               sweep.timing_only ? Validation::timing_only : Validation::full);
    } catch (const ConfigError& e) {
      throw ConfigError(explain_config_error(e.what(), base_source, sweep, run, origins));
    }
    try {
      // What `dbench simulate` checks before it trains: the graph or policy, and the platform.
      make_policy(without_timing(run.config));
      platform_spec(run.config);
      timing_profile(run.config);
      timing_options(run.config);
    } catch (const ConfigError& e) {
      throw ConfigError(explain_key_error(e.what(), sweep, run, origins));
    } catch (const std::invalid_argument& e) {
      throw ConfigError(explain_key_error(error_message(e), sweep, run, origins));
    }
    if (!algorithm_label.empty()) {
      run.label = algorithm_label;
    } else if (run.config.algorithm.kind == "centralized") {
      run.label = "centralized";
    } else {
      run.label = run.config.algorithm.graph;
    }
    run.label += label_suffix;
  }
  return runs;
}

Shard parse_shard(std::string_view text) {
  const auto fail = [&]() -> Shard {
    throw ConfigError(fmt::format(
        "--shard {}: expected i/N with integers 1 <= i <= N, e.g. 1/4 (N processes each run every N-th run)",
        text));
  };
  const auto slash = text.find('/');
  if (slash == std::string_view::npos) {
    return fail();
  }
  const auto parse = [](std::string_view part) -> std::optional<int> {
    if (part.empty() || part.size() > 9 ||
        !std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      return std::nullopt;
    }
    return std::stoi(std::string(part));
  };
  const auto i = parse(text.substr(0, slash));
  const auto n = parse(text.substr(slash + 1));
  if (!i || !n || *i < 1 || *n < 1 || *i > *n) {
    return fail();
  }
  return Shard{*i, *n};
}

}  // namespace dbench::experiments
