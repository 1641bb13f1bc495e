#include "experiments/timing_setup.hpp"

#include <fmt/core.h>
#include <fmt/ranges.h>
#include <toml++/toml.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <variant>

#include "experiments/config_text.hpp"
#include "models/model_zoo.hpp"
#include "models/profile_file.hpp"

namespace dbench::experiments {
namespace {

using Value = std::variant<double, std::string>;

/// A number of [platform] that overrides the preset's: one name for the config key, the calibration-file
/// key, the config's field and the simulator's.
template <class T>
struct PlatformOverride {
  std::string_view key;
  T PlatformConfig::*config;
  T sim::PlatformSpec::*spec;
};

// Every overriding number; `fabric` (a name) is the one other override.
constexpr std::array<PlatformOverride<int>, 5> kPlatformCounts{{
    {"gpus_per_node", &PlatformConfig::gpus_per_node, &sim::PlatformSpec::gpus_per_node},
    {"nics_per_node", &PlatformConfig::nics_per_node, &sim::PlatformSpec::nics_per_node},
    {"nodes_per_switch", &PlatformConfig::nodes_per_switch, &sim::PlatformSpec::nodes_per_switch},
    {"buildings", &PlatformConfig::buildings, &sim::PlatformSpec::buildings},
    {"stragglers", &PlatformConfig::stragglers, &sim::PlatformSpec::stragglers},
}};
constexpr std::array<PlatformOverride<double>, 25> kPlatformNumbers{{
    {"gpu_flops_per_s", &PlatformConfig::gpu_flops_per_s, &sim::PlatformSpec::gpu_flops_per_s},
    {"gpu_flops_per_s_bf16", &PlatformConfig::gpu_flops_per_s_bf16, &sim::PlatformSpec::gpu_flops_per_s_bf16},
    {"gpu_flops_per_s_fp16", &PlatformConfig::gpu_flops_per_s_fp16, &sim::PlatformSpec::gpu_flops_per_s_fp16},
    {"intra_node_bandwidth_Bps", &PlatformConfig::intra_node_bandwidth_Bps,
     &sim::PlatformSpec::intra_node_bandwidth_Bps},
    {"intra_node_latency_s", &PlatformConfig::intra_node_latency_s, &sim::PlatformSpec::intra_node_latency_s},
    {"nic_bandwidth_Bps", &PlatformConfig::nic_bandwidth_Bps, &sim::PlatformSpec::nic_bandwidth_Bps},
    {"nic_latency_s", &PlatformConfig::nic_latency_s, &sim::PlatformSpec::nic_latency_s},
    {"switch_bandwidth_Bps", &PlatformConfig::switch_bandwidth_Bps, &sim::PlatformSpec::switch_bandwidth_Bps},
    {"switch_latency_s", &PlatformConfig::switch_latency_s, &sim::PlatformSpec::switch_latency_s},
    {"inter_building_bandwidth_Bps", &PlatformConfig::inter_building_bandwidth_Bps,
     &sim::PlatformSpec::inter_building_bandwidth_Bps},
    {"inter_building_latency_s", &PlatformConfig::inter_building_latency_s,
     &sim::PlatformSpec::inter_building_latency_s},
    {"iteration_overhead_s", &PlatformConfig::iteration_overhead_s, &sim::PlatformSpec::iteration_overhead_s},
    {"intra_node_efficiency", &PlatformConfig::intra_node_efficiency,
     &sim::PlatformSpec::intra_node_efficiency},
    {"network_efficiency", &PlatformConfig::network_efficiency, &sim::PlatformSpec::network_efficiency},
    {"collective_latency_s", &PlatformConfig::collective_latency_s, &sim::PlatformSpec::collective_latency_s},
    {"bulk_step_latency_s", &PlatformConfig::bulk_step_latency_s, &sim::PlatformSpec::bulk_step_latency_s},
    {"nvls_efficiency", &PlatformConfig::nvls_efficiency, &sim::PlatformSpec::nvls_efficiency},
    {"collnet_efficiency", &PlatformConfig::collnet_efficiency, &sim::PlatformSpec::collnet_efficiency},
    {"multi_gpu_slowdown", &PlatformConfig::multi_gpu_slowdown, &sim::PlatformSpec::multi_gpu_slowdown},
    {"compute_jitter_cv", &PlatformConfig::compute_jitter_cv, &sim::PlatformSpec::compute_jitter_cv},
    {"compute_tail_probability", &PlatformConfig::compute_tail_probability,
     &sim::PlatformSpec::compute_tail_probability},
    {"compute_tail_factor", &PlatformConfig::compute_tail_factor, &sim::PlatformSpec::compute_tail_factor},
    {"straggler_factor", &PlatformConfig::straggler_factor, &sim::PlatformSpec::straggler_factor},
    {"allreduce_latency_s", &PlatformConfig::allreduce_latency_s, &sim::PlatformSpec::allreduce_latency_s},
    {"allreduce_bandwidth_Bps", &PlatformConfig::allreduce_bandwidth_Bps,
     &sim::PlatformSpec::allreduce_bandwidth_Bps},
}};

// One [platform]-style key applied to a spec; false when the key is not a platform value.
bool apply(sim::PlatformSpec& p, const std::string& key, const Value& value, const std::string& where) {
  const auto number = [&]() {
    if (const auto* d = std::get_if<double>(&value)) {
      if (!std::isfinite(*d)) {
        throw ConfigError(fmt::format("{}: {}: must be a finite number, got {}", where, key, *d));
      }
      return *d;
    }
    throw ConfigError(fmt::format("{}: {}: expected a number", where, key));
  };
  const auto count = [&]() {
    const double d = number();
    constexpr double kMaxCount = 1 << 30;
    if (!(std::abs(d) <= kMaxCount) || d != std::floor(d)) {
      throw ConfigError(fmt::format("{}: {}: expected an integer, got {}", where, key, d));
    }
    return static_cast<int>(d);
  };
  for (const auto& k : kPlatformCounts) {
    if (key == k.key) {
      p.*k.spec = count();
      return true;
    }
  }
  // A number within the range sim/ states for the key.
  const auto ranged = [&]() {
    const double d = number();
    if (const std::string reason = sim::check_platform_number(key, d); !reason.empty()) {
      throw ConfigError(fmt::format("{}: {}: {}", where, key, reason));
    }
    return d;
  };
  for (const auto& k : kPlatformNumbers) {
    if (key == k.key) {
      p.*k.spec = ranged();
      return true;
    }
  }
  // Keys only a calibration file sets (dbench calibrate measures them on CPU workers).
  if (key == "shared_core_turns") {
    p.shared_core_turns = number();
    return true;
  }
  if (key == "cores_per_node") {
    p.cores_per_node = count();
    return true;
  }
  if (key == "same_core_relief") {
    p.same_core_relief = number();
    return true;
  }
  if (key == "same_core_relief_whole") {
    p.same_core_relief_whole = number();
    return true;
  }
  if (key == "gradient_step_overhead_s") {
    p.gradient_step_overhead_s = ranged();
    return true;
  }
  if (key != "fabric") {
    return false;
  }
  const auto* name = std::get_if<std::string>(&value);
  if (name == nullptr) {
    throw ConfigError(fmt::format("{}: fabric: expected a string", where));
  }
  p.fabric = sim::parse_fabric(*name);
  return true;
}

std::map<std::string, Value> read_values(const std::filesystem::path& path) {
  const std::string text = read_config_text(path, "calibration file");
  std::map<std::string, Value> values;
  if (path.extension() == ".json") {
    nlohmann::json json;
    try {
      json = nlohmann::json::parse(text);
    } catch (const nlohmann::json::parse_error& e) {
      throw ConfigError(fmt::format("{}: JSON syntax error: {}", path.string(), e.what()));
    } catch (const nlohmann::json::exception& e) {
      // A number beyond a double (1e400) is the library's out_of_range, not a parse_error.
      throw ConfigError(fmt::format("{}: invalid JSON: {}", path.string(), e.what()));
    }
    for (const auto& [key, value] : json.items()) {
      if (value.is_number()) {
        values[key] = value.get<double>();
      } else if (value.is_string()) {
        values[key] = value.get<std::string>();
      } else {
        throw ConfigError(fmt::format("{}: {}: expected a number or a string", path.string(), key));
      }
    }
    return values;
  }
  toml::table table;
  try {
    table = toml::parse(text, path.string());
  } catch (const toml::parse_error& e) {
    throw ConfigError(fmt::format("{}: TOML syntax error: {}", path.string(), e.description()));
  }
  for (const auto& [key, node] : table) {
    if (const auto d = node.value<double>()) {
      values[std::string(key.str())] = *d;
    } else if (const auto s = node.value<std::string>()) {
      values[std::string(key.str())] = *s;
    } else {
      throw ConfigError(fmt::format("{}: {}: expected a number or a string", path.string(), key.str()));
    }
  }
  return values;
}

}  // namespace

sim::PlatformSpec read_calibration(const std::filesystem::path& path) {
  const auto values = read_values(path);
  const std::string where = path.string();
  sim::PlatformSpec spec;
  if (const auto it = values.find("base"); it != values.end()) {
    const auto* base = std::get_if<std::string>(&it->second);
    if (base == nullptr) {
      throw ConfigError(fmt::format("{}: base: expected a preset name", where));
    }
    if (*base != "custom") {
      spec = sim::platform_preset(*base);
    }
  }
  spec.name = path.stem().string();
  for (const auto& [key, value] : values) {
    if (key == "fitted_model" || key == "fitted_batch_per_gpu") {
      // What the step was fitted to, for calibration_caveat: a model dbench calibrate times and a batch, or
      // the file is damaged.
      const auto* name = std::get_if<std::string>(&value);
      if ((name != nullptr) != (key == "fitted_model")) {
        throw ConfigError(
            fmt::format("{}: {}: expected {}", where, key, name != nullptr ? "a number" : "a model name"));
      }
      if (name != nullptr &&
          std::ranges::find(models::known_models(), *name) == models::known_models().end()) {
        throw ConfigError(fmt::format("{}: fitted_model: {} is no model dbench calibrate times ({})", where,
                                      toml_string(*name), fmt::join(models::known_models(), " | ")));
      }
      continue;
    }
    if (key != "base" && !apply(spec, key, value, where)) {
      throw ConfigError(
          fmt::format("{}: {}: unknown key (a calibration file holds base and [platform] keys)", where, key));
    }
  }
  return spec;
}

std::string calibration_caveat(const ExperimentConfig& config) {
  const PlatformConfig& c = config.platform;
  if (!models::names_file(c.preset)) {
    return {};
  }
  const auto values = read_values(c.preset);
  std::string model;
  if (const auto it = values.find("fitted_model"); it != values.end()) {
    if (const auto* name = std::get_if<std::string>(&it->second)) {
      model = *name;
    }
  }
  double batch = 0.0;
  if (const auto it = values.find("fitted_batch_per_gpu"); it != values.end()) {
    if (const auto* b = std::get_if<double>(&it->second)) {
      batch = *b;
    }
  }
  const bool other_model = !model.empty() && model != c.timing_model;
  const bool other_batch = batch > 0.0 && batch != static_cast<double>(c.timing_batch_per_gpu);
  if (!other_model && !other_batch) {
    return {};
  }
  std::string differs;
  std::string remedy;
  if (other_model) {
    differs = fmt::format("platform.timing_model = {}", c.timing_model);
    remedy = fmt::format("--set train.model={}", c.timing_model);
  }
  if (other_batch) {
    differs += fmt::format("{}platform.timing_batch_per_gpu = {}", differs.empty() ? "" : " and ",
                           c.timing_batch_per_gpu);
    remedy +=
        fmt::format("{}--set train.batch_per_worker={}", remedy.empty() ? "" : " ", c.timing_batch_per_gpu);
  }
  const std::string fitted = !model.empty() && batch > 0.0
                                 ? fmt::format("{}'s step at batch {:g}", model, batch)
                             : !model.empty() ? fmt::format("{}'s step", model)
                                              : fmt::format("the step at batch {:g}", batch);
  return fmt::format(
      "platform.preset: {} was fitted to {}, but {}: the step comes from that fit, away from where it was "
      "measured (the simulated time can be off by more than the calibration's validated error); dbench "
      "calibrate {} measures this one",
      c.preset, fitted, differs, remedy);
}

sim::PlatformSpec platform_spec(const ExperimentConfig& config) {
  const PlatformConfig& c = config.platform;
  sim::PlatformSpec p;
  if (models::names_file(c.preset)) {
    p = read_calibration(c.preset);
  } else if (c.preset == "custom") {
    p.nodes_per_switch = 16;
  } else {
    p = sim::platform_preset(c.preset);
  }
  // Zero means "the preset's value" for every key below.
  const auto set = [](auto& field, auto value) {
    if (value != decltype(value){}) {
      field = value;
    }
  };
  for (const auto& k : kPlatformCounts) {
    set(p.*k.spec, c.*k.config);
  }
  for (const auto& k : kPlatformNumbers) {
    set(p.*k.spec, c.*k.config);
  }
  if (!c.fabric.empty()) {
    p.fabric = sim::parse_fabric(c.fabric);
  }
  if (c.preset == "custom" && p.switch_bandwidth_Bps == 0.0) {
    // No fabric bandwidth given: non-blocking, every fabric link as wide as a node's NICs together.
    p.switch_bandwidth_Bps = p.nic_bandwidth_Bps * p.nics_per_node;
  }
  sim::validate(p, config.train.workers);
  return p;
}

models::ModelProfile timing_profile(const ExperimentConfig& config) {
  if (models::names_file(config.platform.timing_model)) {
    return models::read_profile_file(config.platform.timing_model);
  }
  return models::timing_profile(config.platform.timing_model, config.train.mlp_hidden);
}

sim::TimingOptions timing_options(const ExperimentConfig& config) {
  sim::TimingOptions options;
  options.allreduce = sim::parse_allreduce_algorithm(config.platform.allreduce);
  options.bucket_bytes = config.platform.bucket_bytes;
  return options;
}

sim::TimingSpec make_timing_spec(const ExperimentConfig& config) {
  sim::TimingSpec spec;
  spec.platform = platform_spec(config);
  spec.gpus = config.train.workers;
  spec.profile = timing_profile(config);
  spec.batch_per_gpu = config.platform.timing_batch_per_gpu;
  spec.options = timing_options(config);
  spec.seed = config.seed;
  return spec;
}

}  // namespace dbench::experiments
