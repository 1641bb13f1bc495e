// `dbench sweep SWEEP.toml`: every run of a grid as its own `dbench simulate` process (a crash stays in its
// run, and SimGrid is one per process), J at a time, resumable, then summary.csv and the report. A
// timing-only sweep's runs are this process forked rather than the program started again (see fork_run).
#include <fcntl.h>
#include <fmt/core.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "core/parallel.hpp"
#include "experiments/command_line.hpp"
#include "experiments/commands.hpp"
#include "experiments/sweep.hpp"
#include "report/report.hpp"
#include "results/atomic_file.hpp"
#include "results/results_dir.hpp"
#include "results/sweep_lock.hpp"
#include "runtime/launcher.hpp"
#include "runtime/stop_signals.hpp"

extern char** environ;

namespace dbench::experiments {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

struct SweepOptions {
  std::string sweep;
  std::string out;
  int jobs = 1;
  std::string shard;
  unsigned threads = 0;
  bool no_report = false;
  bool dry_run = false;
  bool quiet = false;
};

std::string duration_text(double seconds) {
  const auto total = static_cast<long long>(std::max(0.0, seconds) + 0.5);
  if (total >= 3600) {
    return fmt::format("{}h{:02}m", total / 3600, total % 3600 / 60);
  }
  if (total >= 60) {
    return fmt::format("{}m{:02}s", total / 60, total % 60);
  }
  return fmt::format("{}s", total);
}

// SIGINT, SIGTERM, SIGHUP and SIGCHLD are blocked while children run and taken synchronously with
// sigtimedwait, so the loop needs no handler and no global flag; the previous mask comes back at scope exit.
class BlockedSignals {
 public:
  BlockedSignals() {
    sigemptyset(&set_);
    sigaddset(&set_, SIGINT);
    sigaddset(&set_, SIGTERM);
    sigaddset(&set_, SIGHUP);
    sigaddset(&set_, SIGCHLD);
    pthread_sigmask(SIG_BLOCK, &set_, &previous_);
  }
  ~BlockedSignals() { pthread_sigmask(SIG_SETMASK, &previous_, nullptr); }
  BlockedSignals(const BlockedSignals&) = delete;
  BlockedSignals& operator=(const BlockedSignals&) = delete;

  /// Waits up to `seconds` for one of the signals; returns it, or 0 on timeout.
  int wait(double seconds) const {
    timespec timeout{};
    timeout.tv_sec = static_cast<time_t>(seconds);
    timeout.tv_nsec = static_cast<long>((seconds - static_cast<double>(timeout.tv_sec)) * 1e9);
    const int signal = sigtimedwait(&set_, nullptr, &timeout);
    return signal < 0 ? 0 : signal;
  }

 private:
  sigset_t set_{};
  sigset_t previous_{};
};

// A running `dbench simulate`.
struct Child {
  pid_t pid = -1;
  std::size_t run = 0;  // index into the grid
  Clock::time_point started;
};

// How a finished child ended, in words, or empty when it exited with status 0.
std::string exit_reason(int status) {
  if (WIFEXITED(status)) {
    return WEXITSTATUS(status) == 0 ? std::string() : fmt::format("exit status {}", WEXITSTATUS(status));
  }
  if (WIFSIGNALED(status)) {
    return fmt::format("killed by signal {} ({})", WTERMSIG(status), strsignal(WTERMSIG(status)));
  }
  return "ended abnormally";
}

// Best effort, as a log line is: never through a link (the sweep checked its entries; this holds between).
void append_to_log(const fs::path& log, std::string_view line) {
  const int fd = ::open(log.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd < 0) {
    return;
  }
  const std::string text = std::string(line) + "\n";
  [[maybe_unused]] const auto written = ::write(fd, text.data(), text.size());
  ::close(fd);
}

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

// The children of one sweep: spawned with their output in logs/, reaped, and on an interruption or an error
// stopped (SIGTERM, then SIGKILL) with their half-written staging directories removed.
class Children {
 public:
  /// `timing_only`: every run is `dbench simulate --timing-only`.
  Children(const fs::path& out, unsigned threads, bool timing_only)
      : out_(out), threads_(threads), timing_only_(timing_only) {}
  ~Children() { stop_all(); }
  Children(const Children&) = delete;
  Children& operator=(const Children&) = delete;

  /// Starts `run`; `recompute_reason`, when not empty, says in its log why an earlier result is replaced.
  void spawn(const SweepRun& run, std::string_view recompute_reason) {
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
      running_.push_back({pid, run.index, Clock::now()});
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
    running_.push_back({pid, run.index, Clock::now()});
  }

