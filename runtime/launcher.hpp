// `dbench train --local N`: N workers on this machine through the MPI launcher.
#pragma once

#include <string>
#include <vector>

namespace dbench::runtime {

/// Throws LaunchError naming --local when this build cannot start `workers` local workers: fewer than one, or
/// several without MPI.
void check_local_workers(int workers);

/// The command line that starts `workers` copies of `program args...` under mpirun on this machine: the
/// launcher from $DBENCH_MPIRUN or PATH, oversubscription allowed (workers may outnumber cores), and
/// --allow-run-as-root when running as root. Throws as check_local_workers.
std::vector<std::string> local_launch_command(int workers, const std::string& program,
                                              const std::vector<std::string>& args);

/// Runs a command line (no shell) and returns its exit status (128 + signal when killed); throws LaunchError
/// when it cannot be started.
int run_command(const std::vector<std::string>& command);

/// The path of the running executable (for re-launching itself).
std::string current_executable();

}  // namespace dbench::runtime
