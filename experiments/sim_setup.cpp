#include "experiments/sim_setup.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <limits>
#include <string>
#include <vector>

#include "experiments/timing_setup.hpp"
#include "sim/timing.hpp"

namespace dbench::experiments {

sim::NumericsSpec numerics_spec(const ExperimentConfig& config, const models::Dataset& train) {
  const TrainConfig& t = config.train;
  sim::NumericsSpec spec;
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
  spec.lr.decay = t.lr_schedule == "step"     ? sim::LrDecay::step
                  : t.lr_schedule == "cosine" ? sim::LrDecay::cosine
                                              : sim::LrDecay::constant;
  spec.lr.milestones.assign(t.lr_step_milestones.begin(), t.lr_step_milestones.end());
  spec.lr.gamma = t.lr_step_gamma;
  spec.lr.min_lr = t.lr_min;
  spec.sgd.momentum = t.momentum;
  spec.sgd.nesterov = t.nesterov;
  spec.sgd.weight_decay = t.weight_decay;
  spec.partition =
      t.partition == "dirichlet" ? models::PartitionScheme::dirichlet : models::PartitionScheme::iid;
  spec.dirichlet_alpha = t.dirichlet_alpha;
  spec.eval_every = t.eval_every;
  spec.eval_samples = t.eval_samples;
  spec.replica_eval_samples = t.replica_eval_samples;
  spec.seed = config.seed;
  return spec;
}

namespace {

/// The graph spec of one named graph kind for the configured workers; `key` names the config key it came
/// from.
topology::GraphSpec spec_for(const ExperimentConfig& config, const std::string& kind, const char* key) {
  topology::GraphSpec spec;
  try {
    spec.kind = topology::parse_graph_kind(kind);
  } catch (const topology::GraphError& e) {
    // Same reason, but named by the config key the user wrote.
    std::string reason = e.what();
    reason.erase(0, e.argument().size() + 2);
    throw topology::GraphError(
        key, reason + "; or ada, switch, allreduce, global-average where a policy is allowed");
  }
  spec.nodes = config.train.workers;
  spec.degree = config.algorithm.degree;
  if (spec.kind == topology::GraphKind::erdos_renyi) {
    spec.probability = config.algorithm.probability;
  }
  if (config.algorithm.torus_shape.size() == 2) {
    spec.torus_rows = config.algorithm.torus_shape[0];
    spec.torus_cols = config.algorithm.torus_shape[1];
  } else if (!config.algorithm.torus_shape.empty()) {
    throw topology::GraphError("algorithm.torus_shape", fmt::format("expected [rows, cols], got {} values",
                                                                    config.algorithm.torus_shape.size()));
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
  return std::make_unique<topology::SequencePolicy>(topology::make_graph(spec_for(config, name, key)));
}

/// Simulated seconds per iteration of one rung on the configured platform, over 16 iterations (enough for
/// every period of the families at the usual scales; identical graphs are simulated once).
double rung_seconds(const ExperimentConfig& config, const std::string& name) {
  auto rung = simple_policy(config, name, "algorithm.ada_ladder");
  std::vector<topology::ScheduleStep> steps;
  for (std::int64_t t = 0; t < 16; ++t) {
    steps.push_back(rung->graph_for(t, nullptr));
  }
  return sim::time_schedule(timing_spec(config), steps, false).seconds_per_iteration;
}

std::unique_ptr<topology::AdaPolicy> make_ada(const ExperimentConfig& config) {
  const AlgorithmConfig& a = config.algorithm;
  std::vector<std::string> names = split_names(a.ada_ladder);
  if (names.empty()) {
    throw topology::GraphError("algorithm.ada_ladder", "needs at least one graph");
  }
  // The start is resolved on the ladder as written, then carried over the rungs that cost-awareness keeps.
  std::size_t start = 0;
  if (a.ada_start == "densest") {
    start = names.size() - 1;
  } else if (a.ada_start != "sparsest") {
    const auto it = std::find(names.begin(), names.end(), a.ada_start);
    if (it == names.end()) {
      throw topology::GraphError(
          "algorithm.ada_start",
          fmt::format("'{}' is neither sparsest, densest nor a rung of ada_ladder ({})", a.ada_start,
                      a.ada_ladder));
    }
    start = static_cast<std::size_t>(it - names.begin());
  }
  std::vector<bool> keep(names.size(), true);
  if (a.ada_cost_aware) {
    // A rung is worth having only if it is cheaper than every denser one: a denser and no slower rung mixes
    // better at no cost in time, so Ada would only lose time on it.
    double cheapest_denser = std::numeric_limits<double>::infinity();
    for (std::size_t i = names.size(); i-- > 0;) {
      const double seconds = rung_seconds(config, names[i]);
      keep[i] = seconds < cheapest_denser;
      cheapest_denser = std::min(cheapest_denser, seconds);
    }
  }
  std::vector<std::unique_ptr<topology::GraphPolicy>> ladder;
  int start_rung = -1;
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (!keep[i]) {
      continue;
    }
    if (start_rung < 0 && i >= start) {
      start_rung = static_cast<int>(ladder.size());
    }
    ladder.push_back(simple_policy(config, names[i], "algorithm.ada_ladder"));
  }
  topology::AdaOptions options;
  options.low = a.ada_low;
  options.high = a.ada_high;
  options.check_every = a.ada_check_every;
  options.min_dwell = a.ada_min_dwell;
  options.patience = a.ada_patience;
  options.start_rung = start_rung;
  return std::make_unique<topology::AdaPolicy>(std::move(ladder), options);
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

topology::GraphSpec graph_spec(const ExperimentConfig& config) {
  return spec_for(config, config.algorithm.graph, "algorithm.graph");
}

std::unique_ptr<topology::GraphPolicy> make_policy(const ExperimentConfig& config) {
  const AlgorithmConfig& a = config.algorithm;
  if (a.kind == "centralized") {
    return std::make_unique<topology::AllReducePolicy>();
  }
  if (a.graph == "ada") {
    return make_ada(config);
  }
  if (a.graph == "switch") {
    std::vector<std::unique_ptr<topology::GraphPolicy>> stages;
    for (const auto& name : split_names(a.switch_graphs)) {
      stages.push_back(simple_policy(config, name, "algorithm.switch_graphs"));
    }
    return std::make_unique<topology::SwitchPolicy>(
        std::move(stages), std::vector<std::int64_t>(a.switch_at.begin(), a.switch_at.end()));
  }
  auto sequence = topology::make_graph(graph_spec(config));
  if (a.global_every > 0) {
    return std::make_unique<topology::PeriodicAveragePolicy>(std::move(sequence), a.global_every);
  }
  return std::make_unique<topology::SequencePolicy>(std::move(sequence));
}

}  // namespace dbench::experiments
