#include "experiments/sweep_children.hpp"

#include <fcntl.h>
#include <fmt/core.h>
#include <pthread.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <system_error>
#include <thread>

#include "experiments/command_line.hpp"
#include "results/atomic_file.hpp"
#include "runtime/launcher.hpp"

namespace dbench::experiments {
namespace {

namespace fs = std::filesystem;

// Starts `args` (a dbench command line) as a fork of this process that runs it directly, its output on
// `log_fd`. A timing-only run then skips the program's start: loading LibTorch's libraries costs about 0.4 s
// of CPU, as much as the whole simulation of a ring at 1008 GPUs, and a zoo sweep has a hundred such runs.
// Forking without exec is sound here because the run needs nothing another thread could hold: the sweep's
// only other thread is OpenBLAS's idle pool (which OpenBLAS shuts down around a fork), a timing-only run
// calls no BLAS and no LibTorch, and it builds its own SimGrid engine, which the sweep never starts.
pid_t fork_run(std::vector<std::string>& args, int log_fd) {
  std::vector<char*> argv;
  for (auto& arg : args) {
    argv.push_back(arg.data());
  }
  argv.push_back(nullptr);
  const std::string launcher = std::to_string(::getpid());
  std::fflush(nullptr);  // nothing buffered here is written twice
  const pid_t pid = ::fork();
  if (pid != 0) {
    return pid;  // the parent, or -1 with errno set
  }
  const int null_fd = ::open("/dev/null", O_RDONLY);
  ::dup2(null_fd, 0);
  ::dup2(log_fd, 1);
  ::dup2(log_fd, 2);
  // As an exec'd run starts: the sweep's pid to watch (LauncherWatch), default dispositions, nothing blocked.
  ::setenv(runtime::kLauncherPidVariable, launcher.c_str(), 1);
  for (const int number : {SIGINT, SIGTERM, SIGHUP, SIGCHLD, SIGPIPE}) {
    ::signal(number, SIG_DFL);
  }
  sigset_t none;
  sigemptyset(&none);
  pthread_sigmask(SIG_SETMASK, &none, nullptr);
  int status = 1;
  try {
    status = run_command_line(static_cast<int>(args.size()), argv.data());
  } catch (...) {
    std::fputs("dbench: error: unexpected exception\n", stderr);
  }
  std::fflush(nullptr);
  ::_exit(status);
}

}  // namespace

BlockedSignals::BlockedSignals() {
  sigemptyset(&set_);
  sigaddset(&set_, SIGINT);
  sigaddset(&set_, SIGTERM);
  sigaddset(&set_, SIGHUP);
  sigaddset(&set_, SIGCHLD);
  pthread_sigmask(SIG_BLOCK, &set_, &previous_);
}

BlockedSignals::~BlockedSignals() {
  pthread_sigmask(SIG_SETMASK, &previous_, nullptr);
}

int BlockedSignals::wait(double seconds) const {
  timespec timeout{};
  timeout.tv_sec = static_cast<time_t>(seconds);
  timeout.tv_nsec = static_cast<long>((seconds - static_cast<double>(timeout.tv_sec)) * 1e9);
  const int signal = sigtimedwait(&set_, nullptr, &timeout);
  return signal < 0 ? 0 : signal;
}

std::string exit_reason(int status) {
  if (WIFEXITED(status)) {
    return WEXITSTATUS(status) == 0 ? std::string() : fmt::format("exit status {}", WEXITSTATUS(status));
  }
  if (WIFSIGNALED(status)) {
    return fmt::format("killed by signal {} ({})", WTERMSIG(status), strsignal(WTERMSIG(status)));
  }
  return "ended abnormally";
}

void append_to_log(const fs::path& log, std::string_view line) {
  const int fd = ::open(log.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd < 0) {
    return;
  }
  const std::string text = std::string(line) + "\n";
  [[maybe_unused]] const auto written = ::write(fd, text.data(), text.size());
  ::close(fd);
}

void SweepChildren::spawn(const SweepRun& run, std::string_view recompute_reason) {
  const fs::path config = out_ / "configs" / (run.id + ".toml");
  results::write_file_atomically(config, to_toml(run.config));
  const fs::path run_dir = out_ / "runs" / run.id;
  const fs::path log = out_ / "logs" / (run.id + ".log");
  const std::string threads = std::to_string(threads_);
  std::vector<std::string> args = {"dbench",         "simulate", config.string(), "--out",
                                   run_dir.string(), "--quiet",  "--threads",     threads};
  if (timing_only_) {
    args.emplace_back("--timing-only");
  }
  std::string command;
  for (const auto& arg : args) {
    command += command.empty() ? "" : " ";
    command += arg;
  }
  const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd < 0) {
    throw std::runtime_error(fmt::format("cannot write '{}': {}", log.string(), std::strerror(errno)));
  }
  std::string header = fmt::format("dbench sweep: {}\n", command);
  if (!recompute_reason.empty()) {
    header += fmt::format("dbench sweep: recomputing: {}\n", recompute_reason);
  }
  [[maybe_unused]] const auto written = ::write(fd, header.data(), header.size());
  if (timing_only_) {
    const pid_t pid = fork_run(args, fd);
    const int error = errno;
    ::close(fd);
    if (pid < 0) {
      throw std::runtime_error(fmt::format("cannot start {}: {}", command, std::strerror(error)));
    }
    running_.push_back({pid, run.index, SweepClock::now()});
    return;
  }

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, fd, 1);
  posix_spawn_file_actions_adddup2(&actions, fd, 2);
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  sigset_t none;
  sigemptyset(&none);
  sigset_t defaults;
  sigemptyset(&defaults);
  sigaddset(&defaults, SIGINT);
  sigaddset(&defaults, SIGTERM);
  sigaddset(&defaults, SIGHUP);
  sigaddset(&defaults, SIGCHLD);
  sigaddset(&defaults, SIGPIPE);
  posix_spawnattr_setsigmask(&attributes, &none);
  posix_spawnattr_setsigdefault(&attributes, &defaults);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);

  std::vector<char*> argv;
  for (auto& arg : args) {
    argv.push_back(arg.data());
  }
  argv.push_back(nullptr);
  // The run learns the sweep's pid and stops by itself if the sweep is killed outright (LauncherWatch).
  std::vector<std::string> environment = runtime::child_environment();
  std::vector<char*> envp;
  for (auto& variable : environment) {
    envp.push_back(variable.data());
  }
  envp.push_back(nullptr);
  pid_t pid = -1;
  const int error = posix_spawn(&pid, "/proc/self/exe", &actions, &attributes, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attributes);
  ::close(fd);
  if (error != 0) {
    throw std::runtime_error(fmt::format("cannot start {}: {}", command, std::strerror(error)));
  }
  running_.push_back({pid, run.index, SweepClock::now()});
}

