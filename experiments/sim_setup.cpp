#include "experiments/sim_setup.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "experiments/timing_setup.hpp"
#include "models/dataset.hpp"
#include "models/errors.hpp"
#include "models/model_profile.hpp"
#include "sim/platform.hpp"
#include "sim/timing.hpp"

namespace dbench::experiments {

core::NumericsSpec numerics_spec(const ExperimentConfig& config, const models::Dataset& train) {
  const TrainConfig& t = config.train;
  core::NumericsSpec spec;
  spec.model.name = t.model;
  spec.model.input_channels = train.channels;
  spec.model.input_height = train.height;
  spec.model.input_width = train.width;
  spec.model.classes = train.classes;
  spec.model.mlp_hidden = t.mlp_hidden;
  spec.workers = t.workers;
  spec.batch_per_worker = t.batch_per_worker;
  spec.iterations = t.iterations;
  spec.lr.peak = peak_lr(t);
  spec.lr.iterations = t.iterations;
  spec.lr.warmup_iterations = t.warmup_iterations;
  spec.lr.warmup_start = warmup_start_lr(t);
  spec.lr.decay = t.lr_schedule == "step"     ? core::LrDecay::step
                  : t.lr_schedule == "cosine" ? core::LrDecay::cosine
                                              : core::LrDecay::constant;
  spec.lr.milestones.assign(t.lr_step_milestones.begin(), t.lr_step_milestones.end());
  spec.lr.gamma = t.lr_step_gamma;
  spec.lr.min_lr = t.lr_min;
  spec.sgd.momentum = t.momentum;
  spec.sgd.nesterov = t.nesterov;
  spec.sgd.weight_decay = t.weight_decay;
  spec.sgd.lars = t.optimizer == "lars";
  spec.sgd.lars_eta = t.lars_eta;
  spec.partition =
      t.partition == "dirichlet" ? models::PartitionScheme::dirichlet : models::PartitionScheme::iid;
  spec.dirichlet_alpha = t.dirichlet_alpha;
  spec.eval_every = t.eval_every;
  spec.eval_samples = t.eval_samples;
  spec.replica_eval_samples = t.replica_eval_samples;
  spec.seed = config.seed;
  spec.augment_copies = t.augment_copies;
  spec.shared_momentum = config.algorithm.graph == "ada" && config.algorithm.ada_shared_momentum;
  return spec;
}

models::Dataset config_dataset(const ExperimentConfig& config, models::Split split) {
  const TrainConfig& t = config.train;
  return core::load_dataset(t.dataset, split, t.data_dir,
                            t.synthetic_seed != 0 ? t.synthetic_seed : config.seed, t.synthetic_samples);
}

namespace {

/// The config key behind a graph input; `graph_key` is the key that named the graph (algorithm.graph, a
/// stage of algorithm.switch_graphs or a rung of algorithm.ada_ladder).
std::string config_key(topology::GraphInput input, std::string_view graph_key) {
  switch (input) {
    case topology::GraphInput::nodes:
      return "train.workers";
    case topology::GraphInput::shape:
      return "algorithm.torus_shape";
    case topology::GraphInput::degree:
      return "algorithm.degree";
    case topology::GraphInput::probability:
      return "algorithm.probability";
    case topology::GraphInput::period:
      return "algorithm.global_every";
    case topology::GraphInput::stage_starts:
      return "algorithm.switch_at";
    case topology::GraphInput::ladder:
      return "algorithm.ada_ladder";
    case topology::GraphInput::band:
      return "algorithm.ada_low";
    case topology::GraphInput::ada_timing:
      return "algorithm.ada_probe_every";
    case topology::GraphInput::start_rung:
      return "algorithm.ada_start";
    case topology::GraphInput::kind:
    case topology::GraphInput::weights:
    case topology::GraphInput::graph:
      break;
  }
  return std::string(graph_key);
}

/// Runs `build` and reports a GraphError under the config key behind it.
template <class Build>
auto with_config_keys(std::string_view graph_key, const std::string& name, Build&& build) {
  try {
    return build();
  } catch (const topology::GraphError& e) {
    std::string reason = e.reason();
    if (e.input() == topology::GraphInput::nodes && !name.empty()) {
      reason += fmt::format(" ({} names \"{}\")", graph_key, name);
    }
    throw ConfigKeyError(config_key(e.input(), graph_key), reason);
  }
}

/// The graph spec of one named graph kind for the configured workers; `key` names the config key it came
/// from.
topology::GraphSpec spec_for(const ExperimentConfig& config, const std::string& kind, const char* key) {
  topology::GraphSpec spec;
  try {
    spec.kind = topology::parse_graph_kind(kind);
  } catch (const topology::GraphError& e) {
    throw ConfigKeyError(
        key, e.reason() + "; or ada, switch, local, global-average, and allreduce where a policy is allowed");
  }
  spec.nodes = config.train.workers;
  spec.degree = config.algorithm.degree;
  if (spec.kind == topology::GraphKind::erdos_renyi) {
    spec.probability = config.algorithm.probability;
  }
  const auto& shape = config.algorithm.torus_shape;
  if (shape.size() == 2) {
    spec.torus_rows = shape[0];
    spec.torus_cols = shape[1];
    const std::int64_t nodes = std::int64_t{shape[0]} * shape[1];
    if (spec.kind == topology::GraphKind::torus && nodes != spec.nodes) {
      throw ConfigKeyError("algorithm.torus_shape", fmt::format("{}x{} is {} nodes, but train.workers is {}",
                                                                shape[0], shape[1], nodes, spec.nodes));
    }
  } else if (!shape.empty()) {
    throw ConfigKeyError("algorithm.torus_shape",
                         fmt::format("expected [rows, cols], got {} values", shape.size()));
  }
  spec.seed = config.seed;
  return spec;
}

/// A rung or stage: "allreduce" (of gradients), "global-average" (of parameters) or a graph kind.
std::unique_ptr<topology::GraphPolicy> simple_policy(const ExperimentConfig& config, const std::string& name,
                                                     const char* key) {
  if (name == "allreduce") {
    return std::make_unique<topology::AllReducePolicy>();
  }
  if (name == "global-average") {
    return std::make_unique<topology::GlobalAveragePolicy>();
  }
  if (name == "local") {
    return std::make_unique<topology::LocalPolicy>(config.train.workers);
  }
  const topology::GraphSpec spec = spec_for(config, name, key);
  return std::make_unique<topology::SequencePolicy>(
      with_config_keys(key, name, [&] { return topology::make_graph(spec); }));
}

/// One rung of algorithm.ada_ladder: "global-average", or "<exchange>:<H>" (local steps or a graph kind
/// between global averages every H iterations, H >= 2).
topology::AdaRung ada_rung(const ExperimentConfig& config, const std::string& name) {
  constexpr const char* key = "algorithm.ada_ladder";
  topology::AdaRung rung;
  rung.name = name;
  if (name == "global-average") {
    return rung;
  }
  const std::string exchange = ada_rung_exchange(name);
  if (exchange == name) {
    throw ConfigKeyError(key, fmt::format("rung '{}': write global-average, or the exchange between global "
                                          "averages and their period, e.g. local:4 or {}:4",
                                          name, name));
  }
  const std::string period = name.substr(exchange.size() + 1);
  std::int64_t h = 0;
  const auto [end, error] = std::from_chars(period.data(), period.data() + period.size(), h);
  if (error != std::errc() || end != period.data() + period.size() || h < 2 || h > 1000) {
    throw ConfigKeyError(key, fmt::format("rung '{}': the period after ':' must be a whole number of "
                                          "iterations in [2, 1000], got '{}'",
                                          name, period));
  }
  if (exchange == "allreduce" || exchange == "global-average") {
    throw ConfigKeyError(key, fmt::format("rung '{}': between global averages the replicas take local steps "
                                          "(local) or gossip on a graph kind, not {}",
                                          name, exchange));
  }
  rung.period = h;
  rung.between = simple_policy(config, exchange, key);
  return rung;
}

/// Simulated seconds per iteration of one rung on the configured platform, over enough iterations for
/// every period of the families and of the global average at the usual scales (identical graphs are
/// simulated once).
double rung_seconds(const ExperimentConfig& config, const std::string& name) {
  topology::AdaRung rung = ada_rung(config, name);
  const std::int64_t count = std::max<std::int64_t>(16, 4 * rung.period);
  std::unique_ptr<topology::GraphPolicy> alone;
  if (rung.period == 1) {
    alone = std::make_unique<topology::GlobalAveragePolicy>();
  } else {
    alone = std::make_unique<topology::PeriodicAveragePolicy>(std::move(rung.between), rung.period);
  }
  std::vector<topology::ScheduleStep> steps;
  for (std::int64_t t = 0; t < count; ++t) {
    steps.push_back(alone->graph_for(t, nullptr));
  }
  return sim::time_schedule(make_timing_spec(config), steps, false).seconds_per_iteration;
}

/// The rungs of algorithm.ada_ladder; throws ConfigKeyError when there are none.
std::vector<std::string> ada_ladder(const ExperimentConfig& config) {
  std::vector<std::string> names = split_names(config.algorithm.ada_ladder);
  if (names.empty()) {
    throw ConfigKeyError("algorithm.ada_ladder", "needs at least one rung");
  }
  return names;
}

std::unique_ptr<topology::AdaPolicy> make_ada(const ExperimentConfig& config, const std::vector<bool>& keep) {
  const AlgorithmConfig& a = config.algorithm;
  const std::vector<std::string> names = ada_ladder(config);
  if (keep.size() != names.size()) {
    throw std::invalid_argument(
        fmt::format("Ada's kept rungs: {} flags for a ladder of {} rungs", keep.size(), names.size()));
  }
  // The start is resolved on the ladder as written, then carried over the rungs that cost-awareness keeps.
  std::size_t start = 0;
  if (a.ada_start == "densest") {
    start = names.size() - 1;
  } else if (a.ada_start != "sparsest") {
    const auto it = std::find(names.begin(), names.end(), a.ada_start);
    if (it == names.end()) {
      throw ConfigKeyError("algorithm.ada_start",
                           fmt::format("'{}' is neither sparsest, densest nor a rung of ada_ladder ({})",
                                       a.ada_start, a.ada_ladder));
    }
    start = static_cast<std::size_t>(it - names.begin());
  }
  std::vector<topology::AdaRung> ladder;
  int start_rung = -1;
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (!keep[i]) {
      continue;
    }
    if (start_rung < 0 && i >= start) {
      start_rung = static_cast<int>(ladder.size());
    }
    ladder.push_back(ada_rung(config, names[i]));
  }
  topology::AdaOptions options;
  options.low = a.ada_low;
  options.high = a.ada_high;
  options.probe_every = a.ada_probe_every;
  options.min_dwell = a.ada_min_dwell;
  options.patience = a.ada_patience;
  options.start_rung = start_rung < 0 ? static_cast<int>(ladder.size()) - 1 : start_rung;
  return with_config_keys("algorithm.ada_ladder", "",
                          [&] { return std::make_unique<topology::AdaPolicy>(std::move(ladder), options); });
}

}  // namespace

