// Sweep configs into validated runs, and finished runs into summary.csv rows.
#include "experiments/sweep.hpp"

#include <fmt/core.h>
#include <toml++/toml.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>
#include <stdexcept>
#include <system_error>

#include "experiments/analysis.hpp"
#include "experiments/config_text.hpp"
#include "experiments/sim_setup.hpp"
#include "experiments/summary_json.hpp"
#include "experiments/timing_setup.hpp"
#include "topology/analysis.hpp"
#include "topology/generators.hpp"

namespace dbench::experiments {
namespace {

namespace fs = std::filesystem;

constexpr std::array<std::string_view, 6> kSweepKeys = {"name", "description", "target_accuracy",
                                                        "base", "set",         "grid"};

// The shorthand axis: "centralized", or any graph or policy name for D-PSGD.
constexpr std::string_view kAlgorithmAxis = "algorithm";

// Beyond this many runs a grid is almost certainly a mistake (and would take weeks).
constexpr std::size_t kMaxRuns = 100'000;

// "integer 5", "string \"abc\"": what a user wrote, for type errors.
std::string describe(const SweepValue& value, const toml::node& node) {
  switch (node.type()) {
    case toml::node_type::string:
      return fmt::format("string {}", value.toml);
    case toml::node_type::integer:
      return fmt::format("integer {}", value.toml);
    case toml::node_type::floating_point:
      return fmt::format("float {}", value.toml);
    case toml::node_type::boolean:
      return fmt::format("boolean {}", value.toml);
    case toml::node_type::array:
      return fmt::format("array {}", value.toml);
    default:
      return "a value of another type";
  }
}

// The first nan or inf in a value (or one of its array's elements), to say that numbers must be finite.
const toml::node* non_finite(const toml::node& node) {
  if (const auto* f = node.as_floating_point(); f != nullptr && !std::isfinite(f->get())) {
    return &node;
  }
  if (const auto* array = node.as_array()) {
    for (const auto& element : *array) {
      if (const auto* found = non_finite(element)) {
        return found;
      }
    }
  }
  return nullptr;
}

// A TOML value as override text and as shown; throws on tables, dates and times, which no key takes.
std::optional<SweepValue> sweep_value(const toml::node& node) {
  SweepValue value;
  value.line = static_cast<int>(node.source().begin.line);
  value.column = static_cast<int>(node.source().begin.column);
  if (const auto* s = node.as_string()) {
    value.toml = toml_string(s->get());
    value.shown = s->get();
  } else if (const auto* i = node.as_integer()) {
    value.toml = value.shown = std::to_string(i->get());
  } else if (const auto* f = node.as_floating_point()) {
    if (!std::isfinite(f->get())) {
      return std::nullopt;
    }
    value.toml = toml_double(f->get());
    value.shown = fmt::format("{}", f->get());
  } else if (const auto* b = node.as_boolean()) {
    value.toml = value.shown = b->get() ? "true" : "false";
  } else if (const auto* array = node.as_array()) {
    std::string toml = "[";
    std::string shown = "[";
    for (std::size_t k = 0; k < array->size(); ++k) {
      const auto element = sweep_value(*array->get(k));
      if (!element || array->get(k)->is_array()) {
        return std::nullopt;
      }
      toml += fmt::format("{}{}", k == 0 ? "" : ", ", element->toml);
      shown += fmt::format("{}{}", k == 0 ? "" : ", ", element->shown);
    }
    value.toml = toml + "]";
    value.shown = shown + "]";
  } else {
    return std::nullopt;
  }
  return value;
}

// Every key of the experiment config with the TOML type of its value, read off the resolved defaults.
std::map<std::string, toml::node_type> experiment_keys() {
  const toml::table defaults = toml::parse(to_toml(ExperimentConfig{}));
  std::map<std::string, toml::node_type> keys;
  for (const auto& [name, node] : defaults) {
    if (const auto* section = node.as_table()) {
      for (const auto& [key, child] : *section) {
        keys.emplace(fmt::format("{}.{}", name.str(), key.str()), child.type());
      }
    } else {
      keys.emplace(std::string(name.str()), node.type());
    }
  }
  return keys;
}

// "file:line:col: " for a place in the sweep file, or "file: " where the place is unknown.
std::string where(std::string_view source, int line, int column) {
  return line > 0 ? fmt::format("{}:{}:{}: ", source, line, column) : fmt::format("{}: ", source);
}

std::string where(std::string_view source, const toml::node& node) {
  return where(source, static_cast<int>(node.source().begin.line),
               static_cast<int>(node.source().begin.column));
}

bool is_bare_key(std::string_view part) {
  return !part.empty() && std::all_of(part.begin(), part.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
  });
}

bool is_config_key_syntax(std::string_view key) {
  std::size_t start = 0;
  while (true) {
    const auto dot = key.find('.', start);
    if (!is_bare_key(key.substr(start, dot == std::string_view::npos ? dot : dot - start))) {
      return false;
    }
    if (dot == std::string_view::npos) {
      return true;
    }
    start = dot + 1;
  }
}

bool is_run_name(std::string_view name) {
  return !name.empty() && name.front() != '.' && std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
           c == '_' || c == '-';
  });
}

