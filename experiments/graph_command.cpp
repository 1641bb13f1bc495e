// placeholder until the graph command lands
#include <stdexcept>
#include "experiments/commands.hpp"
namespace dbench::experiments {
void add_graph_command(CLI::App& app) { app.add_subcommand("graph", "graph statistics (not built yet)"); }
}  // namespace dbench::experiments
