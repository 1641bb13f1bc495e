// The sweep file format: reading a sweep config's TOML and checking its keys, [set] and [grid] values,
// with errors that point at file:line:column.
#include <fmt/core.h>
#include <toml++/toml.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <set>
#include <system_error>

#include "experiments/config_text.hpp"
#include "experiments/sweep.hpp"
#include "experiments/sweep_internal.hpp"

namespace dbench::experiments {
namespace {

namespace fs = std::filesystem;

constexpr std::array<std::string_view, 7> kSweepKeys = {
    "name", "description", "target_accuracy", "timing_only", "base", "set", "grid"};

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

// The file:line:column overload is shared with the expansion; this file adds the one for a TOML node.
using experiments::where;

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

}  // namespace

std::string where(std::string_view source, int line, int column) {
  return line > 0 ? fmt::format("{}:{}:{}: ", source, line, column) : fmt::format("{}: ", source);
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
      reason += "; a sweep has name, description, target_accuracy, timing_only, base, [set] and [grid]";
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
  if (const toml::node* node = root.get("timing_only")) {
    const auto* flag = node->as_boolean();
    if (flag == nullptr) {
      throw ConfigError(fmt::format("{}timing_only: expected true or false", where(source_name, *node)));
    }
    sweep.timing_only = flag->get();
    // A target is an accuracy to reach; a timing-only run trains nothing, so one would silently mean nothing.
    if (const toml::node* target = root.get("target_accuracy"); target != nullptr && sweep.timing_only) {
      throw ConfigError(
          fmt::format("{}target_accuracy: a timing-only sweep (timing_only = true) measures no accuracy; "
                      "drop one of the two",
                      where(source_name, *target)));
    }
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
  const std::string text = read_config_text(path, "sweep config");
  return parse_sweep(text, path.string(), path.parent_path());
}

}  // namespace dbench::experiments