// A sweep key with its value node, as flattened from [set] or [grid] ("train.workers" and [grid.train]
// workers are the same key).
struct KeyNode {
  std::string key;
  const toml::node* node;
};

void flatten(const toml::table& table, const std::string& prefix, std::vector<KeyNode>& out) {
  for (const auto& [raw_key, node] : table) {
    const std::string key =
        prefix.empty() ? std::string(raw_key.str()) : prefix + "." + std::string(raw_key.str());
    if (const auto* inner = node.as_table()) {
      flatten(*inner, key, out);
    } else {
      out.push_back({key, &node});
    }
  }
}

// Keys in the order they are written, so the grid's first axis is the one written first.
void sort_by_position(std::vector<KeyNode>& keys) {
  std::stable_sort(keys.begin(), keys.end(), [](const KeyNode& a, const KeyNode& b) {
    const auto& pa = a.node->source().begin;
    const auto& pb = b.node->source().begin;
    return std::pair(pa.line, pa.column) < std::pair(pb.line, pb.column);
  });
}

// Checks a [set] or [grid] key that names an experiment config key (unknown keys are left to load_config,
// which suggests the intended one); a string key must get a string, since an override would take any text.
void check_value_type(const SweepConfig& sweep, const std::map<std::string, toml::node_type>& keys,
                      std::string_view section, const std::string& key, const SweepValue& value,
                      const toml::node& node) {
  const auto known = keys.find(key);
  if (known != keys.end() && known->second == toml::node_type::string && !node.is_string()) {
    throw ConfigError(fmt::format("{}[{}] {}: expected a string, got {}", where(sweep.source, node), section,
                                  key, describe(value, node)));
  }
}

const toml::node& require_node(const toml::table& root, std::string_view key) {
  return *root.get(key);
}

std::string read_text(const fs::path& path, std::string_view what) {
  return read_config_text(path, what);
}

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

// The config with cost-aware Ada off: its policy has the same name and checks the same rungs, without the
// timing simulations that pick rungs (seconds per run at 1008 GPUs, which the sweep's checks need not spend).
ExperimentConfig without_timing(ExperimentConfig config) {
  config.algorithm.ada_cost_aware = false;
  return config;
}

// A CSV file of a run directory, read by column name.
class RunCsv {
 public:
  explicit RunCsv(const fs::path& path)
      : path_(path), table_(parse_csv(read_text(path, "run file"), path.string())) {}

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
  CsvTable table_;
};

std::string csv_cell(std::string_view text) {
  if (text.find_first_of(",\"\n\r") == std::string_view::npos) {
    return std::string(text);
  }
  std::string out = "\"";
  for (const char c : text) {
    out += c;
    if (c == '"') {
      out += '"';
    }
  }
  return out + "\"";
}

std::string csv_number(const std::optional<double>& value) {
  return value && std::isfinite(*value) ? fmt::format("{}", *value) : std::string();
}

std::string csv_number(const std::optional<std::int64_t>& value) {
  return value ? std::to_string(*value) : std::string();
}

}  // namespace

double SweepRun::cost() const {
  return static_cast<double>(config.train.workers) * static_cast<double>(config.train.iterations);
}

