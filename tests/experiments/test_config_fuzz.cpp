// Malformed configs and --set expressions, generated from the schema: every key with wrong types, empty,
// negative, zero, huge and non-finite values, unknown keys, misspelt sections and bad TOML. Each is refused
// with one line naming the key (or the position), or accepted only when an independent oracle agrees.
#include <doctest/doctest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "experiments/config.hpp"
#include "experiments/sim_setup.hpp"
#include "experiments/timing_setup.hpp"

namespace ex = dbench::experiments;

namespace {

enum class Kind { string, integer, number, boolean, integers, numbers };

struct Key {
  std::string name;  ///< "section.key" or a top-level "key"
  Kind kind;
};

// The schema's keys and kinds, read off the resolved defaults the way a user sees them.
std::vector<Key> schema_keys() {
  std::vector<Key> keys;
  std::string section;
  std::istringstream lines(ex::to_toml(ex::ExperimentConfig{}));
  for (std::string line; std::getline(lines, line);) {
    if (line.empty() || line.starts_with("#")) {
      continue;
    }
    if (line.starts_with("[")) {
      section = line.substr(1, line.find(']') - 1);
      continue;
    }
    const auto eq = line.find(" = ");
    std::string value = line.substr(eq + 3);
    if (value.front() != '"') {
      value = value.substr(0, value.find_first_of(" #"));
    }
    const Kind kind = value.front() == '"'                                              ? Kind::string
                      : value.front() == '[' && line.substr(0, eq).ends_with("_epochs") ? Kind::numbers
                      : value.front() == '['                                            ? Kind::integers
                      : value == "true" || value == "false"                             ? Kind::boolean
                      : value.find('.') != std::string::npos                            ? Kind::number
                                                                                        : Kind::integer;
    keys.push_back({section.empty() ? line.substr(0, eq) : section + "." + line.substr(0, eq), kind});
  }
  return keys;
}

// One generated value: its TOML text and the kind it reads as (nullopt: no kind a key takes).
struct Value {
  std::string toml;
  std::optional<Kind> kind;
};

std::vector<Value> generated_values() {
  std::vector<Value> values = {
      {"\"\"", Kind::string},
      {"\"x\"", Kind::string},
      {"\"ring\"", Kind::string},
      {"\"torus\"", Kind::string},
      {"\"ada\"", Kind::string},
      {"\"custom\"", Kind::string},
      {"\"step\"", Kind::string},
      {"\"cosine\"", Kind::string},
      {"\"dirichlet\"", Kind::string},
      {"\"lenet\"", Kind::string},
      {"\"cifar10\"", Kind::string},
      {"\"centralized\"", Kind::string},
      {"\"densest\"", Kind::string},
      {"\"a b\"", Kind::string},
      {"\"missing.json\"", Kind::string},
      {"\"switch\"", Kind::string},
      {"\"tree\"", Kind::string},
      {"\"dragonfly\"", Kind::string},
      {"0", Kind::integer},
      {"1", Kind::integer},
      {"2", Kind::integer},
      {"3", Kind::integer},
      {"7", Kind::integer},
      {"16", Kind::integer},
      {"-1", Kind::integer},
      {"2147483647", Kind::integer},
      {"4294967296", Kind::integer},
      {"9223372036854775807", Kind::integer},
      {"-9223372036854775808", Kind::integer},
      {"0.0", Kind::number},
      {"0.5", Kind::number},
      {"-1.5", Kind::number},
      {"1e308", Kind::number},
      {"1e-300", Kind::number},
      {"nan", Kind::number},
      {"inf", Kind::number},
      {"-inf", Kind::number},
      {"true", Kind::boolean},
      {"false", Kind::boolean},
      {"[]", Kind::integers},
      {"[0]", Kind::integers},
      {"[1, 2]", Kind::integers},
      {"[-1]", Kind::integers},
      {"[3, 3]", Kind::integers},
      {"[2147483647]", Kind::integers},
      {"[4, 4]", Kind::integers},
      {"[0, 5, 5]", Kind::integers},
      {"[1.5]", Kind::numbers},
      {"[0.5, 0.25]", Kind::numbers},
      {"[\"a\"]", std::nullopt},
      {"{ a = 1 }", std::nullopt},
      {"1979-05-27", std::nullopt},
  };
  return values;
}

bool finite(double v) {
  return std::isfinite(v);
}

bool one_of(const std::string& v, std::initializer_list<const char*> allowed) {
  return std::any_of(allowed.begin(), allowed.end(), [&](const char* a) { return v == a; });
}

bool increasing_from(const std::vector<int>& v, int min) {
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (v[i] < min || (i > 0 && v[i] <= v[i - 1])) {
      return false;
    }
  }
  return true;
}