std::vector<std::string> split_names(const std::string& text) {
  std::vector<std::string> names;
  std::size_t begin = 0;
  while (begin <= text.size()) {
    const std::size_t end = std::min(text.find(',', begin), text.size());
    std::string name = text.substr(begin, end - begin);
    name.erase(0, name.find_first_not_of(" \t"));
    name.erase(name.find_last_not_of(" \t") + 1);
    if (!name.empty()) {
      names.push_back(name);
    }
    begin = end + 1;
  }
  return names;
}

std::string ada_rung_exchange(const std::string& rung) {
  return rung.substr(0, rung.find(':'));
}

topology::GraphSpec graph_spec(const ExperimentConfig& config) {
  return spec_for(config, config.algorithm.graph, "algorithm.graph");
}

std::vector<bool> ada_rungs_kept(const ExperimentConfig& config) {
  const std::vector<std::string> names = ada_ladder(config);
  std::vector<bool> keep(names.size(), true);
  if (config.algorithm.ada_cost_aware) {
    // A rung is worth having only if it is cheaper than every denser one by ada_min_saving: a denser rung
    // that is no slower mixes better at no cost in time, and one only slightly slower needs fewer
    // iterations than the sparser rung saves time on each.
    const double keep_below = 1.0 - config.algorithm.ada_min_saving;
    double cheapest_denser = std::numeric_limits<double>::infinity();
    for (std::size_t i = names.size(); i-- > 0;) {
      const double seconds = rung_seconds(config, names[i]);
      keep[i] = seconds < keep_below * cheapest_denser;
      cheapest_denser = std::min(cheapest_denser, seconds);
    }
  }
  return keep;
}

