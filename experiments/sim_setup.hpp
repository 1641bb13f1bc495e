// Turns a validated experiment config into the engines' own plain specs.
#pragma once

#include <memory>
#include <optional>
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

/// A split of the config's data set as the simulator reads it (fashion-mnist, cifar10, synthetic: sized by
/// train.synthetic_samples, seeded by train.synthetic_seed or else the run's seed).
models::Dataset config_dataset(const ExperimentConfig& config, models::Split split);

/// The graph spec of [algorithm] for `workers` nodes; throws ConfigKeyError naming algorithm.graph on an
/// unknown graph, algorithm.torus_shape on a shape that is not the workers'.
topology::GraphSpec graph_spec(const ExperimentConfig& config);

/// "a,b,c" -> {"a", "b", "c"}, blanks trimmed (ladders and stages of [algorithm]).
std::vector<std::string> split_names(const std::string& text);

/// The exchange of a rung of algorithm.ada_ladder between its global averages: "ring" for "ring:4", and the
/// name itself for one without a period ("global-average").
std::string ada_rung_exchange(const std::string& rung);

/// Which rungs of algorithm.ada_ladder Ada uses, in ladder order: every one, unless ada_cost_aware, which
/// keeps a rung only when it is faster than every denser rung on the configured platform. The one part of
/// making a policy that runs the simulator (seconds at thousands of GPUs): real workers compute it once, on
/// rank 0.
std::vector<bool> ada_rungs_kept(const ExperimentConfig& config);

/// All-reduce for centralized training, the configured graph or family for D-PSGD; throws ConfigKeyError
/// naming the key at fault. Ada uses the rungs `kept` marks (ada_rungs_kept's answer, computed here when
/// absent); nothing else runs the simulator.
std::unique_ptr<topology::GraphPolicy> make_policy(
    const ExperimentConfig& config, const std::optional<std::vector<bool>>& kept = std::nullopt);

/// Builds what `dbench simulate` and `train` build from a config before they run, running nothing: the policy
/// (cost-aware Ada's rungs unpicked), the timing inputs (calibration file included) and the data shards;
/// throws ConfigKeyError naming the key at fault. The config loader calls it, so one validation serves all.
/// `reads_data`: false for a timing-only run, which reads no data set (its shards go unchecked).
void check_setup(const ExperimentConfig& config, bool reads_data = true);

}  // namespace dbench::experiments