  /// Children that have ended since the last call, with their wait status.
  std::vector<std::pair<Child, int>> reap() {
    std::vector<std::pair<Child, int>> ended;
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

  const std::vector<Child>& running() const { return running_; }

  /// Stops every running child and removes what it left half-written; returns the runs stopped.
  std::vector<std::size_t> stop_all() {
    for (const auto& child : running_) {
      ::kill(child.pid, SIGTERM);
    }
    const auto deadline = Clock::now() + std::chrono::seconds(5);
    std::vector<std::size_t> stopped;
    for (const auto& child : running_) {
      int status = 0;
      while (::waitpid(child.pid, &status, WNOHANG) == 0) {
        if (Clock::now() > deadline) {
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

 private:
  // ResultsDir stages a run in runs/.<id>.<role>-<pid>-<8 hex digits>; a killed child cannot remove its own.
  void remove_staging(pid_t pid) const {
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

  fs::path out_;
  unsigned threads_;
  bool timing_only_;
  std::vector<Child> running_;
};

// Counts, elapsed time and ETA, shown as one updating line on a terminal or one line per finished run.
class Progress {
 public:
  Progress(std::size_t total, std::size_t done, bool terminal, bool quiet, int jobs)
      : total_(total), done_(done), terminal_(terminal), quiet_(quiet), jobs_(jobs), started_(Clock::now()) {}

  /// A line above the progress bar (or on its own when not on a terminal).
  void message(std::string_view text) {
    if (quiet_) {
      return;
    }
    fmt::print(stderr, "{}{}\n", terminal_ ? "\r\x1b[K" : "", text);
    drawn_ = false;
  }

  /// Counts a run that ended (`failure` empty: done) and reports it with the counts after it.
  void finished(std::span<const SweepRun> runs, std::size_t run, double seconds, const std::string& failure,
                const fs::path& log, const std::vector<Child>& running, double queued_cost) {
    if (failure.empty()) {
      ++done_;
      measured_seconds_ += seconds;
      measured_cost_ += runs[run].cost();
    } else {
      ++failed_;
    }
    running_ = running.size();
    eta_ = estimate(runs, running, queued_cost);
    if (!failure.empty()) {
      message(fmt::format("failed {} ({}) after {}, log: {}; {}", runs[run].id, failure,
                          duration_text(seconds), log.string(), counts()));
    } else if (!terminal_) {
      message(fmt::format("done {} in {}; {}", runs[run].id, duration_text(seconds), counts()));
    }
  }

  /// Redraws the terminal line with the state of the running and queued runs.
  void update(std::span<const SweepRun> runs, const std::vector<Child>& running, double queued_cost) {
    running_ = running.size();
    eta_ = estimate(runs, running, queued_cost);
    if (quiet_ || !terminal_) {
      return;
    }
    constexpr int kWidth = 24;
    const double fraction =
        total_ == 0 ? 1.0 : static_cast<double>(done_ + failed_) / static_cast<double>(total_);
    const int filled = static_cast<int>(fraction * kWidth);
    fmt::print(stderr, "\r\x1b[K[{}{}] {}", std::string(filled, '#'), std::string(kWidth - filled, '-'),
               counts());
    std::fflush(stderr);
    drawn_ = true;
  }

  /// Ends the terminal line so that later output starts on its own line.
  void close() {
    if (drawn_ && !quiet_) {
      fmt::print(stderr, "\n");
      drawn_ = false;
    }
  }

  double elapsed() const { return std::chrono::duration<double>(Clock::now() - started_).count(); }

 private:
  std::string counts() const {
    return fmt::format("{}/{} done, {} running, {} failed, elapsed {}, ETA {}", done_, total_, running_,
                       failed_, duration_text(elapsed()), eta_ < 0 ? std::string("?") : duration_text(eta_));
  }

  // Seconds per unit of cost (workers x iterations) measured on the runs done so far, applied to what is
  // left: queued runs spread over the jobs, running ones less what they have already spent.
  double estimate(std::span<const SweepRun> runs, const std::vector<Child>& running,
                  double queued_cost) const {
    if (measured_cost_ <= 0.0) {
      return -1.0;
    }
    const double per_unit = measured_seconds_ / measured_cost_;
    const auto now = Clock::now();
    double running_left = 0.0;
    double longest_left = 0.0;
    for (const auto& child : running) {
      const double spent = std::chrono::duration<double>(now - child.started).count();
      const double left = std::max(0.0, runs[child.run].cost() * per_unit - spent);
      running_left += left;
      longest_left = std::max(longest_left, left);
    }
    if (queued_cost <= 0.0) {
      return longest_left;
    }
    return (running_left + queued_cost * per_unit) / jobs_;
  }

  std::size_t total_;
  std::size_t done_;
  std::size_t failed_ = 0;
  std::size_t running_ = 0;
  bool terminal_;
  bool quiet_;
  int jobs_;
  Clock::time_point started_;
  double measured_seconds_ = 0.0;
  double measured_cost_ = 0.0;
  double eta_ = -1.0;
  bool drawn_ = false;
};

// overrides[0] names the run after its id, then come [set]'s, then the axes'.
std::string overrides_text(const SweepRun& run, std::size_t first, std::size_t last) {
  std::string text;
  for (std::size_t i = first; i < std::min(last, run.overrides.size()); ++i) {
    text += text.empty() ? "" : " ";
    text += run.overrides[i];
  }
  return text;
}

// `out` may take the sweep: a new or empty folder, or a sweep folder (its marker), whose own entries are
// neither links nor of the wrong kind (see results::check_sweep_folder). Throws naming --out.
void check_sweep_out(const fs::path& out, std::span<const SweepRun> runs) {
  std::vector<fs::path> directories{"runs", "logs", "configs", "plots"};
  std::vector<fs::path> files{"summary.csv", "sweep.toml", "report.md", "report.html",
                              results::kSweepLockName};
  for (const auto& run : runs) {
    directories.push_back(fs::path("runs") / run.id);
    files.push_back(fs::path("logs") / (run.id + ".log"));
    files.push_back(fs::path("configs") / (run.id + ".toml"));
  }
  try {
    results::check_sweep_folder(out, directories, files);
  } catch (const results::ResultsDirError& e) {
    throw std::runtime_error(fmt::format("--out: {}", e.what()));
  }
}

void run_sweep(const SweepOptions& options) {
  // Everything is checked before anything is written: the shard, the sweep, every run's config.
  const Shard shard = options.shard.empty() ? Shard{} : parse_shard(options.shard);
  const SweepConfig sweep = load_sweep_file(options.sweep);
  const std::vector<SweepRun> runs = expand_sweep(sweep);
  const fs::path out = options.out.empty() ? fs::path("results") / sweep.name : fs::path(options.out);
  check_sweep_out(out, runs);

  std::vector<std::size_t> selected;
  for (const auto& run : runs) {
    if (shard.contains(run.index)) {
      selected.push_back(run.index);
    }
  }
  const std::string shard_text =
      shard.count > 1 ? fmt::format(" (shard {}/{}: {} runs)", shard.index_1, shard.count, selected.size())
                      : "";

  const std::string timing_text = sweep.timing_only ? " (timing only)" : "";

  if (options.dry_run) {
    fmt::print("sweep {}: {} runs{}{}, base {}; out {}\n", sweep.name, runs.size(), timing_text, shard_text,
               sweep.base.empty() ? std::string("<defaults>") : sweep.base.string(), out.string());
    const std::size_t axes_from = 1 + sweep.set.size();
    if (!sweep.set.empty()) {
      fmt::print("every run: {}\n", overrides_text(runs.front(), 1, axes_from));
    }
    std::size_t width = 0;
    for (const std::size_t r : selected) {
      width = std::max(width, runs[r].id.size());
    }
    for (const std::size_t r : selected) {
      const RunCheck check = check_run(out / "runs" / runs[r].id, runs[r].config, sweep.timing_only);
      fmt::print("{:<{}}  {}{}\n", runs[r].id, width,
                 overrides_text(runs[r], axes_from, runs[r].overrides.size()),
                 check.finished         ? "  (finished)"
                 : check.reason.empty() ? ""
                                        : fmt::format("  (to recompute: {})", check.reason));
    }
    return;
  }

  // Held until the sweep ends: a second sweep into the folder would run every run again beside this one.
  std::optional<results::SweepLock> lock;
  try {
    results::claim_sweep_folder(out);
    lock.emplace(out, shard.index_1, shard.count);
  } catch (const results::ResultsDirError& e) {
    throw std::runtime_error(fmt::format("--out: {}", e.what()));
  }
  std::error_code ec;
  for (const char* sub : {"runs", "logs", "configs"}) {
    fs::create_directories(out / sub, ec);
    if (ec) {
      throw std::runtime_error(
          fmt::format("--out {}: cannot create '{}': {}", out.string(), (out / sub).string(), ec.message()));
    }
  }
  const int jobs = std::max(1, options.jobs);
  const unsigned cores = core::available_cpus();
  const unsigned threads =
      options.threads > 0 ? options.threads : std::max(1U, cores / static_cast<unsigned>(jobs));
  const bool terminal = ::isatty(STDERR_FILENO) != 0;

  std::vector<std::size_t> queue;
  std::vector<std::string> recompute_reasons(runs.size());
  std::size_t finished_before = 0;
  GraphStatsCache cache;
  // Summaries of the runs finished before, read once here and reused for summary.csv at the end.
  std::vector<std::optional<RunSummary>> earlier(runs.size());
  for (const std::size_t r : selected) {
    RunCheck check = check_run(out / "runs" / runs[r].id, runs[r].config, sweep.timing_only);
    if (check.finished) {
      // A finished run whose files summary.csv is made from cannot be read (a damaged metrics.csv) is run
      // again, rather than failing every rerun of the sweep at its end.
      try {
        earlier[r] = summarize_run(out / "runs" / runs[r].id, sweep.target_accuracy, cache);
      } catch (const std::exception& e) {
        check = {false, fmt::format("its files cannot be summarized: {}", e.what())};
      }
    }
    if (check.finished) {
      ++finished_before;
      append_to_log(out / "logs" / (runs[r].id + ".log"),
                    "dbench sweep: skipped, finished earlier (summary.json and the same config.toml)");
      if (!options.quiet && !terminal) {
        fmt::print(stderr, "skipped {} (finished earlier)\n", runs[r].id);
      }
    } else {
      // A directory that is there but not a finished run of this config (damaged, incomplete or from another
      // config) is run again, and the user is told which and why.
      if (!check.reason.empty() && !options.quiet) {
        fmt::print(stderr, "recomputing {}: {}\n", runs[r].id, check.reason);
      }
      recompute_reasons[r] = check.reason;
      queue.push_back(r);
    }
  }
  // Longest first: the big runs start early instead of leaving one job alone at the end.
  std::stable_sort(queue.begin(), queue.end(),
                   [&runs](std::size_t a, std::size_t b) { return runs[a].cost() > runs[b].cost(); });
  if (!options.quiet) {
    fmt::print(stderr,
               "sweep {}: {} runs{}{}, {} finished earlier, {} to run; -j {}, {} thread{} each; out {}\n",
               sweep.name, runs.size(), timing_text, shard_text, finished_before, queue.size(), jobs, threads,
               threads == 1 ? "" : "s", out.string());
  }

  std::vector<std::string> failures(runs.size());
  {
    Progress progress(selected.size(), finished_before, terminal, options.quiet, jobs);
    const BlockedSignals signals;
    Children children(out, threads, sweep.timing_only);
    std::size_t next = 0;
    double queued_cost = 0.0;
    for (const std::size_t r : queue) {
      queued_cost += runs[r].cost();
    }
    while (next < queue.size() || !children.running().empty()) {
      while (next < queue.size() && children.running().size() < static_cast<std::size_t>(jobs)) {
        children.spawn(runs[queue[next]], recompute_reasons[queue[next]]);
        queued_cost -= runs[queue[next]].cost();
        ++next;
      }
      progress.update(runs, children.running(), queued_cost);
      const int signal = signals.wait(terminal ? 0.5 : 2.0);
      if (signal == SIGINT || signal == SIGTERM || signal == SIGHUP) {
        const auto stopped = children.stop_all();
        progress.close();
        const std::string name = runtime::signal_name(signal);
        for (const std::size_t r : stopped) {
          append_to_log(out / "logs" / (runs[r].id + ".log"),
                        fmt::format("dbench sweep: stopped ({})", name));
        }
        throw std::runtime_error(fmt::format(
            "interrupted by {}: stopped {} running run{}; finished runs are kept, the same command resumes",
            name, stopped.size(), stopped.size() == 1 ? "" : "s"));
      }
      for (const auto& [child, status] : children.reap()) {
        const SweepRun& run = runs[child.run];
        const double seconds = std::chrono::duration<double>(Clock::now() - child.started).count();
        std::string failure = exit_reason(status);
        if (failure.empty()) {
          if (const RunCheck check = check_run(out / "runs" / run.id, run.config, sweep.timing_only);
              !check.finished) {
            failure = fmt::format("exited without a finished results directory: {}",
                                  check.reason.empty() ? "none was written" : check.reason);
          }
        }
        const fs::path log = out / "logs" / (run.id + ".log");
        if (!failure.empty()) {
          append_to_log(log, fmt::format("dbench sweep: failed ({})", failure));
        }
        failures[child.run] = failure;
        progress.finished(runs, child.run, seconds, failure, log, children.running(), queued_cost);
      }
    }
    progress.update(runs, children.running(), 0.0);
    progress.close();
  }

  // summary.csv lists every run of the grid, whichever shard ran it.
  std::vector<RunSummary> summaries;
  std::vector<RunStatus> statuses;
  std::vector<std::string> failed;
  std::size_t done = 0;
  for (const auto& run : runs) {
    const fs::path run_dir = out / "runs" / run.id;
    if (earlier[run.index]) {
      summaries.push_back(std::move(*earlier[run.index]));
      statuses.push_back(RunStatus::done);
      ++done;
      continue;
    }
    if (run_finished(run_dir, run.config, sweep.timing_only)) {
      try {
        summaries.push_back(summarize_run(run_dir, sweep.target_accuracy, cache));
        statuses.push_back(RunStatus::done);
        ++done;
        continue;
      } catch (const std::exception& e) {
        failures[run.index] = e.what();
      }
    }
    summaries.push_back(pending_summary(run.config));
    statuses.push_back(failures[run.index].empty() ? RunStatus::pending : RunStatus::failed);
    if (!failures[run.index].empty()) {
      failed.push_back(run.id);
      fmt::print(stderr, "failed: {}: {} (log: {})\n", run.id, failures[run.index],
                 (out / "logs" / (run.id + ".log")).string());
    }
  }
  results::write_file_atomically(out / "summary.csv", summary_csv(sweep, runs, summaries, statuses));
  results::write_file_atomically(out / "sweep.toml", sweep.text);
  const std::size_t pending = runs.size() - done - failed.size();
  fmt::print("summary: {} ({} done, {} failed, {} pending)\n", (out / "summary.csv").string(), done,
             failed.size(), pending);
  // The report of a sharded sweep is the merge's: shards that end together would otherwise both write it,
  // and one that ends first would show the others' runs as pending.
  if (shard.count > 1) {
    const std::string merge = fmt::format("dbench sweep {} --out {}", options.sweep, out.string());
    if (pending > 0) {
      fmt::print(
          "shard {}/{}: {} of the grid's runs are not finished here yet; once every shard has ended, "
          "merge them into summary.csv and the report with: {}\n",
          shard.index_1, shard.count, pending, merge);
    } else {
      fmt::print("shard {}/{}: every run of the grid is finished; write the report with: {}\n", shard.index_1,
                 shard.count, merge);
    }
  }
  std::fflush(stdout);

  if (!options.no_report && shard.count == 1) {
    try {
      const report::ReportResult written = report::write_report(out);
      for (const auto& left_out : written.left_out) {
        fmt::print(stderr, "report: left out {}: {}\n", left_out.what, left_out.reason);
      }
      fmt::print("report: {}\n", written.html.string());
    } catch (const std::exception& e) {
      std::fflush(stdout);
      fmt::print(stderr, "warning: no report: {}\n", e.what());
    }
  }
  if (!failed.empty()) {
    std::string list;
    for (const auto& id : failed) {
      list += list.empty() ? "" : ", ";
      list += id;
    }
    std::fflush(stdout);
    throw std::runtime_error(fmt::format("{} of {} runs failed: {} (logs in {})", failed.size(), runs.size(),
                                         list, (out / "logs").string()));
  }
}

}  // namespace

void add_sweep_command(CLI::App& app) {
  auto options = std::make_shared<SweepOptions>();
  auto* cmd = app.add_subcommand(
      "sweep", "Run a grid of simulations (in parallel, resumable), then write summary.csv and the report");
  cmd->add_option("sweep", options->sweep, "Sweep config (TOML): base config, [set] overrides and the [grid]")
      ->required();
  cmd->add_option("--out", options->out, "Sweep directory (default: results/<name>)")
      ->check(non_empty_path());
  cmd->add_option("-j,--jobs", options->jobs, "Runs at once")
      ->check(number_in(1, 1024))
      ->capture_default_str();
  cmd->add_option("--shard", options->shard,
                  "i/N: run only the grid runs with index % N == i-1 (e.g. one job-array task each)");
  cmd->add_option("--threads", options->threads, "Compute threads per run (0: cores / jobs)")
      ->capture_default_str();
  cmd->add_flag("--no-report", options->no_report, "Write summary.csv but no report");
  cmd->add_flag("--dry-run", options->dry_run, "Print the runs (id and overrides) and exit");
  cmd->add_flag("--quiet,-q", options->quiet, "No progress output");
  cmd->callback([options] { run_sweep(*options); });
}

}  // namespace dbench::experiments