std::unique_ptr<topology::GraphPolicy> make_policy(const ExperimentConfig& config,
                                                   const std::optional<std::vector<bool>>& kept) {
  const AlgorithmConfig& a = config.algorithm;
  if (a.kind == "centralized") {
    return std::make_unique<topology::AllReducePolicy>();
  }
  if (a.graph == "ada") {
    return make_ada(config, kept ? *kept : ada_rungs_kept(config));
  }
  if (a.graph == "switch") {
    std::vector<std::unique_ptr<topology::GraphPolicy>> stages;
    for (const auto& name : split_names(a.switch_graphs)) {
      stages.push_back(simple_policy(config, name, "algorithm.switch_graphs"));
    }
    if (stages.empty()) {
      throw ConfigKeyError("algorithm.switch_graphs", "needs at least one graph");
    }
    if (stages.size() != a.switch_at.size()) {
      throw ConfigKeyError("algorithm.switch_at",
                           fmt::format("lists {} start iterations, but algorithm.switch_graphs has {} stages",
                                       a.switch_at.size(), stages.size()));
    }
    return with_config_keys("algorithm.switch_graphs", "", [&]() -> std::unique_ptr<topology::GraphPolicy> {
      return std::make_unique<topology::SwitchPolicy>(
          std::move(stages), std::vector<std::int64_t>(a.switch_at.begin(), a.switch_at.end()));
    });
  }
  if (a.graph == "local" || a.graph == "global-average") {
    auto policy = simple_policy(config, a.graph, "algorithm.graph");
    if (a.global_every > 0 && a.graph == "local") {
      // Local SGD: local steps, a global average every global_every iterations.
      return std::make_unique<topology::PeriodicAveragePolicy>(std::move(policy), a.global_every);
    }
    return policy;
  }
  const topology::GraphSpec spec = graph_spec(config);
  auto sequence = with_config_keys("algorithm.graph", a.graph, [&] { return topology::make_graph(spec); });
  if (a.global_every > 0) {
    return std::make_unique<topology::PeriodicAveragePolicy>(std::move(sequence), a.global_every);
  }
  return std::make_unique<topology::SequencePolicy>(std::move(sequence));
}