SweepConfig parse_sweep(std::string_view toml_text, std::string_view source_name, const fs::path& folder) {
  SweepConfig sweep;
  sweep.source = std::string(source_name);
  sweep.text = std::string(toml_text);
  toml::table root;
  try {
    root = toml::parse(toml_text, std::string(source_name));
  } catch (const toml::parse_error& e) {
    const auto& at = e.source().begin;
    throw ConfigError(
        fmt::format("{}:{}:{}: TOML syntax error: {}", source_name, at.line, at.column, e.description()));
  }
  const auto keys = experiment_keys();

  for (const auto& [raw_key, node] : root) {
    const std::string key(raw_key.str());
    if (std::find(kSweepKeys.begin(), kSweepKeys.end(), key) != kSweepKeys.end()) {
      continue;
    }
    std::string reason = "unknown sweep key";
    if (const auto guess = closest_name(key, kSweepKeys)) {
      reason += fmt::format(" (did you mean '{}'?)", *guess);
    }
    const bool experiment_key = std::any_of(keys.begin(), keys.end(), [&key](const auto& entry) {
      return entry.first == key || entry.first.starts_with(key + ".");
    });
    if (experiment_key) {
      reason += "; experiment config keys go in [set] (every run) or [grid] (an axis)";
    } else {
      reason += "; a sweep has name, description, target_accuracy, base, [set] and [grid]";
    }
    throw ConfigError(fmt::format("{}{}: {}", where(source_name, node), key, reason));
  }

  const auto string_field = [&](std::string_view key, std::string& out) {
    if (const toml::node* node = root.get(key)) {
      const auto* s = node->as_string();
      if (s == nullptr) {
        throw ConfigError(fmt::format("{}{}: expected a string", where(source_name, *node), key));
      }
      out = s->get();
      return true;
    }
    return false;
  };

  if (!string_field("name", sweep.name)) {
    sweep.name = fs::path(std::string(source_name)).stem().string();
  }
  if (!is_run_name(sweep.name)) {
    const toml::node* node = root.get("name");
    throw ConfigError(fmt::format(
        "{}name: must be non-empty, not start with '.', and use only letters, digits, '.', '_' and '-' (it "
        "names the results directory); got {}",
        node != nullptr ? where(source_name, *node) : where(source_name, 0, 0), toml_string(sweep.name)));
  }
  string_field("description", sweep.description);
  if (const toml::node* node = root.get("target_accuracy")) {
    const auto value = node->value<double>();
    if (!value || !(*value >= 0.0 && *value <= 1.0)) {
      throw ConfigError(
          fmt::format("{}target_accuracy: expected a number in [0, 1]", where(source_name, *node)));
    }
    sweep.target_accuracy = *value;
  }
  std::string base;
  if (string_field("base", base)) {
    if (base.empty()) {
      throw ConfigError(fmt::format("{}base: must name an experiment config file",
                                    where(source_name, require_node(root, "base"))));
    }
    sweep.base = fs::path(base).is_absolute() ? fs::path(base) : folder / base;
    std::error_code ec;
    if (!fs::is_regular_file(sweep.base, ec)) {
      throw ConfigError(fmt::format("{}base: cannot read '{}': {}",
                                    where(source_name, require_node(root, "base")), sweep.base.string(),
                                    fs::exists(sweep.base, ec) ? "not a file" : "no such file"));
    }
  }

  std::vector<KeyNode> set_keys;
  if (const toml::node* node = root.get("set")) {
    const auto* table = node->as_table();
    if (table == nullptr) {
      throw ConfigError(
          fmt::format("{}set: expected a table ([set] with key = value lines)", where(source_name, *node)));
    }
    flatten(*table, "", set_keys);
    sort_by_position(set_keys);
  }
  const toml::node* grid_node = root.get("grid");
  if (grid_node == nullptr) {
    throw ConfigError(fmt::format(
        "{}: grid: missing; a sweep needs a [grid] of at least one axis, e.g. \"train.workers\" = [16, 64]",
        source_name));
  }
  const auto* grid_table = grid_node->as_table();
  if (grid_table == nullptr) {
    throw ConfigError(fmt::format("{}grid: expected a table ([grid] with key = [values] lines)",
                                  where(source_name, *grid_node)));
  }
  std::vector<KeyNode> grid_keys;
  flatten(*grid_table, "", grid_keys);
  sort_by_position(grid_keys);
  if (grid_keys.empty()) {
    throw ConfigError(fmt::format("{}grid: empty; list at least one axis, e.g. \"train.workers\" = [16, 64]",
                                  where(source_name, *grid_node)));
  }

  std::set<std::string> seen;
  for (const auto& [key, node] : set_keys) {
    if (!is_config_key_syntax(key)) {
      throw ConfigError(
          fmt::format("{}[set] \"{}\": not a config key (expected section.key, e.g. train.workers)",
                      where(source_name, *node), key));
    }
    if (key == kAlgorithmAxis) {
      throw ConfigError(fmt::format(
          "{}[set] algorithm: the algorithm shorthand is a [grid] axis; in [set] use algorithm.kind and "
          "algorithm.graph",
          where(source_name, *node)));
    }
    if (const auto* bad = non_finite(*node)) {
      throw ConfigError(fmt::format("{}[set] {}: must be a finite number, got {}", where(source_name, *bad),
                                    key, bad->as_floating_point()->get()));
    }
    const auto value = sweep_value(*node);
    if (!value) {
      throw ConfigError(fmt::format("{}[set] {}: expected a string, number, boolean or array of them",
                                    where(source_name, *node), key));
    }
    check_value_type(sweep, keys, "set", key, *value, *node);
    seen.insert(key);
    sweep.set.emplace_back(key, *value);
  }

  for (const auto& [key, node] : grid_keys) {
    if (!is_config_key_syntax(key)) {
      throw ConfigError(
          fmt::format("{}[grid] \"{}\": not a config key (expected section.key, e.g. train.workers)",
                      where(source_name, *node), key));
    }
    if (seen.contains(key)) {
      throw ConfigError(fmt::format("{}[grid] {}: also set in [set]; a key is either fixed or an axis",
                                    where(source_name, *node), key));
    }
    const auto* array = node->as_array();
    if (array == nullptr) {
      throw ConfigError(fmt::format("{}[grid] {}: expected a list of values, e.g. [1, 2, 3]",
                                    where(source_name, *node), key));
    }
    if (array->empty()) {
      throw ConfigError(fmt::format("{}[grid] {}: empty list; an axis needs at least one value",
                                    where(source_name, *node), key));
    }
    SweepAxis axis;
    axis.key = key;
    for (const auto& element : *array) {
      if (const auto* bad = non_finite(element)) {
        throw ConfigError(fmt::format("{}[grid] {}: must be a finite number, got {}",
                                      where(source_name, *bad), key, bad->as_floating_point()->get()));
      }
      const auto value = sweep_value(element);
      if (!value) {
        throw ConfigError(fmt::format("{}[grid] {}: expected a string, number, boolean or array of them",
                                      where(source_name, element), key));
      }
      if (key == kAlgorithmAxis && !element.is_string()) {
        throw ConfigError(fmt::format(
            "{}[grid] algorithm: expected a string (\"centralized\" or a graph or policy name), got {}",
            where(source_name, element), describe(*value, element)));
      }
      check_value_type(sweep, keys, "grid", key, *value, element);
      const bool repeated = std::any_of(axis.values.begin(), axis.values.end(),
                                        [&](const SweepValue& v) { return v.toml == value->toml; });
      if (repeated) {
        throw ConfigError(
            fmt::format("{}[grid] {}: {} is listed twice", where(source_name, element), key, value->shown));
      }
      axis.values.push_back(*value);
    }
    seen.insert(key);
    sweep.grid.push_back(std::move(axis));
  }
  if (seen.contains(std::string(kAlgorithmAxis))) {
    for (const std::string key : {"algorithm.kind", "algorithm.graph"}) {
      if (seen.contains(key)) {
        throw ConfigError(
            fmt::format("{}: [grid] algorithm sets {} already; drop one of the two", source_name, key));
      }
    }
  }
  return sweep;
}

