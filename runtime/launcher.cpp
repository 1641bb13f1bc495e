#include "runtime/launcher.hpp"

#include <fcntl.h>
#include <fmt/core.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <thread>

#include "results/results_dir.hpp"
#include "runtime/errors.hpp"
#include "runtime/stop_signals.hpp"

extern char** environ;

namespace dbench::runtime {
namespace {

using Clock = std::chrono::steady_clock;

/// How long a command may take to end after a stop signal was passed on, before it is killed.
constexpr auto kStopGrace = std::chrono::seconds(10);

}  // namespace

std::vector<std::string> child_environment() {
  const std::string prefix = std::string(kLauncherPidVariable) + "=";
  std::vector<std::string> environment;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    if (std::strncmp(*entry, prefix.c_str(), prefix.size()) != 0) {
      environment.emplace_back(*entry);
    }
  }
  environment.push_back(prefix + std::to_string(::getpid()));
  return environment;
}

namespace {

std::vector<char*> pointers(std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (std::string& s : strings) {
    out.push_back(s.data());
  }
  out.push_back(nullptr);
  return out;
}

// The child between fork and exec. Only async-signal-safe calls: another thread of the parent may have held
// any lock (malloc's included) at the fork.
[[noreturn]] void exec_child(char* const* argv, char* const* envp, pid_t parent, int null_fd, int null_out_fd,
                             int error_fd, const sigset_t& mask, const StopSignals& signals) {
  ::setpgid(0, 0);
  ::prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (::getppid() != parent) {
    ::_exit(127);  // the launcher died before the death signal was armed: it would never come
  }
  struct sigaction default_action {};
  default_action.sa_handler = SIG_DFL;
  for (const int s : StopSignals::kSignals) {
    if (signals.handles(s)) {
      ::sigaction(s, &default_action, nullptr);
    }
  }
  ::dup2(null_fd, STDIN_FILENO);  // in a background process group, reading the terminal would stop it
  if (null_out_fd >= 0) {
    ::dup2(null_out_fd, STDOUT_FILENO);
  }
  ::sigprocmask(SIG_SETMASK, &mask, nullptr);
  ::execvpe(argv[0], argv, envp);
  const int error = errno;
  [[maybe_unused]] const auto written = ::write(error_fd, &error, sizeof error);
  ::_exit(127);
}

int reap(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) {
      throw LaunchError(fmt::format("waiting for process {} failed: {}", pid, std::strerror(errno)));
    }
  }
  return status;
}

// Processes whose environment names this one in DBENCH_LAUNCHER_PID: what run_command started, wherever
// it went (mpirun gives each worker a process group of its own; a worker whose mpirun was killed has lost
// its parent). Zombies have no environment left and do not count.
std::vector<pid_t> launched_by_this_process() {
  const std::string entry = fmt::format("{}={}", kLauncherPidVariable, ::getpid());
  std::vector<pid_t> found;
  std::error_code ec;
  for (std::filesystem::directory_iterator it("/proc", ec), end; !ec && it != end; it.increment(ec)) {
    pid_t pid = 0;
    const std::string name = it->path().filename().string();
    const auto [last, error] = std::from_chars(name.data(), name.data() + name.size(), pid);
    if (error != std::errc() || last != name.data() + name.size() || pid == ::getpid()) {
      continue;
    }
    std::ifstream in(it->path() / "environ", std::ios::binary);
    for (std::string variable; std::getline(in, variable, '\0');) {
      if (variable == entry) {
        found.push_back(pid);
        break;
      }
    }
  }
  return found;
}

// Waits until no process that run_command started is running, or `deadline`; returns those still running.
std::vector<pid_t> wait_for_launched(Clock::time_point deadline) {
  std::vector<pid_t> left = launched_by_this_process();
  while (!left.empty() && Clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    left = launched_by_this_process();
  }
  return left;
}