namespace {

// "train.augment_copies = K views of each image" between `before` and `after` where the training set is
// augmented, for messages that quote its size; empty otherwise.
std::string views_of(const TrainConfig& t, std::string_view before, std::string_view after = "") {
  return t.augment_copies > 1 ? fmt::format("{}train.augment_copies = {} views of each image{}", before,
                                            t.augment_copies, after)
                              : std::string();
}

/// The model the engines build for the data set's images, where its shape is known without reading it
/// (imagenet-folder's images are scaled by the runtime).
std::optional<models::ModelSpec> model_spec(const TrainConfig& t) {
  models::ModelSpec spec;
  spec.name = t.model;
  spec.mlp_hidden = t.mlp_hidden;
  if (t.dataset == "fashion-mnist") {
    return spec;  // ModelSpec's defaults: 1 x 28 x 28, 10 classes
  }
  if (t.dataset == "cifar10") {
    spec.input_channels = 3;
    spec.input_height = 32;
    spec.input_width = 32;
    return spec;
  }
  if (t.dataset == "synthetic") {
    const models::SyntheticSpec synthetic;
    spec.input_channels = synthetic.channels;
    spec.input_height = synthetic.height;
    spec.input_width = synthetic.width;
    spec.classes = synthetic.classes;
    return spec;
  }
  return std::nullopt;
}

}  // namespace

