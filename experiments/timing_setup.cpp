#include "experiments/timing_setup.hpp"

#include <fmt/core.h>
#include <toml++/toml.h>

#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <variant>

namespace dbench::experiments {
namespace {

using Value = std::variant<double, std::string>;

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
  if (key == "gpus_per_node") {
    p.gpus_per_node = count();
  } else if (key == "gpu_flops_per_s") {
    p.gpu_flops_per_s = number();
  } else if (key == "intra_node_bandwidth_Bps") {
    p.gpu_link_bandwidth_Bps = number();
  } else if (key == "intra_node_latency_s") {
    p.gpu_link_latency_s = number();
  } else if (key == "nic_bandwidth_Bps") {
    p.nic_bandwidth_Bps = number();
  } else if (key == "nic_latency_s") {
    p.nic_latency_s = number();
  } else if (key == "nics_per_node") {
    p.nics_per_node = count();
  } else if (key == "switch_bandwidth_Bps") {
    p.switch_bandwidth_Bps = number();
  } else if (key == "switch_latency_s") {
    p.switch_latency_s = number();
  } else if (key == "nodes_per_switch") {
    p.nodes_per_switch = count();
  } else if (key == "iteration_overhead_s") {
    p.iteration_overhead_s = number();
  } else if (key == "intra_node_efficiency") {
    p.gpu_link_efficiency = number();
  } else if (key == "network_efficiency") {
    p.network_efficiency = number();
  } else if (key == "collective_latency_s") {
    p.collective_latency_s = number();
  } else if (key == "bulk_step_latency_s") {
    p.bulk_step_latency_s = number();
  } else if (key == "nvls_efficiency") {
    p.nvls_efficiency = number();
  } else if (key == "collnet_efficiency") {
    p.collnet_efficiency = number();
  } else if (key == "multi_gpu_slowdown") {
    p.multi_gpu_slowdown = number();
  } else if (key == "compute_jitter_cv") {
    p.compute_jitter_cv = number();
  } else if (key == "compute_tail_probability") {
    p.compute_tail_probability = number();
  } else if (key == "compute_tail_factor") {
    p.compute_tail_factor = number();
  } else if (key == "stragglers") {
    p.stragglers = count();
  } else if (key == "straggler_factor") {
    p.straggler_factor = number();
  } else if (key == "allreduce_latency_s") {
    p.allreduce_latency_s = number();
  } else if (key == "allreduce_bandwidth_Bps") {
    p.allreduce_bandwidth_Bps = number();
  } else if (key == "fabric") {
    const auto* name = std::get_if<std::string>(&value);
    if (name == nullptr) {
      throw ConfigError(fmt::format("{}: fabric: expected a string", where));
    }
    p.fabric = sim::parse_fabric(*name);
  } else {
    return false;
  }
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
    if (key != "base" && !apply(spec, key, value, where)) {
      throw ConfigError(
          fmt::format("{}: {}: unknown key (a calibration file holds base and [platform] keys)", where, key));
    }
  }
  return spec;
}

sim::PlatformSpec platform_spec(const ExperimentConfig& config) {
  const PlatformConfig& c = config.platform;
  sim::PlatformSpec p;
  if (c.preset.ends_with(".toml") || c.preset.ends_with(".json")) {
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
  set(p.gpus_per_node, c.gpus_per_node);
  set(p.gpu_flops_per_s, c.gpu_flops_per_s);
  set(p.gpu_link_bandwidth_Bps, c.intra_node_bandwidth_Bps);
  set(p.gpu_link_latency_s, c.intra_node_latency_s);
  set(p.nic_bandwidth_Bps, c.nic_bandwidth_Bps);
  set(p.nic_latency_s, c.nic_latency_s);
  set(p.nics_per_node, c.nics_per_node);
  set(p.switch_bandwidth_Bps, c.switch_bandwidth_Bps);
  set(p.switch_latency_s, c.switch_latency_s);
  set(p.nodes_per_switch, c.nodes_per_switch);
  set(p.iteration_overhead_s, c.iteration_overhead_s);
  set(p.gpu_link_efficiency, c.intra_node_efficiency);
  set(p.network_efficiency, c.network_efficiency);
  set(p.collective_latency_s, c.collective_latency_s);
  set(p.bulk_step_latency_s, c.bulk_step_latency_s);
  set(p.nvls_efficiency, c.nvls_efficiency);
  set(p.collnet_efficiency, c.collnet_efficiency);
  set(p.multi_gpu_slowdown, c.multi_gpu_slowdown);
  set(p.compute_jitter_cv, c.compute_jitter_cv);
  set(p.compute_tail_probability, c.compute_tail_probability);
  set(p.compute_tail_factor, c.compute_tail_factor);
  set(p.stragglers, c.stragglers);
  set(p.straggler_factor, c.straggler_factor);
  set(p.allreduce_latency_s, c.allreduce_latency_s);
  set(p.allreduce_bandwidth_Bps, c.allreduce_bandwidth_Bps);
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
  return models::model_profile(models::timing_spec(config.platform.timing_model, config.train.mlp_hidden));
}

sim::TimingOptions timing_options(const ExperimentConfig& config) {
  sim::TimingOptions options;
  options.allreduce = sim::parse_allreduce_algorithm(config.platform.allreduce);
  options.bucket_bytes = config.platform.bucket_bytes;
  return options;
}

sim::TimingSpec timing_spec(const ExperimentConfig& config) {
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
