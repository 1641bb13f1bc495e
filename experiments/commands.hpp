#pragma once

#include <CLI/CLI.hpp>

namespace dbench::experiments {

/// Adds `dbench graph`: one graph's statistics as text or JSON, exported as DOT or GraphML.
void add_graph_command(CLI::App& app);

/// Adds `dbench config`: validates a config with its overrides and prints or writes the resolved TOML.
void add_config_command(CLI::App& app);

}  // namespace dbench::experiments