void check_setup(const ExperimentConfig& config, bool reads_data) {
  // Cost-aware Ada only drops rungs by simulated time; the rungs and the start it checks are the same.
  ExperimentConfig quick = config;
  quick.algorithm.ada_cost_aware = false;
  make_policy(quick);
  try {
    const sim::TimingSpec timing = make_timing_spec(config);
    sim::validate_timing(timing.platform, timing.gpus, timing.options);
  } catch (const sim::PlatformError& e) {
    std::string reason = e.what();
    reason.erase(0, e.key().size() + 2);
    throw ConfigKeyError(e.key(), reason);
  } catch (const ConfigError& e) {
    // An unreadable or invalid calibration file: its own message names the file and its key.
    throw ConfigKeyError("platform.preset", e.what());
  } catch (const models::ModelError& e) {
    throw ConfigKeyError("platform.timing_model", e.what());
  }
  const TrainConfig& t = config.train;
  if (!reads_data) {
    return;
  }
  // The model must fit the images: LeNet's feature maps vanish on synthetic 1 x 32 inputs.
  if (const auto spec = model_spec(t)) {
    try {
      models::model_profile(*spec);
    } catch (const models::ModelError& e) {
      throw ConfigKeyError("train.model", fmt::format("{} (train.dataset = {})", e.what(), t.dataset));
    }
  }
  // The folders simulate reads; an image folder is read only by train's workers, on their machines.
  if (!t.data_dir.empty() && (t.dataset == "fashion-mnist" || t.dataset == "cifar10") &&
      !std::filesystem::is_directory(t.data_dir)) {
    throw ConfigKeyError(
        "train.data_dir",
        fmt::format("'{}' is not a folder; name the folder of {}", t.data_dir,
                    t.dataset == "cifar10" ? "CIFAR-10's binary batches (data_batch_1.bin ...)"
                                           : "Fashion-MNIST's IDX files (Debian's dataset-fashion-mnist "
                                             "installs them in /usr/share/datasets/fashion-mnist)"));
  }
  // Every replica's shard holds floor(samples / workers) or one more sample (iid and Dirichlet alike).
  if (const auto samples = train_samples(t)) {
    const std::int64_t shard = *samples / t.workers;
    if (shard < 1) {
      throw ConfigKeyError("train.workers",
                           fmt::format("{} replicas cannot share {}'s {} training samples{}", t.workers,
                                       t.dataset, *samples, views_of(t, " (", ")")));
    }
    if (t.batch_per_worker > shard) {
      throw ConfigKeyError(
          "train.batch_per_worker",
          fmt::format("{} does not fit a replica's shard of {} samples ({}'s {} training samples over "
                      "train.workers = {}{})",
                      t.batch_per_worker, shard, t.dataset, *samples, t.workers, views_of(t, "; ")));
    }
  }
}

}  // namespace dbench::experiments
