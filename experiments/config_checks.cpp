// The checks of one config key's value (ranges, names, "did you mean") and the list of problems a load
// reports.
#include "experiments/config_checks.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <limits>
#include <sstream>

#include "experiments/config.hpp"
#include "experiments/config_text.hpp"
#include "models/model_profile.hpp"
#include "models/model_zoo.hpp"
#include "models/profile_file.hpp"
#include "sim/platform.hpp"

namespace dbench::experiments {

std::string join(std::span<const std::string_view> words) {
  std::string out;
  for (const auto word : words) {
    out += out.empty() ? "" : ", ";
    out += word;
  }
  return out;
}

// "integer 5", "string \"abc\"": what a user wrote, for type errors.
std::string describe(const toml::node& node) {
  std::ostringstream text;
  switch (node.type()) {
    case toml::node_type::string:
      text << "string " << toml_string(node.as_string()->get());
      break;
    case toml::node_type::integer:
      text << "integer " << *node.as_integer();
      break;
    case toml::node_type::floating_point:
      text << "float " << *node.as_floating_point();
      break;
    case toml::node_type::boolean:
      text << "boolean " << *node.as_boolean();
      break;
    case toml::node_type::array:
      text << "array " << *node.as_array();
      break;
    case toml::node_type::table:
      text << "table";
      break;
    case toml::node_type::date:
      text << "date " << *node.as_date();
      break;
    case toml::node_type::time:
      text << "time " << *node.as_time();
      break;
    case toml::node_type::date_time:
      text << "date-time " << *node.as_date_time();
      break;
    case toml::node_type::none:
      text << "nothing";
      break;
  }
  std::string out = text.str();
  constexpr std::size_t kMaxShown = 60;
  if (out.size() > kMaxShown) {
    out = out.substr(0, kMaxShown) + "...";
  }
  return out;
}

std::string full_key(std::string_view section, std::string_view key) {
  return section.empty() ? std::string(key) : fmt::format("{}.{}", section, key);
}

Check<int> at_least(int min) {
  return
      [min](const int& v) { return v >= min ? std::string() : fmt::format("must be >= {}, got {}", min, v); };
}

Check<int> between(int min, int max, std::string_view why) {
  return [min, max, why = std::string(why)](const int& v) {
    if (v < min) {
      return fmt::format("must be >= {}, got {}", min, v);
    }
    return v <= max ? std::string()
                    : fmt::format("must be <= {}{}, got {}", max, why.empty() ? "" : " (" + why + ")", v);
  };
}

Check<double> at_least(double min) {
  return [min](const double& v) {
    return v >= min ? std::string() : fmt::format("must be >= {}, got {}", min, toml_double(v));
  };
}

Check<double> above(double min) {
  return [min](const double& v) {
    return v > min ? std::string() : fmt::format("must be > {}, got {}", min, toml_double(v));
  };
}

// [min, max) or (min, max] intervals, spelled the way the message shows them.
Check<double> within(double min, bool min_open, double max, bool max_open) {
  return [=](const double& v) {
    const bool ok = (min_open ? v > min : v >= min) && (max_open ? v < max : v <= max);
    return ok ? std::string()
              : fmt::format("must be in {}{}, {}{}, got {}", min_open ? "(" : "[", min, max,
                            max_open ? ")" : "]", toml_double(v));
  };
}

// 0 (the preset's value) or a factor in [min, max].
Check<double> zero_or_within(double min, double max) {
  return [=](const double& v) {
    return v == 0.0 || (v >= min && v <= max)
               ? std::string()
               : fmt::format("must be 0 (the preset's) or in [{}, {}], got {}", min, max, toml_double(v));
  };
}

// `allowed` views names with static storage (the schema's tables, or the simulator's).
Check<std::string> one_of(std::span<const std::string_view> allowed) {
  return [allowed](const std::string& v) {
    if (std::find(allowed.begin(), allowed.end(), v) != allowed.end()) {
      return std::string();
    }
    std::string reason = fmt::format("must be one of {}; got {}", join(allowed), toml_string(v));
    if (const auto guess = closest_name(v, allowed)) {
      reason += fmt::format(" (did you mean '{}'?)", *guess);
    }
    return reason;
  };
}

Check<std::string> non_empty() {
  return [](const std::string& v) { return v.empty() ? std::string("must not be empty") : std::string(); };
}

Check<std::string> any_string() {
  return [](const std::string&) { return std::string(); };
}

Check<bool> any_bool() {
  return [](const bool&) { return std::string(); };
}

Check<std::string> run_name() {
  return [](const std::string& v) {
    const bool chars_ok = std::all_of(v.begin(), v.end(), [](char c) {
      return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
             c == '_' || c == '-';
    });
    if (!v.empty() && v.front() != '.' && chars_ok) {
      return std::string();
    }
    return fmt::format(
        "must be non-empty, not start with '.', and use only letters, digits, '.', '_' and '-' (it names "
        "result directories); got {}",
        toml_string(v));
  };
}

Check<std::uint64_t> seed_range() {
  // TOML integers are signed 64-bit, so larger seeds could not be written back by to_toml.
  return [](const std::uint64_t& v) {
    constexpr auto kMax = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
    return v <= kMax ? std::string() : fmt::format("must be <= {}, got {}", kMax, v);
  };
}

Check<std::vector<int>> each_at_least(int min, bool increasing) {
  return [=](const std::vector<int>& values) {
    for (std::size_t i = 0; i < values.size(); ++i) {
      if (values[i] < min) {
        return fmt::format("every entry must be >= {}, got {} at index {}", min, values[i], i);
      }
      if (increasing && i > 0 && values[i] <= values[i - 1]) {
        return fmt::format("entries must be strictly increasing, got {} after {}", values[i], values[i - 1]);
      }
    }
    return std::string();
  };
}

Check<std::vector<double>> each_above(double min) {
  return [=](const std::vector<double>& values) {
    for (std::size_t i = 0; i < values.size(); ++i) {
      if (!(values[i] > min)) {
        return fmt::format("every entry must be > {}, got {} at index {}", min, values[i], i);
      }
      if (i > 0 && values[i] <= values[i - 1]) {
        return fmt::format("entries must be strictly increasing, got {} after {}", values[i], values[i - 1]);
      }
    }
    return std::string();
  };
}

// Hidden widths of the mlp: a few layers of a size the simulator's replicas can hold (each replica keeps
// every layer's weights; a 65536-wide layer on 784 inputs is already 200 MB per replica).
Check<std::vector<int>> mlp_widths() {
  constexpr int kMaxWidth = 65536;
  constexpr std::size_t kMaxLayers = 16;
  return [=](const std::vector<int>& values) {
    if (values.size() > kMaxLayers) {
      return fmt::format("at most {} hidden layers, got {}", kMaxLayers, values.size());
    }
    for (std::size_t i = 0; i < values.size(); ++i) {
      if (values[i] < 1 || values[i] > kMaxWidth) {
        return fmt::format("every width must be in [1, {}], got {} at index {}", kMaxWidth, values[i], i);
      }
    }
    return std::string();
  };
}

// Empty (keep the preset's value) or one of `allowed`.
Check<std::string> empty_or_one_of(std::span<const std::string_view> allowed) {
  return [check = one_of(allowed)](const std::string& v) { return v.empty() ? std::string() : check(v); };
}

namespace {

// The simulator's presets, and "custom" (a platform from the config's keys alone).
std::span<const std::string_view> preset_names() {
  static const std::vector<std::string_view> names = [] {
    std::vector<std::string_view> all(sim::known_presets().begin(), sim::known_presets().end());
    all.emplace_back("custom");
    return all;
  }();
  return names;
}

/// One of `names` (spans of static lists), or a path ending in .toml or .json to a file of `file_kind`.
Check<std::string> name_or_file(std::span<const std::string_view> names, std::string_view file_kind) {
  return [names, file_kind](const std::string& v) {
    if (std::find(names.begin(), names.end(), v) != names.end() || models::names_file(v)) {
      return std::string();
    }
    std::string reason = fmt::format("must be one of {}, or a {} path ending in .toml or .json; got {}",
                                     join(names), file_kind, toml_string(v));
    if (const auto guess = closest_name(v, names)) {
      reason += fmt::format(" (did you mean '{}'?)", *guess);
    }
    return reason;
  };
}

}  // namespace

Check<std::string> timing_model_or_file() {
  return name_or_file(models::timing_models(), "model profile file");
}

Check<std::string> preset_or_file() {
  return name_or_file(preset_names(), "calibration file");
}

void Problems::note_override(const std::string& key, const std::string& text) {
  for (auto dot = key.find('.'); dot != std::string::npos; dot = key.find('.', dot + 1)) {
    overrides_[key.substr(0, dot)] = text;
  }
  overrides_[key] = text;
}

void Problems::add(const std::string& key, const toml::node* node, std::string_view reason) {
  if (const auto it = overrides_.find(key); it != overrides_.end()) {
    lines_.push_back(fmt::format("{}: {}: {} (from --set {})", source_name_, key, reason, it->second));
  } else if (node != nullptr && node->source().begin.line > 0) {
    const auto& where = node->source().begin;
    lines_.push_back(fmt::format("{}:{}:{}: {}: {}", source_name_, where.line, where.column, key, reason));
  } else {
    lines_.push_back(fmt::format("{}: {}: {}", source_name_, key, reason));
  }
}

void Problems::throw_if_any() const {
  if (lines_.empty()) {
    return;
  }
  std::string message;
  for (const auto& line : lines_) {
    message += message.empty() ? "" : "\n";
    message += line;
  }
  throw ConfigError(message);
}

}  // namespace dbench::experiments
