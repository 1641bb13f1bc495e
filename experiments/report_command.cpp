#include "experiments/commands.hpp"

namespace dbench::experiments {

void add_report_command(CLI::App& app) { app.add_subcommand("report", "report (not built yet)"); }

}  // namespace dbench::experiments
