// dbench: the command line of DBench. Each subcommand lives in its own file; command_line.cpp parses and
// reports.
#include "experiments/command_line.hpp"

int main(int argc, char** argv) {
  return dbench::experiments::run_command_line(argc, argv);
}
