// Turns a validated experiment config into the engines' own plain specs.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/numerics.hpp"
#include "experiments/config.hpp"
#include "models/dataset.hpp"
#include "topology/generators.hpp"
#include "topology/graph_policy.hpp"

namespace dbench::experiments {

/// The numerics spec of a config; the model's input shape and classes come from the training set.
core::NumericsSpec numerics_spec(const ExperimentConfig& config, const models::Dataset& train);

/// The graph spec of [algorithm] for `workers` nodes; throws ConfigKeyError naming algorithm.graph on an
/// unknown graph, algorithm.torus_shape on a shape that is not the workers'.
topology::GraphSpec graph_spec(const ExperimentConfig& config);

/// "a,b,c" -> {"a", "b", "c"}, blanks trimmed (ladders and stages of [algorithm]).
std::vector<std::string> split_names(const std::string& text);

/// All-reduce for centralized training, the configured graph or family for D-PSGD; throws ConfigKeyError
/// naming the key at fault.
std::unique_ptr<topology::GraphPolicy> make_policy(const ExperimentConfig& config);

/// Builds what `dbench simulate` and `train` build from a config before they run, running nothing: the policy
/// (cost-aware Ada's rungs unpicked), the timing inputs (calibration file included) and the data shards;
/// throws ConfigKeyError naming the key at fault. The config loader calls it, so one validation serves all.
void check_setup(const ExperimentConfig& config);

}  // namespace dbench::experiments
