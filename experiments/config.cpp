// Loading, validating and writing experiment configs. One schema (visit_fields) drives reading, validation,
// unknown-key detection and to_toml, so a key added there is handled everywhere at once.
#include "experiments/config.hpp"

#include <fmt/core.h>
#include <toml++/toml.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <span>
#include <sstream>
#include <system_error>
#include <type_traits>
#include <utility>
#include <vector>

#include "experiments/config_text.hpp"
#include "experiments/sim_setup.hpp"
#include "sim/platform.hpp"
#include "sim/timing.hpp"

namespace dbench::experiments {
namespace {

constexpr std::array<std::string_view, 4> kModels = {"mlp", "lenet", "resnet20", "resnet50"};
constexpr std::array<std::string_view, 4> kDatasets = {"fashion-mnist", "cifar10", "synthetic",
                                                       "imagenet-folder"};
constexpr std::array<std::string_view, 2> kAlgorithmKinds = {"centralized", "dpsgd"};
constexpr std::array<std::string_view, 3> kLrSchedules = {"constant", "step", "cosine"};
constexpr std::array<std::string_view, 2> kPartitions = {"iid", "dirichlet"};
constexpr std::array<std::string_view, 3> kSections = {"train", "algorithm", "platform"};

// A check returns the reason a value is invalid, or an empty string when it is fine.
template <class T>
using Check = std::function<std::string(const T&)>;

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

// `allowed` views names with static storage (this file's tables, or the simulator's).
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

// The simulator's presets, and "custom" (a platform from the config's keys alone).
std::span<const std::string_view> preset_names() {
  static const std::vector<std::string_view> names = [] {
    std::vector<std::string_view> all(sim::known_presets().begin(), sim::known_presets().end());
    all.emplace_back("custom");
    return all;
  }();
  return names;
}

Check<std::string> preset_or_file() {
  return [](const std::string& v) {
    const auto presets = preset_names();
    const bool is_preset = std::find(presets.begin(), presets.end(), v) != presets.end();
    const bool is_file = v.ends_with(".toml") || v.ends_with(".json");
    if (is_preset || is_file) {
      return std::string();
    }
    std::string reason =
        fmt::format("must be one of {}, or a calibration file path ending in .toml or .json; got {}",
                    join(presets), toml_string(v));
    if (const auto guess = closest_name(v, presets)) {
      reason += fmt::format(" (did you mean '{}'?)", *guess);
    }
    return reason;
  };
}

// The one description of every key: section ("" for top level), name, value, check and a short note that
// to_toml writes as a comment. Visitors read, validate, list or write the fields.
template <class Config, class Visitor>
void visit_fields(Config& c, Visitor& v) {
  v.field("", "name", c.name, run_name(), "");
  v.field("", "description", c.description, any_string(), "");
  v.field("", "seed", c.seed, seed_range(), "");

  auto& t = c.train;
  v.field("train", "model", t.model, one_of(kModels), "mlp | lenet | resnet20 | resnet50");
  v.field("train", "dataset", t.dataset, one_of(kDatasets),
          "fashion-mnist | cifar10 | synthetic | imagenet-folder");
  v.field("train", "data_dir", t.data_dir, any_string(), "empty: the data set's default location");
  v.field("train", "workers", t.workers, at_least(1), "replicas = GPUs");
  v.field("train", "batch_per_worker", t.batch_per_worker, at_least(1), "");
  v.field("train", "iterations", t.iterations, at_least(1), "");
  v.field("train", "lr", t.lr, above(0.0), "peak learning rate");
  v.field("train", "linear_scaling", t.linear_scaling, any_bool(),
          "peak lr = lr * workers * batch_per_worker / lr_reference_batch");
  v.field("train", "lr_reference_batch", t.lr_reference_batch, at_least(1), "");
  v.field("train", "warmup_iterations", t.warmup_iterations, at_least(0), "linear warm-up from 0");
  v.field("train", "lr_schedule", t.lr_schedule, one_of(kLrSchedules), "constant | step | cosine");
  v.field("train", "lr_step_milestones", t.lr_step_milestones, each_at_least(1, true),
          "step: iterations where lr *= lr_step_gamma");
  v.field("train", "lr_step_gamma", t.lr_step_gamma, within(0.0, true, 1.0, false), "");
  v.field("train", "lr_min", t.lr_min, at_least(0.0), "cosine: lr at the last iteration");
  v.field("train", "momentum", t.momentum, within(0.0, false, 1.0, true), "");
  v.field("train", "nesterov", t.nesterov, any_bool(), "");
  v.field("train", "weight_decay", t.weight_decay, at_least(0.0), "");
  v.field("train", "partition", t.partition, one_of(kPartitions), "iid | dirichlet");
  v.field("train", "dirichlet_alpha", t.dirichlet_alpha, above(0.0), "smaller is more heterogeneous");
  v.field("train", "eval_every", t.eval_every, at_least(1), "");
  v.field("train", "eval_samples", t.eval_samples, at_least(0), "averaged model; 0: the whole test set");
  v.field("train", "replica_eval_samples", t.replica_eval_samples, at_least(1),
          "fixed test subset for each replica's accuracy");
  v.field("train", "mlp_hidden", t.mlp_hidden, mlp_widths(), "hidden widths of the mlp");

  auto& a = c.algorithm;
  v.field("algorithm", "kind", a.kind, one_of(kAlgorithmKinds), "centralized | dpsgd");
  v.field("algorithm", "graph", a.graph, non_empty(),
          "ring, torus, exponential, one-peer-exponential, ada, ...");
  v.field("algorithm", "torus_shape", a.torus_shape, each_at_least(1, false), "empty: near-square");
  v.field("algorithm", "degree", a.degree, at_least(0), "0: the graph's default");
  v.field("algorithm", "probability", a.probability, within(0.0, true, 1.0, false),
          "erdos-renyi edge probability");
  v.field("algorithm", "global_every", a.global_every, at_least(0), "periodic global averaging; 0: never");
  v.field("algorithm", "switch_graphs", a.switch_graphs, non_empty(),
          "graph = switch: stages, comma-separated");
  v.field("algorithm", "switch_at", a.switch_at, each_at_least(0, true), "graph = switch: stage starts");
  v.field("algorithm", "ada_ladder", a.ada_ladder, non_empty(),
          "graph = ada: sparse to dense, comma-separated");
  v.field("algorithm", "ada_low", a.ada_low, at_least(0.0), "relative consensus distance band: low");
  v.field("algorithm", "ada_high", a.ada_high, above(0.0), "relative consensus distance band: high");
  v.field("algorithm", "ada_check_every", a.ada_check_every, at_least(1), "iterations between measurements");
  v.field("algorithm", "ada_min_dwell", a.ada_min_dwell, at_least(0),
          "iterations on a rung before leaving it");
  v.field("algorithm", "ada_patience", a.ada_patience, at_least(1),
          "checks below the band before going sparser");
  v.field("algorithm", "ada_start", a.ada_start, non_empty(), "sparsest | densest | a ladder name");
  v.field("algorithm", "ada_cost_aware", a.ada_cost_aware, any_bool(),
          "keep only rungs no denser rung beats on simulated time");

  auto& p = c.platform;
  v.field("platform", "preset", p.preset, preset_or_file(), "frontier | summit | dgx-h100 | custom | a file");
  v.field("platform", "timing_model", p.timing_model, one_of(kModels), "mlp | lenet | resnet20 | resnet50");
  v.field("platform", "timing_batch_per_gpu", p.timing_batch_per_gpu, at_least(1), "");
  v.field("platform", "gpus_per_node", p.gpus_per_node, at_least(0), "0: the preset's");
  v.field("platform", "gpu_flops_per_s", p.gpu_flops_per_s, at_least(0.0), "0: the preset's");
  v.field("platform", "intra_node_bandwidth_Bps", p.intra_node_bandwidth_Bps, at_least(0.0),
          "0: the preset's");
  v.field("platform", "intra_node_latency_s", p.intra_node_latency_s, at_least(0.0), "0: the preset's");
  v.field("platform", "nic_bandwidth_Bps", p.nic_bandwidth_Bps, at_least(0.0), "one NIC; 0: the preset's");
  v.field("platform", "nic_latency_s", p.nic_latency_s, at_least(0.0), "0: the preset's");
  v.field("platform", "nics_per_node", p.nics_per_node, at_least(0), "0: the preset's (custom: 1)");
  v.field("platform", "fabric", p.fabric, empty_or_one_of(sim::known_fabrics()),
          "star | fat-tree | dragonfly | torus; empty: the preset's (custom: fat-tree)");
  v.field("platform", "switch_bandwidth_Bps", p.switch_bandwidth_Bps, at_least(0.0),
          "every fabric link; 0: the preset's (custom: the node's NICs)");
  v.field("platform", "switch_latency_s", p.switch_latency_s, at_least(0.0),
          "one fabric hop; 0: the preset's (custom: none)");
  v.field("platform", "nodes_per_switch", p.nodes_per_switch, at_least(0),
          "fat-tree leaf switch / dragonfly router; 0: the preset's (custom: 16)");
  v.field("platform", "iteration_overhead_s", p.iteration_overhead_s, at_least(0.0),
          "fixed cost per iteration; 0: the preset's (custom: none)");
  v.field("platform", "intra_node_efficiency", p.intra_node_efficiency, zero_or_within(1e-3, 1.0),
          "achieved fraction of the GPU ports' line rate; 0: the preset's (custom: 1)");
  v.field("platform", "network_efficiency", p.network_efficiency, zero_or_within(1e-3, 1.0),
          "achieved fraction of the NICs' and fabric's line rate; 0: the preset's (custom: 1)");
  v.field("platform", "collective_latency_s", p.collective_latency_s, at_least(0.0),
          "start of every collective and gossip round; 0: the preset's (custom: none)");
  v.field("platform", "bulk_step_latency_s", p.bulk_step_latency_s, at_least(0.0),
          "bulk protocol's handshake per all-reduce step; 0: the preset's (custom: none)");
  v.field("platform", "nvls_efficiency", p.nvls_efficiency, zero_or_within(1e-3, 1.0),
          "in-switch reduction's achieved fraction of the port rate; 0: the preset's (custom: none)");
  v.field("platform", "collnet_efficiency", p.collnet_efficiency, zero_or_within(1e-3, 1.0),
          "in-network reduction's achieved fraction of the NIC rate; 0: the preset's (custom: none)");
  v.field("platform", "multi_gpu_slowdown", p.multi_gpu_slowdown, zero_or_within(1.0, 100.0),
          "compute in a job over compute alone; 0: the preset's (1: none)");
  v.field("platform", "compute_jitter_cv", p.compute_jitter_cv, within(0.0, false, 10.0, false),
          "per-GPU per-iteration compute jitter (lognormal); 0: none");
  v.field("platform", "compute_tail_probability", p.compute_tail_probability, within(0.0, false, 1.0, false),
          "chance a GPU's iteration is slowed by compute_tail_factor; 0: none");
  v.field("platform", "compute_tail_factor", p.compute_tail_factor, zero_or_within(1.0, 1000.0),
          "0: the preset's (1)");
  v.field("platform", "stragglers", p.stragglers, at_least(0), "GPUs slowed by straggler_factor; 0: none");
  v.field("platform", "straggler_factor", p.straggler_factor, zero_or_within(1.0, 1000.0),
          "0: the preset's (1)");
  v.field("platform", "allreduce_latency_s", p.allreduce_latency_s, at_least(0.0),
          "measured all-reduce latency; 0: the preset's (none)");
  v.field("platform", "allreduce_bandwidth_Bps", p.allreduce_bandwidth_Bps, at_least(0.0),
          "measured all-reduce bandwidth; 0: the preset's (none: simulated)");
  v.field("platform", "allreduce", p.allreduce, one_of(sim::known_allreduce_algorithms()),
          "ring | hierarchical | tree | nvls | collnet | auto (the fastest per size; centralized and global "
          "averages)");
  v.field("platform", "bucket_bytes", p.bucket_bytes, at_least(0),
          "all-reduce buckets overlapped with backward; 0: whole gradient");
}

enum class Kind { kString, kInteger, kFloat, kBoolean, kIntegerArray };

template <class T>
constexpr Kind kind_of() {
  if constexpr (std::is_same_v<T, std::string>) {
    return Kind::kString;
  } else if constexpr (std::is_same_v<T, bool>) {
    return Kind::kBoolean;
  } else if constexpr (std::is_same_v<T, double>) {
    return Kind::kFloat;
  } else if constexpr (std::is_same_v<T, std::vector<int>>) {
    return Kind::kIntegerArray;
  } else {
    static_assert(std::is_integral_v<T>);
    return Kind::kInteger;
  }
}

// Every known key with its value kind, listed from the schema.
class KeyLister {
 public:
  template <class T, class C>
  void field(std::string_view section, std::string_view key, const T&, const C&, std::string_view) {
    keys_.emplace(full_key(section, key), kind_of<T>());
  }
  const std::map<std::string, Kind>& keys() const { return keys_; }

