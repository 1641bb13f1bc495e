// Internal to the config loader: the checks of a whole config that no single key's check can make (rules
// relating several keys, what setup code would refuse, unknown keys and sections).
#pragma once

#include <toml++/toml.h>

#include <map>
#include <string>

#include "experiments/config.hpp"
#include "experiments/config_checks.hpp"

namespace dbench::experiments {

/// Rules that relate several keys; run only once each key is valid on its own, so they never pile up.
/// `root` (null for a config built in code) gives the positions of the keys at fault.
void check_cross_keys(const ExperimentConfig& c, Problems& problems, const toml::table* root);

/// What the setup code of simulate, train and sweep would refuse (graph, policy, platform, shards), under the
/// key at fault; run last, on a config whose keys are each valid.
void check_setup_keys(const ExperimentConfig& c, Problems& problems, const toml::table* root);

/// Rejects keys and sections of `root` that are not among `keys` (the schema's), suggesting the likely
/// intended key.
void check_unknown_keys(const toml::table& root, const std::map<std::string, Kind>& keys, Problems& problems);

}  // namespace dbench::experiments