// Stops what the command left running when it ended: SIGTERM (a worker removes what it staged), then
// SIGKILL for what has not ended when the grace period is over, and waits for those to end too, so that
// the caller can remove what they staged.
void stop_leftovers() {
  for (const pid_t pid : launched_by_this_process()) {
    ::kill(pid, SIGTERM);
  }
  const std::vector<pid_t> left = wait_for_launched(Clock::now() + kStopGrace);
  for (const pid_t pid : left) {
    ::kill(pid, SIGKILL);
  }
  if (!left.empty()) {
    wait_for_launched(Clock::now() + kStopGrace);
  }
}

}  // namespace

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
                                              const std::vector<std::string>& args, bool quiet) {
  check_local_workers(workers);
  const char* launcher = std::getenv("DBENCH_MPIRUN");
  std::vector<std::string> command{launcher != nullptr && *launcher != '\0' ? launcher : "mpirun"};
  if (geteuid() == 0) {
    command.emplace_back("--allow-run-as-root");
  }
  if (quiet) {
    command.emplace_back("--quiet");
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

int run_command(const std::vector<std::string>& command, Output output) {
  if (command.empty()) {
    throw LaunchError("run_command: empty command line");
  }
  std::vector<std::string> arguments = command;
  std::vector<std::string> environment = child_environment();
  const std::vector<char*> argv = pointers(arguments);
  const std::vector<char*> envp = pointers(environment);
  StopSignals signals;  // from here on a stop signal is passed on, not fatal

  const int null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  const int null_out_fd = output == Output::stdout_discarded ? ::open("/dev/null", O_WRONLY | O_CLOEXEC) : -1;
  int error_pipe[2];
  if (null_fd < 0 || (output == Output::stdout_discarded && null_out_fd < 0) ||
      ::pipe2(error_pipe, O_CLOEXEC) != 0) {
    const int error = errno;
    for (const int fd : {null_fd, null_out_fd}) {
      if (fd >= 0) {
        ::close(fd);
      }
    }
    throw LaunchError(fmt::format("cannot start '{}': {}", command.front(), std::strerror(error)));
  }
  // No signal handler may run in the child before it has reset the handlers.
  sigset_t all;
  sigset_t previous;
  sigfillset(&all);
  ::pthread_sigmask(SIG_SETMASK, &all, &previous);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid == 0) {
    exec_child(argv.data(), envp.data(), parent, null_fd, null_out_fd, error_pipe[1], previous, signals);
  }
  const int fork_error = errno;
  ::pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  ::close(null_fd);
  if (null_out_fd >= 0) {
    ::close(null_out_fd);
  }
  ::close(error_pipe[1]);
  if (pid < 0) {
    ::close(error_pipe[0]);
    throw LaunchError(fmt::format("cannot start '{}': {}", command.front(), std::strerror(fork_error)));
  }
  ::setpgid(pid, pid);  // as the child does itself, so that a signal passed on at once reaches its group

  // The pipe closes on a successful exec, or brings exec's errno.
  int exec_error = 0;
  ssize_t got = 0;
  while ((got = ::read(error_pipe[0], &exec_error, sizeof exec_error)) < 0 && errno == EINTR) {
  }
  ::close(error_pipe[0]);
  if (got == static_cast<ssize_t>(sizeof exec_error)) {
    reap(pid);
    throw LaunchError(fmt::format("cannot start '{}': {} (install openmpi-bin or set DBENCH_MPIRUN)",
                                  command.front(), std::strerror(exec_error)));
  }

  int stopped_by = 0;
  std::optional<Clock::time_point> kill_at;
  for (;;) {
    siginfo_t info{};
    // WNOWAIT leaves it a zombie: its pid, the id of its process group, cannot be reused until reaped.
    if (::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) != 0 && errno != EINTR) {
      throw LaunchError(fmt::format("waiting for '{}' failed: {}", command.front(), std::strerror(errno)));
    }
    if (info.si_pid == pid) {
      break;
    }
    pollfd ready{signals.fd(), POLLIN, 0};
    ::poll(&ready, 1, 100);
    for (int s = signals.take(); s != 0; s = signals.take()) {
      stopped_by = stopped_by != 0 ? stopped_by : s;
      ::kill(-pid, s);
      kill_at = kill_at.value_or(Clock::now() + kStopGrace);
    }
    if (kill_at && Clock::now() >= *kill_at) {
      ::kill(-pid, SIGKILL);
    }
  }
  ::kill(-pid, SIGTERM);  // whatever the command left behind in its group
  stop_leftovers();
  ::kill(-pid, SIGKILL);
  const int status = reap(pid);
  if (stopped_by != 0) {
    throw Interrupted(stopped_by, fmt::format("stopped by {}: passed it on to '{}', which has ended",
                                              signal_name(stopped_by), command.front()));
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

LauncherWatch::LauncherWatch() {
  const char* value = std::getenv(kLauncherPidVariable);
  if (value == nullptr) {
    return;
  }
  int pid = 0;
  const char* end = value + std::strlen(value);
  const auto [last, error] = std::from_chars(value, end, pid);
  if (error != std::errc() || last != end || pid <= 1) {
    return;  // not one that run_command wrote
  }
  thread_ = std::thread([this, pid] { watch(pid); });
}

LauncherWatch::~LauncherWatch() {
  if (thread_.joinable()) {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    thread_.join();
  }
}

void LauncherWatch::watch(int launcher_pid) {
  using namespace std::chrono_literals;
  std::unique_lock lock(mutex_);
  const auto stopping = [this] { return stopping_; };
  while (!wake_.wait_for(lock, 250ms, stopping)) {
    if (results::process_ended(launcher_pid)) {
      fmt::print(stderr, "dbench: the launcher (pid {}) is gone; worker {} stops\n", launcher_pid,
                 ::getpid());
      ::kill(::getpid(), SIGTERM);
      // SIGTERM ends the process (after removing what it staged); should it not, nothing else would.
      if (!wake_.wait_for(lock, 10s, stopping)) {
        ::kill(::getpid(), SIGKILL);
      }
      return;
    }
  }
}

}  // namespace dbench::runtime