 private:
  std::map<std::string, Kind> keys_;
};

// Every key of the schema with its kind; cheap enough to list per load, so nothing is cached globally.
std::map<std::string, Kind> known_keys() {
  ExperimentConfig config;
  KeyLister lister;
  visit_fields(config, lister);
  return lister.keys();
}

bool is_section(std::string_view name) {
  return std::find(kSections.begin(), kSections.end(), name) != kSections.end();
}

// Collects every problem so that one run reports all of them, each prefixed with where it came from.
class Problems {
 public:
  explicit Problems(std::string_view source_name) : source_name_(source_name) {}

  /// Remembers that `key` (and the sections above it) came from the command-line override `text`.
  void note_override(const std::string& key, const std::string& text) {
    for (auto dot = key.find('.'); dot != std::string::npos; dot = key.find('.', dot + 1)) {
      overrides_[key.substr(0, dot)] = text;
    }
    overrides_[key] = text;
  }

  void add(const std::string& key, const toml::node* node, std::string_view reason) {
    if (const auto it = overrides_.find(key); it != overrides_.end()) {
      lines_.push_back(fmt::format("{}: {}: {} (from --set {})", source_name_, key, reason, it->second));
    } else if (node != nullptr && node->source().begin.line > 0) {
      const auto& where = node->source().begin;
      lines_.push_back(fmt::format("{}:{}:{}: {}: {}", source_name_, where.line, where.column, key, reason));
    } else {
      lines_.push_back(fmt::format("{}: {}: {}", source_name_, key, reason));
    }
  }

