// Checks of a whole config after each key's own: rules relating several keys, what setup code would refuse,
// and keys or sections the schema does not know ("did you mean").
#include "experiments/config_rules.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <array>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "experiments/config_text.hpp"
#include "experiments/sim_setup.hpp"

namespace dbench::experiments {
namespace {

constexpr std::array<std::string_view, 3> kSections = {"train", "algorithm", "platform"};

bool is_section(std::string_view name) {
  return std::find(kSections.begin(), kSections.end(), name) != kSections.end();
}

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

}  // namespace

// Rules that relate several keys; run only once each key is valid on its own, so they never pile up.
void check_cross_keys(const ExperimentConfig& c, Problems& problems, const toml::table* root) {
  const auto node_of = [root](std::string_view section, std::string_view key) {
    return node_at(root, full_key(section, key));
  };
  const auto& t = c.train;
  check_budget(c, problems, root);
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
  if (t.augment_copies > 1 && (t.dataset == "synthetic" || t.dataset == "imagenet-folder")) {
    problems.add("train.augment_copies", node_of("train", "augment_copies"),
                 t.dataset == "synthetic"
                     ? "must be 1 for train.dataset = \"synthetic\": its samples are not images; "
                       "train.synthetic_samples sets its size"
                     : "must be 1 for train.dataset = \"imagenet-folder\": views are implemented for "
                       "fashion-mnist and cifar10");
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
void check_setup_keys(const ExperimentConfig& c, Problems& problems, const toml::table* root,
                      bool reads_data) {
  try {
    check_setup(c, reads_data);
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

}  // namespace dbench::experiments