// The oracle: why an accepted config is invalid, from the documented ranges (README's config section) and
// the setup code simulate runs; empty when it is valid.
std::string oracle(const ex::ExperimentConfig& c) {
  const auto& t = c.train;
  const auto& a = c.algorithm;
  const auto& p = c.platform;
  const bool name_ok =
      !c.name.empty() && c.name.front() != '.' && std::all_of(c.name.begin(), c.name.end(), [](char ch) {
        return std::isalnum(static_cast<unsigned char>(ch)) != 0 || ch == '.' || ch == '_' || ch == '-';
      });
  const std::vector<double> platform_numbers = {p.gpu_flops_per_s,
                                                p.intra_node_bandwidth_Bps,
                                                p.intra_node_latency_s,
                                                p.nic_bandwidth_Bps,
                                                p.nic_latency_s,
                                                p.switch_bandwidth_Bps,
                                                p.switch_latency_s,
                                                p.iteration_overhead_s,
                                                p.allreduce_latency_s,
                                                p.allreduce_bandwidth_Bps,
                                                p.collective_latency_s,
                                                p.bulk_step_latency_s,
                                                p.inter_building_bandwidth_Bps,
                                                p.inter_building_latency_s};
  const std::vector<std::pair<bool, const char*>> rules = {
      {name_ok, "name"},
      {c.seed <= static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()), "seed"},
      {one_of(t.model, {"mlp", "lenet", "resnet20", "resnet50"}), "train.model"},
      {one_of(t.dataset, {"fashion-mnist", "cifar10", "synthetic", "imagenet-folder"}), "train.dataset"},
      {t.workers >= 1 && t.workers <= 1'000'000, "train.workers"},
      {t.batch_per_worker >= 1, "train.batch_per_worker"},
      {t.iterations >= 1, "train.iterations"},
      {finite(t.epochs) && t.epochs >= 0, "train.epochs"},
      {finite(t.warmup_epochs) && t.warmup_epochs >= 0, "train.warmup_epochs"},
      {finite(t.eval_every_epochs) && t.eval_every_epochs >= 0, "train.eval_every_epochs"},
      {std::is_sorted(t.lr_step_milestone_epochs.begin(), t.lr_step_milestone_epochs.end(),
                      [](double x, double y) { return x <= y; }) &&
           std::all_of(t.lr_step_milestone_epochs.begin(), t.lr_step_milestone_epochs.end(),
                       [](double e) { return finite(e) && e > 0; }),
       "train.lr_step_milestone_epochs"},
      {t.synthetic_samples >= 1 && t.synthetic_samples <= 50'000'000, "train.synthetic_samples"},
      {t.synthetic_seed <= static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()),
       "train.synthetic_seed"},
      {finite(t.lr) && t.lr > 0, "train.lr"},
      {t.lr_reference_batch >= 1, "train.lr_reference_batch"},
      {t.warmup_iterations >= 0 && t.warmup_iterations <= t.iterations, "train.warmup_iterations"},
      {one_of(t.lr_schedule, {"constant", "step", "cosine"}), "train.lr_schedule"},
      {increasing_from(t.lr_step_milestones, 1), "train.lr_step_milestones"},
      {t.lr_schedule != "step" || !t.lr_step_milestones.empty(), "train.lr_step_milestones (step)"},
      {finite(t.lr_step_gamma) && t.lr_step_gamma > 0 && t.lr_step_gamma <= 1, "train.lr_step_gamma"},
      {finite(t.lr_min) && t.lr_min >= 0, "train.lr_min"},
      {t.lr_schedule != "cosine" || t.lr_min <= ex::peak_lr(t), "train.lr_min (cosine)"},
      {finite(t.momentum) && t.momentum >= 0 && t.momentum < 1, "train.momentum"},
      {!t.nesterov || t.momentum > 0, "train.nesterov"},
      {finite(t.weight_decay) && t.weight_decay >= 0, "train.weight_decay"},
      {one_of(t.optimizer, {"sgd", "lars"}), "train.optimizer"},
      {finite(t.lars_eta) && t.lars_eta > 0, "train.lars_eta"},
      {one_of(t.partition, {"iid", "dirichlet"}), "train.partition"},
      {finite(t.dirichlet_alpha) && t.dirichlet_alpha > 0, "train.dirichlet_alpha"},
      {t.eval_every >= 1, "train.eval_every"},
      {t.eval_samples >= 0, "train.eval_samples"},
      {t.replica_eval_samples >= 1, "train.replica_eval_samples"},
      {t.mlp_hidden.size() <= 16 &&
           std::all_of(t.mlp_hidden.begin(), t.mlp_hidden.end(), [](int w) { return w >= 1 && w <= 65536; }),
       "train.mlp_hidden"},
      {t.dataset != "imagenet-folder" || !t.data_dir.empty(), "train.data_dir (imagenet-folder)"},
      {t.dataset != "cifar10" || !t.data_dir.empty(), "train.data_dir (cifar10)"},
      {t.dataset != "fashion-mnist" || t.batch_per_worker <= 60000 / t.workers, "batch fits a shard"},
      {one_of(a.kind, {"centralized", "dpsgd"}), "algorithm.kind"},
      {!a.graph.empty(), "algorithm.graph"},
      {a.degree >= 0, "algorithm.degree"},
      {finite(a.probability) && a.probability > 0 && a.probability <= 1, "algorithm.probability"},
      {a.global_every >= 0, "algorithm.global_every"},
      {increasing_from(a.switch_at, 0), "algorithm.switch_at"},
      {finite(a.ada_low) && a.ada_low > 0, "algorithm.ada_low"},
      {finite(a.ada_high) && a.ada_high > 0, "algorithm.ada_high"},
      {a.ada_probe_every >= 1 && a.ada_min_dwell >= 0 && a.ada_patience >= 1, "algorithm.ada_*"},
      {finite(a.ada_min_saving) && a.ada_min_saving >= 0 && a.ada_min_saving < 1, "algorithm.ada_min_saving"},
      {p.timing_batch_per_gpu >= 1, "platform.timing_batch_per_gpu"},
      {one_of(p.timing_model, {"mlp", "lenet", "resnet20", "resnet50"}), "platform.timing_model"},
      {one_of(p.fabric, {"", "star", "fat-tree", "dragonfly", "torus", "multi-building"}), "platform.fabric"},
      {one_of(p.allreduce, {"ring", "hierarchical", "tree", "nvls", "collnet", "auto"}),
       "platform.allreduce"},
      {p.intra_node_efficiency == 0 || (p.intra_node_efficiency >= 1e-3 && p.intra_node_efficiency <= 1),
       "platform.intra_node_efficiency"},
      {p.network_efficiency == 0 || (p.network_efficiency >= 1e-3 && p.network_efficiency <= 1),
       "platform.network_efficiency"},
      {p.nvls_efficiency == 0 || (p.nvls_efficiency >= 1e-3 && p.nvls_efficiency <= 1),
       "platform.nvls_efficiency"},
      {p.collnet_efficiency == 0 || (p.collnet_efficiency >= 1e-3 && p.collnet_efficiency <= 1),
       "platform.collnet_efficiency"},
      {p.bucket_bytes >= 0 && p.gpus_per_node >= 0 && p.nics_per_node >= 0 && p.nodes_per_switch >= 0 &&
           p.buildings >= 0,
       "platform counts"},
      {p.multi_gpu_slowdown == 0 || (p.multi_gpu_slowdown >= 1 && p.multi_gpu_slowdown <= 100),
       "platform.multi_gpu_slowdown"},
      {p.compute_jitter_cv >= 0 && p.compute_jitter_cv <= 10, "platform.compute_jitter_cv"},
      {p.compute_tail_probability >= 0 && p.compute_tail_probability <= 1,
       "platform.compute_tail_probability"},
      {p.compute_tail_factor == 0 || (p.compute_tail_factor >= 1 && p.compute_tail_factor <= 1000),
       "platform.compute_tail_factor"},
      {p.stragglers >= 0 && p.stragglers <= t.workers, "platform.stragglers"},
      {p.straggler_factor == 0 || (p.straggler_factor >= 1 && p.straggler_factor <= 1000),
       "platform.straggler_factor"},
      {std::all_of(platform_numbers.begin(), platform_numbers.end(),
                   [](double v) { return finite(v) && v >= 0; }),
       "platform numbers"},
  };
  for (const auto& [ok, what] : rules) {
    if (!ok) {
      return what;
    }
  }
  // What simulate builds before it runs must build (Ada's cost-aware pick runs SimGrid; the rungs are the
  // same).
  try {
    ex::ExperimentConfig quick = c;
    quick.algorithm.ada_cost_aware = false;
    ex::make_policy(quick);
    ex::make_timing_spec(c);
  } catch (const std::exception& e) {
    return std::string("setup: ") + e.what();
  }
  return {};
}