  bool empty() const { return lines_.empty(); }

  void throw_if_any() const {
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

 private:
  std::string source_name_;
  std::map<std::string, std::string> overrides_;
  std::vector<std::string> lines_;
};

// Converts TOML nodes into typed fields; returns false (after recording why) on a type mismatch.
bool read_value(const toml::node& node, std::string& out) {
  if (const auto* s = node.as_string()) {
    out = s->get();
    return true;
  }
  return false;
}

bool read_value(const toml::node& node, bool& out) {
  if (const auto* b = node.as_boolean()) {
    out = b->get();
    return true;
  }
  return false;
}

bool read_value(const toml::node& node, double& out) {
  if (const auto* f = node.as_floating_point()) {
    out = f->get();
    return true;
  }
  if (const auto* i = node.as_integer()) {
    out = static_cast<double>(i->get());
    return true;
  }
  return false;
}

std::string_view expected_text(Kind kind) {
  switch (kind) {
    case Kind::kString:
      return "a string";
    case Kind::kInteger:
      return "an integer";
    case Kind::kFloat:
      return "a number";
    case Kind::kBoolean:
      return "a boolean (true or false)";
    case Kind::kIntegerArray:
      return "an array of integers";
  }
  return "a value";
}

class Reader {
 public:
  Reader(const toml::table& root, Problems& problems) : root_(root), problems_(problems) {}

