// The processes of one sweep: each run a `dbench simulate` started with its output in logs/ (a fork of this
// process for a timing-only run), reaped as it ends, and on an interruption or an error stopped with its
// half-written staging directories removed.
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "experiments/sweep.hpp"

namespace dbench::experiments {

/// The clock of a sweep's progress and of its runs' durations.
using SweepClock = std::chrono::steady_clock;

/// SIGINT, SIGTERM, SIGHUP and SIGCHLD are blocked while children run and taken synchronously with
/// sigtimedwait, so the loop needs no handler and no global flag; the previous mask comes back at scope exit.
class BlockedSignals {
 public:
  /// Blocks the signals in the calling thread.
  BlockedSignals();
  /// Restores the previous signal mask.
  ~BlockedSignals();
  BlockedSignals(const BlockedSignals&) = delete;
  BlockedSignals& operator=(const BlockedSignals&) = delete;

  /// Waits up to `seconds` for one of the signals; returns it, or 0 on timeout.
  int wait(double seconds) const;

 private:
  sigset_t set_{};
  sigset_t previous_{};
};

/// A running `dbench simulate`.
struct SweepChild {
  pid_t pid = -1;
  std::size_t run = 0;  // index into the grid
  SweepClock::time_point started;
};

/// How a finished child ended, in words, or empty when it exited with status 0.
std::string exit_reason(int status);

/// Appends `line` to the run's log, best effort, as a log line is: never through a link (the sweep checked
/// its entries; this holds between).
void append_to_log(const std::filesystem::path& log, std::string_view line);

/// The children of one sweep: spawned with their output in logs/, reaped, and on an interruption or an error
/// stopped (SIGTERM, then SIGKILL) with their half-written staging directories removed.
class SweepChildren {
 public:
  /// `timing_only`: every run is `dbench simulate --timing-only`.
  SweepChildren(const std::filesystem::path& out, unsigned threads, bool timing_only)
      : out_(out), threads_(threads), timing_only_(timing_only) {}
  ~SweepChildren() { stop_all(); }
  SweepChildren(const SweepChildren&) = delete;
  SweepChildren& operator=(const SweepChildren&) = delete;

  /// Starts `run`; `recompute_reason`, when not empty, says in its log why an earlier result is replaced.
  void spawn(const SweepRun& run, std::string_view recompute_reason);
  /// Children that have ended since the last call, with their wait status.
  std::vector<std::pair<SweepChild, int>> reap();
  /// The children still running.
  const std::vector<SweepChild>& running() const { return running_; }
  /// Stops every running child and removes what it left half-written; returns the runs stopped.
  std::vector<std::size_t> stop_all();

 private:
  void remove_staging(pid_t pid) const;

  std::filesystem::path out_;
  unsigned threads_;
  bool timing_only_;
  std::vector<SweepChild> running_;
};

}  // namespace dbench::experiments