SweepConfig load_sweep_file(const fs::path& path) {
  const std::string text = read_text(path, "sweep config");
  return parse_sweep(text, path.string(), path.parent_path());
}

std::vector<SweepRun> expand_sweep(const SweepConfig& sweep) {
  const std::string base_source = sweep.base.empty() ? "<defaults>" : sweep.base.string();
  const std::string base_text = sweep.base.empty() ? std::string() : read_text(sweep.base, "base config");
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
      run.config = load_config(base_text, run.overrides, base_source);
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
      throw ConfigError(explain_key_error(e.what(), sweep, run, origins));
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

RunCheck check_run(const fs::path& run_dir, const ExperimentConfig& config) {
  std::error_code ec;
  if (!fs::exists(run_dir, ec)) {
    return {};
  }
  const fs::path config_file = run_dir / "config.toml";
  if (!fs::is_regular_file(config_file, ec)) {
    return {false, fmt::format("no config.toml in {}", run_dir.string())};
  }
  try {
    if (load_config_file(config_file) != config) {
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
    read_summary_json(summary);
  } catch (const SummaryJsonError& e) {
    return {false, e.what()};
  }
  return {true, {}};
}

bool run_finished(const fs::path& run_dir, const ExperimentConfig& config) {
  return check_run(run_dir, config).finished;
}

std::span<const std::string_view> summary_columns() {
  return required_summary_columns();
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

RunSummary pending_summary(const ExperimentConfig& config) {
  RunSummary summary;
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
  const ExperimentConfig config = load_config_file(run_dir / "config.toml");
  RunSummary s;
  s.algorithm = config.algorithm.kind;
  s.workers = config.train.workers;
  s.seed = config.seed;
  s.target_accuracy = target_accuracy;

  const SummaryJson summary = read_summary_json(run_dir / "summary.json");
  s.graph = summary.graph;
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

  // Replica statistics: the mean over evaluations after the start (iteration 0 is consensus by construction).
  const RunCsv metrics(run_dir / "metrics.csv");
  if (metrics.rows() > 0) {
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
        kinds = split_names(config.algorithm.ada_ladder);
      } else if (config.algorithm.graph == "switch") {
        kinds = split_names(config.algorithm.switch_graphs);
      }
      for (const auto& kind : kinds) {
        if (kind != "allreduce" && kind != "global-average") {
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
    out += csv_cell(axis.key);
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