  template <class T>
  void field(std::string_view section, std::string_view key, T& value, const Check<T>& check,
             std::string_view) {
    const toml::node* node = lookup(section, key);
    if (node == nullptr) {
      return;  // missing keys keep their defaults
    }
    const std::string name = full_key(section, key);
    if (!read(*node, value, name)) {
      return;
    }
    if (const std::string reason = check(value); !reason.empty()) {
      problems_.add(name, node, reason);
    }
  }

 private:
  const toml::node* lookup(std::string_view section, std::string_view key) const {
    if (section.empty()) {
      return root_.get(key);
    }
    const auto* table = root_.get_as<toml::table>(section);
    return table == nullptr ? nullptr : table->get(key);
  }

  void type_error(const std::string& name, const toml::node& node, Kind kind) {
    problems_.add(name, &node, fmt::format("expected {}, got {}", expected_text(kind), describe(node)));
  }

  template <class T>
  bool read(const toml::node& node, T& value, const std::string& name) {
    if constexpr (std::is_same_v<T, std::vector<int>>) {
      const auto* array = node.as_array();
      if (array == nullptr) {
        type_error(name, node, Kind::kIntegerArray);
        return false;
      }
      std::vector<int> values;
      for (const auto& element : *array) {
        int v = 0;
        if (!read_integer(element, v, name)) {
          return false;
        }
        values.push_back(v);
      }
      value = std::move(values);
      return true;
    } else if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
      return read_integer(node, value, name);
    } else {
      if (!read_value(node, value)) {
        type_error(name, node, kind_of<T>());
        return false;
      }
      if constexpr (std::is_same_v<T, double>) {
        if (!std::isfinite(value)) {
          problems_.add(name, &node, fmt::format("must be a finite number, got {}", value));
          return false;
        }
      }
      return true;
    }
  }

