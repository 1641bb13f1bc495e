// `dbench train --local N`: N workers on this machine through the MPI launcher.
#pragma once

#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace dbench::runtime {

/// The environment variable in which run_command tells the command it starts (and mpirun its workers) the
/// pid of the dbench that started it.
inline constexpr const char* kLauncherPidVariable = "DBENCH_LAUNCHER_PID";

/// Throws LaunchError naming --local when this build cannot start `workers` local workers: fewer than one, or
/// several without MPI.
void check_local_workers(int workers);

/// The command line that starts `workers` copies of `program args...` under mpirun on this machine: the
/// launcher from $DBENCH_MPIRUN or PATH, oversubscription allowed (workers may outnumber cores), and
/// --allow-run-as-root when running as root. `quiet`: without the launcher's own notes on a worker that
/// failed (for workers that say themselves, in one line, why they stop). Throws as check_local_workers.
std::vector<std::string> local_launch_command(int workers, const std::string& program,
                                              const std::vector<std::string>& args, bool quiet = false);

/// What becomes of a command's standard output: shown as this process's, or discarded (its errors, on stderr,
/// are still shown).
enum class Output { shown, stdout_discarded };

/// Runs a command line (no shell, stdin from /dev/null; stdout as `output` says) in a process group of its
/// own and returns its exit status (128 + signal when killed). Nothing it starts outlives this call or this
/// process:
/// - SIGINT, SIGTERM or SIGHUP arriving meanwhile is passed on to the command, which is waited for (and
///   killed if it has not ended 10 s later); then Interrupted is thrown;
/// - the command gets SIGTERM when this process dies, even by SIGKILL, and learns its pid from
///   DBENCH_LAUNCHER_PID (see LauncherWatch);
/// - what it leaves running when it ends (in its process group, or anywhere with DBENCH_LAUNCHER_PID naming
///   this process: mpirun's workers) gets SIGTERM, and SIGKILL 10 s later.
/// Throws LaunchError when the command cannot be started. Call it from the main thread: the kernel sends the
/// death signal when the thread that started the command ends.
int run_command(const std::vector<std::string>& command, Output output = Output::shown);

/// The path of the running executable (for re-launching itself).
std::string current_executable();

/// A worker's watch on the dbench that launched it (through mpirun): mpirun stops its workers when it is
/// told to, but a worker whose mpirun was killed outright would train on alone. When the process named by
/// DBENCH_LAUNCHER_PID is gone, this sends its own process SIGTERM. Does nothing where the variable is unset
/// (workers of a user's own mpirun or srun).
/// This process's environment with DBENCH_LAUNCHER_PID naming this process: what a process it starts gets,
/// so that its LauncherWatch stops it when this one is gone.
std::vector<std::string> child_environment();

class LauncherWatch {
 public:
  /// Starts watching (a thread that looks four times a second) when DBENCH_LAUNCHER_PID is set.
  LauncherWatch();
  /// Stops watching.
  ~LauncherWatch();
  LauncherWatch(const LauncherWatch&) = delete;
  LauncherWatch& operator=(const LauncherWatch&) = delete;

  /// Whether a launcher is watched.
  bool active() const { return thread_.joinable(); }

 private:
  void watch(int launcher_pid);

  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace dbench::runtime
