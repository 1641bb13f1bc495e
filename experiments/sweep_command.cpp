#include "experiments/commands.hpp"

namespace dbench::experiments {

void add_sweep_command(CLI::App& app) { app.add_subcommand("sweep", "sweep (not built yet)"); }

}  // namespace dbench::experiments
