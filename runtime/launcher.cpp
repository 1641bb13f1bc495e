#include "runtime/launcher.hpp"

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "runtime/errors.hpp"

extern char** environ;

namespace dbench::runtime {

void check_local_workers(int workers) {
  if (workers < 1) {
    throw LaunchError("--local: needs at least 1 worker, got " + std::to_string(workers));
  }
#if !defined(DBENCH_RUNTIME_HAVE_MPI)
  // Workers started by mpirun would each run alone: without MPI they cannot reach each other.
  if (workers > 1) {
    throw LaunchError("--local " + std::to_string(workers) +
                      ": this dbench was built without MPI, so its workers cannot reach each other; rebuild "
                      "with MPI (libopenmpi-dev, openmpi-bin) or run a single worker");
  }
#endif
}

std::vector<std::string> local_launch_command(int workers, const std::string& program,
                                              const std::vector<std::string>& args) {
  check_local_workers(workers);
  const char* launcher = std::getenv("DBENCH_MPIRUN");
  std::vector<std::string> command{launcher != nullptr && *launcher != '\0' ? launcher : "mpirun"};
  if (geteuid() == 0) {
    command.emplace_back("--allow-run-as-root");
  }
  // Workers may outnumber cores (a laptop). Each is pinned to a core, dealt round-robin (map by core), so
  // that the cores carry equal shares and a worker keeps its core's caches: unpinned, the scheduler moves
  // workers between cores and the same run's seconds per iteration vary by a fifth from one run to the next.
  for (const char* flag :
       {"--oversubscribe", "--bind-to", "core:overload-allowed", "--map-by", "core", "-n"}) {
    command.emplace_back(flag);
  }
  command.push_back(std::to_string(workers));
  command.push_back(program);
  command.insert(command.end(), args.begin(), args.end());
  return command;
}

int run_command(const std::vector<std::string>& command) {
  if (command.empty()) {
    throw LaunchError("run_command: empty command line");
  }
  std::vector<char*> argv;
  for (const std::string& a : command) {
    argv.push_back(const_cast<char*>(a.c_str()));
  }
  argv.push_back(nullptr);
  pid_t pid = 0;
  const int rc = posix_spawnp(&pid, argv[0], nullptr, nullptr, argv.data(), environ);
  if (rc != 0) {
    throw LaunchError("cannot start '" + command.front() + "': " + std::strerror(rc) +
                      " (install openmpi-bin or set DBENCH_MPIRUN)");
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) {
      throw LaunchError("waiting for '" + command.front() + "' failed: " + std::strerror(errno));
    }
  }
  if (WIFSIGNALED(status)) {
    return 128 + WTERMSIG(status);
  }
  return WEXITSTATUS(status);
}

std::string current_executable() {
  std::error_code ec;
  const auto path = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) {
    throw LaunchError("cannot find the running executable (/proc/self/exe): " + ec.message());
  }
  return path.string();
}

}  // namespace dbench::runtime