  template <class Int>
  bool read_integer(const toml::node& node, Int& value, const std::string& name) {
    const auto* integer = node.as_integer();
    if (integer == nullptr) {
      type_error(name, node, Kind::kInteger);
      return false;
    }
    const std::int64_t v = integer->get();
    if (std::cmp_less(v, std::numeric_limits<Int>::min())) {
      problems_.add(name, &node, fmt::format("must be >= {}, got {}", std::numeric_limits<Int>::min(), v));
      return false;
    }
    if (std::cmp_greater(v, std::numeric_limits<Int>::max())) {
      problems_.add(name, &node, fmt::format("must be <= {}, got {}", std::numeric_limits<Int>::max(), v));
      return false;
    }
    value = static_cast<Int>(v);
    return true;
  }

  const toml::table& root_;
  Problems& problems_;
};

// Runs each field's check on a config built in code.
class Validator {
 public:
  explicit Validator(Problems& problems) : problems_(problems) {}

  template <class T>
  void field(std::string_view section, std::string_view key, const T& value, const Check<T>& check,
             std::string_view) {
    if (const std::string reason = check(value); !reason.empty()) {
      problems_.add(full_key(section, key), nullptr, reason);
    }
  }

 private:
  Problems& problems_;
};

// Writes `key = value  # note` lines, a section header before each section's first key.
class Writer {
 public:
  template <class T>
  void field(std::string_view section, std::string_view key, const T& value, const Check<T>&,
             std::string_view note) {
    if (section != section_) {
      out_ += fmt::format("\n[{}]\n", section);
      section_ = section;
    }
    std::string line = fmt::format("{} = {}", key, format(value));
    if (!note.empty()) {
      line = fmt::format("{:<32} # {}", line, note);
    }
    out_ += line + "\n";
  }

  std::string str() && { return std::move(out_); }

 private:
  static std::string format(const std::string& v) { return toml_string(v); }
  static std::string format(bool v) { return v ? "true" : "false"; }
  static std::string format(double v) { return toml_double(v); }
  static std::string format(int v) { return std::to_string(v); }
  static std::string format(std::uint64_t v) { return std::to_string(v); }
  static std::string format(const std::vector<int>& values) {
    std::string out = "[";
    for (std::size_t i = 0; i < values.size(); ++i) {
      out += (i == 0 ? "" : ", ") + std::to_string(values[i]);
    }
    return out + "]";
  }

