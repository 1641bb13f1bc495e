// Internal to the config loader: the checks of a whole config that no single key's check can make (rules
// relating several keys, what setup code would refuse, unknown keys and sections).
#pragma once

#include <toml++/toml.h>

#include <map>
#include <string>
#include <vector>

#include "experiments/config.hpp"
#include "experiments/config_checks.hpp"

namespace dbench::experiments {

/// Of each pair a config gives one way (train.iterations or train.epochs, the warm-up, the step milestones),
/// drops from `root` the one the file gave when the overrides (`overridden`, "section.key") set the other.
void prefer_overridden_keys(toml::table& root, const std::vector<std::string>& overridden);

/// Turns the epochs of a loaded config into iterations (budget, warm-up, milestones) and gives the linear
/// scaling rule its default warm-up; `root` tells which keys were given. Records a pair given both ways, or a
/// budget given neither way.
void resolve_budget(ExperimentConfig& c, const toml::table& root, Problems& problems);

/// The budget rules every config must meet, loaded or built in code: iterations >= 1, and the iterations
/// that any epochs give.
void check_budget(const ExperimentConfig& c, Problems& problems, const toml::table* root);

/// Rules that relate several keys; run only once each key is valid on its own, so they never pile up.
/// `root` (null for a config built in code) gives the positions of the keys at fault.
void check_cross_keys(const ExperimentConfig& c, Problems& problems, const toml::table* root);

/// What the setup code of simulate, train and sweep would refuse (graph, policy, platform, shards), under the
/// key at fault; run last, on a config whose keys are each valid. `reads_data`: the run trains, so its data
/// set's shards are checked too.
void check_setup_keys(const ExperimentConfig& c, Problems& problems, const toml::table* root,
                      bool reads_data);

/// Rejects keys and sections of `root` that are not among `keys` (the schema's), suggesting the likely
/// intended key.
void check_unknown_keys(const toml::table& root, const std::map<std::string, Kind>& keys, Problems& problems);

}  // namespace dbench::experiments
