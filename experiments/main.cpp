// dbench: the command line of DBench. Each subcommand lives in its own file; main only parses and reports.
#include <fmt/core.h>

#include <cstdio>
#include <exception>

#include "experiments/commands.hpp"

int main(int argc, char** argv) {
  CLI::App app{"DBench: benchmark centralized and decentralized data-parallel training", "dbench"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "dbench 0.1.0");
  dbench::experiments::add_graph_command(app);
  dbench::experiments::add_graphs_command(app);
  dbench::experiments::add_simulate_command(app);
  dbench::experiments::add_config_command(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const std::exception& e) {
    fmt::print(stderr, "dbench: error: {}\n", e.what());
    return 1;
  }
  return 0;
}