  std::string section_;
  std::string out_ = "# DBench experiment config, fully resolved: every key, defaults included.\n";
};

// The node of "section.key" (or a top-level "key") in a parsed config, for its position; null when absent.
const toml::node* node_at(const toml::table* root, std::string_view key) {
  if (root == nullptr) {
    return nullptr;
  }
  const auto dot = key.find('.');
  if (dot == std::string_view::npos) {
    return root->get(key);
  }
  const auto* table = root->get_as<toml::table>(key.substr(0, dot));
  return table == nullptr ? nullptr : table->get(key.substr(dot + 1));
}

// Rules that relate several keys; run only once each key is valid on its own, so they never pile up.
void check_cross_keys(const ExperimentConfig& c, Problems& problems, const toml::table* root) {
  const auto node_of = [root](std::string_view section, std::string_view key) {
    return node_at(root, full_key(section, key));
  };
  const auto& t = c.train;
  if (t.warmup_iterations > t.iterations) {
    problems.add("train.warmup_iterations", node_of("train", "warmup_iterations"),
                 fmt::format("must be <= train.iterations ({}), got {}", t.iterations, t.warmup_iterations));
  }
  if (t.lr_schedule == "step" && t.lr_step_milestones.empty()) {
    problems.add("train.lr_step_milestones", node_of("train", "lr_step_milestones"),
                 "must list at least one iteration when train.lr_schedule is \"step\"");
  }
  if (t.lr_schedule == "cosine" && t.lr_min > peak_lr(t)) {
    problems.add("train.lr_min", node_of("train", "lr_min"),
                 fmt::format("must be <= the peak learning rate ({}), got {}", peak_lr(t), t.lr_min));
  }
  if (t.nesterov && t.momentum == 0.0) {
    problems.add("train.nesterov", node_of("train", "nesterov"), "needs train.momentum > 0");
  }
  if (t.dataset == "cifar10" && t.data_dir.empty()) {
    problems.add("train.data_dir", node_of("train", "data_dir"),
                 "must name the folder of CIFAR-10's binary batches when train.dataset is \"cifar10\"");
  }
  if (t.dataset == "imagenet-folder" && t.data_dir.empty()) {
    problems.add("train.data_dir", node_of("train", "data_dir"),
                 "must name the image folder when train.dataset is \"imagenet-folder\"");
  }
  const auto& p = c.platform;
  if (p.preset == "custom") {
    const std::array<std::pair<std::string_view, double>, 6> required = {{
        {"gpus_per_node", static_cast<double>(p.gpus_per_node)},
        {"gpu_flops_per_s", p.gpu_flops_per_s},
        {"intra_node_bandwidth_Bps", p.intra_node_bandwidth_Bps},
        {"intra_node_latency_s", p.intra_node_latency_s},
        {"nic_bandwidth_Bps", p.nic_bandwidth_Bps},
        {"nic_latency_s", p.nic_latency_s},
    }};
    std::string missing;
    for (const auto& [key, value] : required) {
      if (value <= 0.0) {
        missing += fmt::format("{}platform.{}", missing.empty() ? "" : ", ", key);
      }
    }
    if (!missing.empty()) {
      problems.add("platform.preset", node_of("platform", "preset"),
                   fmt::format("\"custom\" has no values to fall back on; set {} (each > 0)", missing));
    }
  }
  const auto& a = c.algorithm;
  if (a.kind == "dpsgd" && a.graph == "ada" && a.ada_low >= a.ada_high) {
    problems.add("algorithm.ada_low", node_of("algorithm", "ada_low"),
                 fmt::format("must be below algorithm.ada_high ({}), got {}", toml_double(a.ada_high),
                             toml_double(a.ada_low)));
  }
}

// What the setup code of simulate, train and sweep would refuse (graph, policy, platform, shards), under the
// key at fault; run last, on a config whose keys are each valid.
void check_setup_keys(const ExperimentConfig& c, Problems& problems, const toml::table* root) {
  try {
    check_setup(c);
  } catch (const ConfigKeyError& e) {
    problems.add(e.key(), node_at(root, e.key()), e.reason());
  }
}

// Rejects keys and sections the schema does not know, suggesting the likely intended key.
void check_unknown_keys(const toml::table& root, const std::map<std::string, Kind>& keys,
                        Problems& problems) {
  std::vector<std::string> top_names(kSections.begin(), kSections.end());
  for (const auto& [key, kind] : keys) {
    if (key.find('.') == std::string::npos) {
      top_names.push_back(key);
    }
  }
  // A key in the wrong section is as likely as a typo: `train.graph` means `algorithm.graph`.
  const auto suggest_elsewhere = [&keys](std::string_view leaf) -> std::optional<std::string> {
    for (const auto& [key, kind] : keys) {
      const auto dot = key.rfind('.');
      if ((dot == std::string::npos ? key : key.substr(dot + 1)) == leaf) {
        return key;
      }
    }
    return std::nullopt;
  };

  for (const auto& [raw_name, node] : root) {
    const std::string name(raw_name.str());
    // A quoted top-level key such as "train.workers" is one key named with a dot, not a section's key.
    if (name.find('.') == std::string::npos && keys.contains(name)) {
      continue;
    }
    if (!is_section(name)) {
      std::string reason = node.is_table() ? "unknown section" : "unknown key";
      auto guess = closest_name(name, top_names);
      if (!guess) {
        guess = suggest_elsewhere(name);
      }
      if (guess) {
        reason += fmt::format(" (did you mean '{}'?)", *guess);
      }
      if (node.is_table()) {
        reason += fmt::format("; the sections are {}", join(kSections));
      }
      problems.add(name, &node, reason);
      continue;
    }
    const auto* table = node.as_table();
    if (table == nullptr) {
      problems.add(name, &node,
                   fmt::format("expected a table (a [{}] section), got {}", name, describe(node)));
      continue;
    }
    std::vector<std::string> section_keys;
    for (const auto& [key, kind] : keys) {
      if (key.starts_with(name + ".")) {
        section_keys.push_back(key.substr(name.size() + 1));
      }
    }
    for (const auto& [raw_key, child] : *table) {
      const std::string leaf(raw_key.str());
      if (keys.contains(full_key(name, leaf))) {
        continue;
      }
      std::string reason = "unknown key";
      std::optional<std::string> guess;
      if (auto near = closest_name(leaf, section_keys)) {
        guess = full_key(name, *near);
      } else {
        guess = suggest_elsewhere(leaf);
      }
      if (guess) {
        reason += fmt::format(" (did you mean '{}'?)", *guess);
      }
      problems.add(full_key(name, leaf), &child, reason);
    }
  }
}

std::string trim(std::string_view text) {
  const auto first = text.find_first_not_of(" \t");
  if (first == std::string_view::npos) {
    return {};
  }
  const auto last = text.find_last_not_of(" \t");
  return std::string(text.substr(first, last - first + 1));
}

bool is_bare_key(std::string_view part) {
  return !part.empty() && std::all_of(part.begin(), part.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
  });
}

// Parses the value of `key=value` as TOML; a bare word that is not TOML, or any text for a string key, is
// taken as a string so that `--set algorithm.graph=ring` and `--set name=2024` need no shell quoting.
toml::table parse_override_value(const std::map<std::string, Kind>& keys, const std::string& key,
                                 const std::string& value) {
  const auto known = keys.find(key);
  const bool string_key = known != keys.end() && known->second == Kind::kString;
  toml::table holder;
  try {
    toml::table parsed = toml::parse("v = " + value);
    const toml::node* node = parsed.get("v");
    if (parsed.size() == 1 && node != nullptr && !(string_key && !node->is_string())) {
      return parsed;
    }
  } catch (const toml::parse_error&) {
    // not a TOML value: a string
  }
  holder.insert_or_assign("v", value);
  return holder;
}

void apply_override(toml::table& root, const std::string& text, const std::map<std::string, Kind>& keys,
                    std::string_view source_name, Problems& problems) {
  const auto eq = text.find('=');
  const std::string key = trim(std::string_view(text).substr(0, eq));
  std::vector<std::string> parts;
  for (std::size_t start = 0;;) {
    const auto dot = key.find('.', start);
    parts.push_back(key.substr(start, dot == std::string::npos ? std::string::npos : dot - start));
    if (dot == std::string::npos) {
      break;
    }
    start = dot + 1;
  }
  if (eq == std::string::npos || !std::all_of(parts.begin(), parts.end(), is_bare_key)) {
    throw ConfigError(fmt::format("{}: --set {}: expected section.key=value (for example train.workers=64)",
                                  source_name, text));
  }
  toml::table value = parse_override_value(keys, key, trim(std::string_view(text).substr(eq + 1)));
  problems.note_override(key, text);

  toml::table* table = &root;
  for (std::size_t i = 0; i + 1 < parts.size(); ++i) {
    toml::node* next = table->get(parts[i]);
    if (next == nullptr) {
      next = &table->insert_or_assign(parts[i], toml::table{}).first->second;
    }
    if (!next->is_table()) {
      throw ConfigError(fmt::format("{}: --set {}: '{}' is not a section", source_name, text, parts[i]));
    }
    table = next->as_table();
  }
  value.get("v")->visit([&](const auto& node) { table->insert_or_assign(parts.back(), node); });
}

}  // namespace