std::vector<std::pair<SweepChild, int>> SweepChildren::reap() {
  std::vector<std::pair<SweepChild, int>> ended;
  for (auto it = running_.begin(); it != running_.end();) {
    int status = 0;
    if (::waitpid(it->pid, &status, WNOHANG) == it->pid) {
      ended.emplace_back(*it, status);
      it = running_.erase(it);
    } else {
      ++it;
    }
  }
  return ended;
}

std::vector<std::size_t> SweepChildren::stop_all() {
  for (const auto& child : running_) {
    ::kill(child.pid, SIGTERM);
  }
  const auto deadline = SweepClock::now() + std::chrono::seconds(5);
  std::vector<std::size_t> stopped;
  for (const auto& child : running_) {
    int status = 0;
    while (::waitpid(child.pid, &status, WNOHANG) == 0) {
      if (SweepClock::now() > deadline) {
        ::kill(child.pid, SIGKILL);
        ::waitpid(child.pid, &status, 0);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    remove_staging(child.pid);
    stopped.push_back(child.run);
  }
  running_.clear();
  return stopped;
}

// ResultsDir stages a run in runs/.<id>.<role>-<pid>-<8 hex digits>; a killed child cannot remove its own.
void SweepChildren::remove_staging(pid_t pid) const {
  std::error_code ec;
  const std::string tag = fmt::format("-{}-", pid);
  constexpr std::size_t kRandomDigits = 8;
  for (const auto& entry : fs::directory_iterator(out_ / "runs", ec)) {
    const std::string name = entry.path().filename().string();
    const bool staged_by_pid = name.starts_with(".") && name.size() > tag.size() + kRandomDigits &&
                               name.compare(name.size() - kRandomDigits - tag.size(), tag.size(), tag) == 0;
    if (staged_by_pid) {
      fs::remove_all(entry.path(), ec);
    }
  }
}

}  // namespace dbench::experiments
