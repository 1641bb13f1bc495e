#include "experiments/sim_setup.hpp"

#include <fmt/core.h>

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

topology::GraphSpec graph_spec(const ExperimentConfig& config) {
  topology::GraphSpec spec;
  try {
    spec.kind = topology::parse_graph_kind(config.algorithm.graph);
  } catch (const topology::GraphError& e) {
    // Same reason, but named by the config key the user wrote.
    std::string reason = e.what();
    reason.erase(0, e.argument().size() + 2);
    throw topology::GraphError("algorithm.graph", reason);
  }
  spec.nodes = config.train.workers;
  spec.degree = config.algorithm.degree;
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

std::unique_ptr<topology::GraphPolicy> make_policy(const ExperimentConfig& config) {
  if (config.algorithm.kind == "centralized") {
    return std::make_unique<topology::AllReducePolicy>();
  }
  return std::make_unique<topology::SequencePolicy>(topology::make_graph(graph_spec(config)));
}

}  // namespace dbench::experiments