ExperimentConfig load_config(std::string_view toml_text, std::span<const std::string> overrides,
                             std::string_view source_name, Validation validation) {
  toml::table root;
  try {
    root = toml::parse(toml_text, std::string(source_name));
  } catch (const toml::parse_error& e) {
    const auto& where = e.source().begin;
    throw ConfigError(fmt::format("{}:{}:{}: TOML syntax error: {}", source_name, where.line, where.column,
                                  e.description()));
  }
  const auto keys = known_keys();
  Problems problems(source_name);
  for (const auto& text : overrides) {
    apply_override(root, text, keys, source_name, problems);
  }

  check_unknown_keys(root, keys, problems);
  ExperimentConfig config;
  Reader reader(root, problems);
  visit_fields(config, reader);
  if (problems.empty()) {
    check_cross_keys(config, problems, &root);
  }
  if (problems.empty() && validation == Validation::full) {
    check_setup_keys(config, problems, &root);
  }
  problems.throw_if_any();
  return config;
}

ExperimentConfig load_config_file(const std::filesystem::path& path, std::span<const std::string> overrides) {
  return load_config(read_config_text(path, "config"), overrides, path.string());
}

std::string read_config_text(const std::filesystem::path& path, std::string_view what) {
  const std::string name = path.string();
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (std::filesystem::is_directory(status)) {
    throw ConfigError(fmt::format("{}: cannot read {}: it is a directory, not a file", name, what));
  }
  if (std::filesystem::exists(status) && !std::filesystem::is_regular_file(status)) {
    // A device, pipe or socket could be read without end (/dev/zero) or block forever.
    throw ConfigError(fmt::format("{}: cannot read {}: not a regular file", name, what));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    const int error = errno;  // set by the failed open on POSIX systems; names the actual reason
    throw ConfigError(fmt::format("{}: cannot read {}: {}", name, what,
                                  error != 0 ? std::generic_category().message(error) : "cannot open"));
  }
  // Chunks up to one byte past the limit, so that a file that grows while it is read is still refused.
  std::string text;
  std::array<char, 65536> chunk{};
  while (in && text.size() <= kMaxConfigBytes) {
    in.read(chunk.data(), static_cast<std::streamsize>(chunk.size()));
    text.append(chunk.data(), static_cast<std::size_t>(in.gcount()));
  }
  if (in.bad()) {
    throw ConfigError(fmt::format("{}: cannot read {}: read error", name, what));
  }
  if (text.size() > kMaxConfigBytes) {
    throw ConfigError(fmt::format("{}: cannot read {}: larger than the {} MiB limit for a {}", name, what,
                                  kMaxConfigBytes >> 20, what));
  }
  return text;
}

void validate(const ExperimentConfig& config, std::string_view source_name) {
  Problems problems(source_name);
  Validator validator(problems);
  visit_fields(config, validator);
  if (problems.empty()) {
    check_cross_keys(config, problems, nullptr);
  }
  if (problems.empty()) {
    check_setup_keys(config, problems, nullptr);
  }
  problems.throw_if_any();
}

std::string to_toml(const ExperimentConfig& config) {
  Writer writer;
  visit_fields(config, writer);
  return std::move(writer).str();
}

double peak_lr(const TrainConfig& train) {
  if (!train.linear_scaling) {
    return train.lr;
  }
  const double global_batch =
      static_cast<double>(train.workers) * static_cast<double>(train.batch_per_worker);
  return train.lr * global_batch / static_cast<double>(train.lr_reference_batch);
}

}  // namespace dbench::experiments
