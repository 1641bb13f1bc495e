// Loading, validating and writing experiment configs. One schema (visit_fields) drives reading, validation,
// unknown-key detection and to_toml, so a key added there is handled everywhere at once.
#include "experiments/config.hpp"

#include <fmt/core.h>
#include <toml++/toml.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <span>
#include <type_traits>
#include <utility>
#include <vector>

#include "experiments/config_checks.hpp"
#include "experiments/config_rules.hpp"
#include "experiments/config_text.hpp"
#include "models/augment.hpp"
#include "models/input_file.hpp"
#include "models/model_profile.hpp"
#include "sim/platform.hpp"
#include "sim/timing.hpp"
#include "topology/graph.hpp"

namespace dbench::experiments {
namespace {

constexpr std::array<std::string_view, 4> kDatasets = {"fashion-mnist", "cifar10", "synthetic",
                                                       "imagenet-folder"};
constexpr std::array<std::string_view, 2> kAlgorithmKinds = {"centralized", "dpsgd"};
constexpr std::array<std::string_view, 3> kLrSchedules = {"constant", "step", "cosine"};
constexpr std::array<std::string_view, 2> kLrScalingRules = {"linear", "sqrt"};
constexpr std::array<std::string_view, 2> kPartitions = {"iid", "dirichlet"};
constexpr std::array<std::string_view, 2> kOptimizers = {"sgd", "lars"};

// dataset = synthetic: at most 50 million training samples. Their inputs are computed, never stored; their
// labels, the partition's copy and the shards' indices hold about 1.2 GB, and labelling them takes a minute.
constexpr int kMaxSyntheticSamples = 50'000'000;
Check<int> synthetic_sizes() {
  return [](const int& v) {
    return v >= 1 && v <= kMaxSyntheticSamples
               ? std::string()
               : fmt::format("must be in [1, {}], got {}", kMaxSyntheticSamples, v);
  };
}

// train.augment_copies: the original and at most the distinct views of an image.
Check<int> augment_copies_range() {
  return [](const int& v) {
    return v >= 1 && v <= models::kDistinctViews
               ? std::string()
               : fmt::format(
                     "must be in [1, {}] (an image and its {} distinct shifted or flipped views), got {}",
                     models::kDistinctViews, models::kDistinctViews - 1, v);
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
  v.field("train", "model", t.model, one_of(models::known_models()), "mlp | lenet | resnet20 | resnet50");
  v.field("train", "dataset", t.dataset, one_of(kDatasets),
          "fashion-mnist | cifar10 | synthetic | imagenet-folder");
  v.field("train", "data_dir", t.data_dir, any_string(), "empty: the data set's default location");
  v.field("train", "synthetic_samples", t.synthetic_samples, synthetic_sizes(),
          "dataset = synthetic: training samples the teacher labels");
  v.field("train", "synthetic_seed", t.synthetic_seed, seed_range(),
          "dataset = synthetic: the teacher's and inputs' seed; 0: the run's seed");
  v.field("train", "augment_copies", t.augment_copies, augment_copies_range(),
          "views of every training image (shifted +-2 pixels, flipped); 1: none");
  v.field("train", "workers", t.workers, between(1, topology::kMaxGraphNodes, "the largest graph"),
          "replicas = GPUs");
  v.field("train", "batch_per_worker", t.batch_per_worker, at_least(1), "");
  v.field("train", "iterations", t.iterations, at_least(0), "the budget: iterations or epochs, not both");
  v.field("train", "epochs", t.epochs, at_least(0.0),
          "budget in passes over the training set; 0: iterations is the budget");
  v.field("train", "lr", t.lr, above(0.0), "peak learning rate");
  v.field("train", "linear_scaling", t.linear_scaling, any_bool(),
          "peak lr = lr * workers * batch_per_worker / lr_reference_batch");
  v.field("train", "lr_scaling_rule", t.lr_scaling_rule, one_of(kLrScalingRules),
          "linear_scaling: linear | sqrt (lr * sqrt(global batch / lr_reference_batch))");
  v.field("train", "lr_reference_batch", t.lr_reference_batch, at_least(1), "");
  v.field("train", "warmup_iterations", t.warmup_iterations, at_least(0),
          "linear warm-up (from lr with linear_scaling, else from 0)");
  v.field("train", "warmup_epochs", t.warmup_epochs, at_least(0.0),
          "the warm-up in epochs; 0: in iterations");
  v.field("train", "lr_schedule", t.lr_schedule, one_of(kLrSchedules), "constant | step | cosine");
  v.field("train", "lr_step_milestones", t.lr_step_milestones, each_at_least(1, true),
          "step: iterations where lr *= lr_step_gamma");
  v.field("train", "lr_step_milestone_epochs", t.lr_step_milestone_epochs, each_above(0.0),
          "step: the milestones in epochs instead");
  v.field("train", "lr_step_gamma", t.lr_step_gamma, within(0.0, true, 1.0, false), "");
  v.field("train", "lr_min", t.lr_min, at_least(0.0), "cosine: lr at the last iteration");
  v.field("train", "momentum", t.momentum, within(0.0, false, 1.0, true), "");
  v.field("train", "nesterov", t.nesterov, any_bool(), "");
  v.field("train", "weight_decay", t.weight_decay, at_least(0.0), "");
  v.field("train", "optimizer", t.optimizer, one_of(kOptimizers),
          "sgd | lars (each weight tensor's step times lars_eta |w| / (|g| + weight_decay |w|))");
  v.field("train", "lars_eta", t.lars_eta, above(0.0), "optimizer = lars: the trust coefficient");
  v.field("train", "partition", t.partition, one_of(kPartitions), "iid | dirichlet");
  v.field("train", "dirichlet_alpha", t.dirichlet_alpha, above(0.0), "smaller is more heterogeneous");
  v.field("train", "eval_every", t.eval_every, at_least(1), "iterations between evaluations");
  v.field("train", "eval_every_epochs", t.eval_every_epochs, at_least(0.0),
          "the same in epochs; 0: eval_every is given in iterations");
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
  v.field("algorithm", "ada_low", a.ada_low, above(0.0), "spread ratio band: low");
  v.field("algorithm", "ada_high", a.ada_high, above(0.0), "spread ratio band: high");
  v.field("algorithm", "ada_probe_every", a.ada_probe_every, at_least(1),
          "global averages between one-step spread measurements");
  v.field("algorithm", "ada_min_dwell", a.ada_min_dwell, at_least(0),
          "iterations on a rung before leaving it");
  v.field("algorithm", "ada_patience", a.ada_patience, at_least(1),
          "checks below the band before going sparser");
  v.field("algorithm", "ada_start", a.ada_start, non_empty(), "sparsest | densest | a ladder name");
  v.field("algorithm", "ada_cost_aware", a.ada_cost_aware, any_bool(),
          "keep only rungs that save ada_min_saving of a denser rung's simulated time");
  v.field("algorithm", "ada_min_saving", a.ada_min_saving, within(0.0, false, 1.0, true),
          "cost-aware: fraction of the denser rungs' time per iteration a rung must save to be kept");
  v.field("algorithm", "ada_shared_momentum", a.ada_shared_momentum, any_bool(),
          "at global averages, rebuild one momentum for all replicas from the averaged parameters' move");

  auto& p = c.platform;
  v.field("platform", "preset", p.preset, preset_or_file(),
          "frontier | summit | dgx-h100 | dgx-h100-campus | commodity | custom | a file");
  v.field("platform", "timing_model", p.timing_model, timing_model_or_file(),
          "mlp | lenet | resnet20 | resnet50 | a zoo model | a profile file (.toml or .json)");
  v.field("platform", "timing_batch_per_gpu", p.timing_batch_per_gpu, at_least(1), "");
  v.field("platform", "gpus_per_node", p.gpus_per_node, at_least(0), "0: the preset's");
  v.field("platform", "gpu_flops_per_s", p.gpu_flops_per_s, at_least(0.0), "0: the preset's");
  v.field("platform", "gpu_flops_per_s_bf16", p.gpu_flops_per_s_bf16, at_least(0.0),
          "for a bf16 timing model; 0: gpu_flops_per_s");
  v.field("platform", "gpu_flops_per_s_fp16", p.gpu_flops_per_s_fp16, at_least(0.0),
          "for an fp16 timing model; 0: gpu_flops_per_s");
  v.field("platform", "intra_node_bandwidth_Bps", p.intra_node_bandwidth_Bps, at_least(0.0),
          "0: the preset's");
  v.field("platform", "intra_node_latency_s", p.intra_node_latency_s, at_least(0.0), "0: the preset's");
  v.field("platform", "nic_bandwidth_Bps", p.nic_bandwidth_Bps, at_least(0.0), "one NIC; 0: the preset's");
  v.field("platform", "nic_latency_s", p.nic_latency_s, at_least(0.0), "0: the preset's");
  v.field("platform", "nics_per_node", p.nics_per_node, at_least(0), "0: the preset's (custom: 1)");
  v.field("platform", "fabric", p.fabric, empty_or_one_of(sim::known_fabrics()),
          "star | fat-tree | dragonfly | torus | multi-building; empty: the preset's (custom: fat-tree)");
  v.field("platform", "switch_bandwidth_Bps", p.switch_bandwidth_Bps, at_least(0.0),
          "every fabric link; 0: the preset's (custom: the node's NICs)");
  v.field("platform", "switch_latency_s", p.switch_latency_s, at_least(0.0),
          "one fabric hop; 0: the preset's (custom: none)");
  v.field("platform", "nodes_per_switch", p.nodes_per_switch, at_least(0),
          "fat-tree leaf switch / dragonfly router; 0: the preset's (custom: 16)");
  v.field("platform", "buildings", p.buildings, at_least(0),
          "multi-building: buildings the nodes are spread over; 0: the preset's (custom: 1)");
  v.field("platform", "inter_building_bandwidth_Bps", p.inter_building_bandwidth_Bps, at_least(0.0),
          "multi-building: one building's uplink to the others; 0: the preset's");
  v.field("platform", "inter_building_latency_s", p.inter_building_latency_s, at_least(0.0),
          "multi-building: one building's uplink, crossed twice between buildings; 0: the preset's");
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
  } else if constexpr (std::is_same_v<T, std::vector<double>>) {
    return Kind::kFloatArray;
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
    case Kind::kFloatArray:
      return "an array of numbers";
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
    } else if constexpr (std::is_same_v<T, std::vector<double>>) {
      const auto* array = node.as_array();
      if (array == nullptr) {
        type_error(name, node, Kind::kFloatArray);
        return false;
      }
      std::vector<double> values;
      for (const auto& element : *array) {
        double v = 0.0;
        if (!read_value(element, v) || !std::isfinite(v)) {
          problems_.add(name, &element, fmt::format("expected finite numbers, got {}", describe(element)));
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

// Writes `key = value  # note` lines, a section header before each section's first key. A key derived from
// another at load (iterations from epochs) is written as a comment, so that the text reads back equal.
class Writer {
 public:
  explicit Writer(std::vector<std::pair<std::string, std::string>> derived) : derived_(std::move(derived)) {}

  template <class T>
  void field(std::string_view section, std::string_view key, const T& value, const Check<T>&,
             std::string_view note) {
    if (section != section_) {
      out_ += fmt::format("\n[{}]\n", section);
      section_ = section;
    }
    const auto derived = std::find_if(derived_.begin(), derived_.end(),
                                      [&](const auto& pair) { return pair.first == full_key(section, key); });
    std::string line = fmt::format("{}{} = {}", derived != derived_.end() ? "# " : "", key, format(value));
    if (derived != derived_.end()) {
      line = fmt::format("{:<32} # derived from {}", line, derived->second);
    } else if (!note.empty()) {
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
  static std::string format(const std::vector<double>& values) {
    std::string out = "[";
    for (std::size_t i = 0; i < values.size(); ++i) {
      out += (i == 0 ? "" : ", ") + toml_double(values[i]);
    }
    return out + "]";
  }

  std::vector<std::pair<std::string, std::string>> derived_;  ///< (derived key, the key it comes from)
  std::string section_;
  std::string out_ = "# DBench experiment config, fully resolved: every key, defaults included.\n";
};

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

// Applies `--set section.key=value` to `root`; returns "section.key".
std::string apply_override(toml::table& root, const std::string& text,
                           const std::map<std::string, Kind>& keys, std::string_view source_name,
                           Problems& problems) {
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
  // A whole section given at once would silently reset every key of it that the value leaves out.
  const auto in_section = std::find_if(keys.begin(), keys.end(),
                                       [&](const auto& known) { return known.first.starts_with(key + "."); });
  if (in_section != keys.end()) {
    throw ConfigError(fmt::format(
        "{}: --set {}: '{}' is a whole section; --set changes one key, so set its keys one by one (for "
        "example --set {}=...)",
        source_name, text, key, in_section->first));
  }
  toml::table value = parse_override_value(keys, key, trim(std::string_view(text).substr(eq + 1)));
  if (value.get("v")->is_table()) {
    throw ConfigError(fmt::format(
        "{}: --set {}: the value is a table; --set takes a string, number, boolean or array for one key",
        source_name, text));
  }
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
  return key;
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
  std::vector<std::string> overridden;
  for (const auto& text : overrides) {
    overridden.push_back(apply_override(root, text, keys, source_name, problems));
  }
  // `--set train.epochs=4` on a file that gives train.iterations means the epochs, not both.
  prefer_overridden_keys(root, overridden);

  check_unknown_keys(root, keys, problems);
  ExperimentConfig config;
  Reader reader(root, problems);
  visit_fields(config, reader);
  if (problems.empty()) {
    resolve_budget(config, root, problems);
  }
  if (problems.empty()) {
    check_cross_keys(config, problems, &root);
  }
  if (problems.empty() && validation != Validation::keys_only) {
    check_setup_keys(config, problems, &root, validation == Validation::full);
  }
  problems.throw_if_any();
  return config;
}

ExperimentConfig load_config_file(const std::filesystem::path& path, std::span<const std::string> overrides,
                                  Validation validation) {
  return load_config(read_config_text(path, "config"), overrides, path.string(), validation);
}

std::string read_config_text(const std::filesystem::path& path, std::string_view what) {
  try {
    return models::read_input_file(path, what, kMaxConfigBytes);
  } catch (const models::InputFileError& e) {
    throw ConfigError(e.what());
  }
}

void validate(const ExperimentConfig& config, std::string_view source_name) {
  Problems problems(source_name);
  Validator validator(problems);
  visit_fields(config, validator);
  if (problems.empty()) {
    check_cross_keys(config, problems, nullptr);
  }
  if (problems.empty()) {
    check_setup_keys(config, problems, nullptr, true);
  }
  problems.throw_if_any();
}

std::string to_toml(const ExperimentConfig& config) {
  Writer writer(derived_train_keys(config.train));
  visit_fields(config, writer);
  return std::move(writer).str();
}

std::int64_t global_batch(const TrainConfig& train) {
  return static_cast<std::int64_t>(train.workers) * train.batch_per_worker;
}

double peak_lr(const TrainConfig& train) {
  if (!train.linear_scaling) {
    return train.lr;
  }
  const double ratio =
      static_cast<double>(global_batch(train)) / static_cast<double>(train.lr_reference_batch);
  return train.lr * (train.lr_scaling_rule == "sqrt" ? std::sqrt(ratio) : ratio);
}

}  // namespace dbench::experiments
