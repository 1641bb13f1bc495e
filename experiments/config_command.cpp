// placeholder until the config command lands
#include "experiments/commands.hpp"
namespace dbench::experiments {
void add_config_command(CLI::App& app) { app.add_subcommand("config", "config (not built yet)"); }
}  // namespace dbench::experiments