struct Tally {
  int cases = 0;
  int accepted = 0;
  int refused = 0;
};

// Runs one case; `named` must appear in a refusal (a key, a --set text or a position).
void run_case(const std::string& text, const std::vector<std::string>& overrides, const std::string& named,
              bool must_refuse, Tally& tally) {
  ++tally.cases;
  CAPTURE(text);
  CAPTURE(overrides.empty() ? std::string() : overrides.front());
  try {
    const ex::ExperimentConfig config = ex::load_config(text, overrides, "fuzz.toml");
    ++tally.accepted;
    CHECK_FALSE(must_refuse);
    const std::string invalid = oracle(config);
    CAPTURE(invalid);
    CHECK(invalid.empty());
  } catch (const ex::ConfigError& e) {
    ++tally.refused;
    const std::string message = e.what();
    CAPTURE(message);
    CHECK(message.starts_with("fuzz.toml"));
    CHECK(message.find('\n') == std::string::npos);
    CHECK(message.find(named) != std::string::npos);
  }
  // Anything else escapes and fails the case: neither a crash nor another exception type is allowed.
}

}  // namespace

TEST_CASE(
    "experiments::config: fuzzed configs and --set expressions are refused with the key, never accepted "
    "invalid") {
  const auto keys = schema_keys();
  REQUIRE(keys.size() >= 50);
  Tally tally;

  for (const auto& key : keys) {
    const auto dot = key.name.find('.');
    const std::string section = dot == std::string::npos ? "" : key.name.substr(0, dot);
    const std::string leaf = dot == std::string::npos ? key.name : key.name.substr(dot + 1);
    for (const auto& value : generated_values()) {
      // Integers are numbers too; anything else of the wrong kind must be refused from a file.
      const bool kind_ok = value.kind == key.kind ||
                           (key.kind == Kind::number && value.kind == Kind::integer) ||
                           (key.kind == Kind::numbers && value.kind == Kind::integers);
      const std::string line = leaf + " = " + value.toml + "\n";
      run_case(section.empty() ? line : "[" + section + "]\n" + line, {}, key.name, !kind_ok, tally);
      // From --set a string key takes any text as a string, as documented.
      const bool set_ok = kind_ok || key.kind == Kind::string;
      run_case("", {key.name + "=" + value.toml}, key.name, !set_ok, tally);
    }
  }

  // Unknown keys and misspelt sections, from a file and from --set, seeded for repeatability.
  std::mt19937 rng(20240601);
  const auto mutate = [&rng](std::string word) {
    std::uniform_int_distribution<std::size_t> at(0, word.size() - 1);
    switch (rng() % 3) {
      case 0:
        std::swap(word[at(rng)], word[at(rng)]);
        word += "x";  // a swap of equal letters would change nothing
        break;
      case 1:
        word.erase(at(rng), 1);
        break;
      default:
        word.insert(at(rng), 1, 'q');
    }
    return word;
  };
  for (const auto& key : keys) {
    const auto dot = key.name.find('.');
    if (dot == std::string::npos) {
      continue;
    }
    const std::string section = key.name.substr(0, dot);
    const std::string bad_leaf = mutate(key.name.substr(dot + 1));
    run_case("[" + section + "]\n" + bad_leaf + " = 1\n", {}, section + "." + bad_leaf, true, tally);
    run_case("", {section + "." + bad_leaf + "=1"}, section + "." + bad_leaf, true, tally);
    const std::string bad_section = mutate(section);
    run_case("[" + bad_section + "]\n" + key.name.substr(dot + 1) + " = 1\n", {}, bad_section, true, tally);
  }

  // Bad TOML: refused with the position of the error.
  const std::vector<std::string> syntax = {
      "[train\nworkers = 1\n",
      "workers = \n",
      "[train]\nworkers = 1 2\n",
      "= 3\n",
      "[train]\nworkers = \"8\n",
      "[[train]]\n[train]\n",
      "[train]\nlr = 1..2\n",
      "a = [1, 2\n",
      "[train]\nworkers = 1\nworkers = 2\n",
      "\"unterminated = 1\n",
      "[algorithm]\ngraph = 'ring\n",
      "[platform]\npreset = \"\\q\"\n",
  };
  for (const auto& text : syntax) {
    run_case(text, {}, "TOML syntax error", true, tally);
  }
  // Malformed --set expressions name themselves.
  for (const std::string set : {"train.workers", "=8", "train..workers=8", "train workers=8", ".workers=8",
                                "train.workers.x=8", "name.x=1", "train.workers=[1,"}) {
    const bool names_set = set != "train.workers=[1,";
    run_case("", {set}, names_set ? set : "train.workers", true, tally);
  }

  MESSAGE("fuzzed " << tally.cases << " configs and --set expressions: " << tally.refused << " refused, "
                    << tally.accepted << " accepted and valid");
  CHECK(tally.cases >= 2000);
}
