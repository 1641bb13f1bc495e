// Starting dbench in the background and finding the processes of one job, for tests that signal a running
// command. Everything started here is killed and reaped at scope exit, whatever the test's outcome.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <exception>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace dbench::testing {

/// Processes (not zombies) whose command line contains `token`, this process excluded.
inline std::vector<pid_t> processes_with(const std::string& token) {
  std::vector<pid_t> found;
  std::error_code ec;
  for (std::filesystem::directory_iterator it("/proc", ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) {
      continue;
    }
    std::string line;  // empty for a zombie
    try {
      std::ifstream in(it->path() / "cmdline", std::ios::binary);
      line.assign(std::istreambuf_iterator<char>(in), {});
    } catch (const std::exception&) {
      continue;  // the process ended while its command line was read ("No such process")
    }
    for (char& c : line) {
      c = c == '\0' ? ' ' : c;
    }
    const pid_t pid = std::stoi(name);
    if (pid != ::getpid() && line.find(token) != std::string::npos) {
      found.push_back(pid);
    }
  }
  return found;
}

/// Polls `done` every 50 ms for up to `seconds`; returns whether it became true.
inline bool wait_until(double seconds, const std::function<bool()>& done) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) {
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return true;
}

/// `dbench <arguments>` running in the background, its output in `log`, with the default handling of
/// SIGINT, SIGTERM and SIGHUP (whatever this test process inherited). At scope exit it is killed and reaped,
/// and so is every process whose command line carries `token` (the job's workers).
class BackgroundDbench {
 public:
  BackgroundDbench(const std::vector<std::string>& arguments, const std::filesystem::path& log,
                   std::string token)
      : token_(std::move(token)) {
    std::vector<std::string> args{DBENCH_EXE};
    args.insert(args.end(), arguments.begin(), arguments.end());
    std::vector<char*> argv;
    for (auto& a : args) {
      argv.push_back(a.data());
    }
    argv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&actions, 1, 2);
    posix_spawnattr_t attributes;
    posix_spawnattr_init(&attributes);
    sigset_t defaults;
    sigemptyset(&defaults);
    for (const int s : {SIGINT, SIGTERM, SIGHUP}) {
      sigaddset(&defaults, s);
    }
    sigset_t none;
    sigemptyset(&none);
    posix_spawnattr_setsigdefault(&attributes, &defaults);
    posix_spawnattr_setsigmask(&attributes, &none);
    posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
    const int error = posix_spawn(&pid_, DBENCH_EXE, &actions, &attributes, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attributes);
    if (error != 0) {
      throw std::runtime_error("cannot start " + std::string(DBENCH_EXE));
    }
  }
  BackgroundDbench(const BackgroundDbench&) = delete;
  BackgroundDbench& operator=(const BackgroundDbench&) = delete;
  ~BackgroundDbench() {
    if (!status_) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    for (const pid_t pid : processes_with(token_)) {
      ::kill(pid, SIGKILL);
    }
  }

  pid_t pid() const { return pid_; }

  /// The wait status once it has ended (reaped here), else nothing.
  std::optional<int> status() {
    int status = 0;
    if (!status_ && ::waitpid(pid_, &status, WNOHANG) == pid_) {
      status_ = status;
    }
    return status_;
  }

 private:
  std::string token_;
  pid_t pid_ = -1;
  std::optional<int> status_;
};

/// Entries of `dir` whose names start with `prefix`.
inline std::vector<std::string> entries_starting(const std::filesystem::path& dir,
                                                 const std::string& prefix) {
  std::vector<std::string> found;
  std::error_code ec;
  for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.starts_with(prefix)) {
      found.push_back(name);
    }
  }
  return found;
}

}  // namespace dbench::testing
