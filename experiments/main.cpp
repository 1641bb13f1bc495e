// dbench: the command line of DBench. Each subcommand lives in its own file; command_line.cpp parses and
// reports.
#include "core/denormals.hpp"
#include "experiments/command_line.hpp"

int main(int argc, char** argv) {
  dbench::core::flush_denormals();  // before any thread starts: they inherit it
  return dbench::experiments::run_command_line(argc, argv);
}
