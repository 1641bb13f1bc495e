// SIGINT, SIGTERM and SIGHUP as events that a loop can wait for, instead of an instant death.
#pragma once

#include <signal.h>

#include <array>
#include <string>

namespace dbench::runtime {

/// While alive, SIGINT, SIGTERM and SIGHUP no longer end the process: each one that arrives is queued and
/// readable from fd(). A signal that was ignored when this was made (nohup, a background job) stays ignored.
/// Dispositions are process-wide, so scopes nest: the innermost one alive receives the signals, and the
/// previous handling comes back when it ends.
class StopSignals {
 public:
  /// The signals taken.
  static constexpr std::array<int, 3> kSignals{SIGINT, SIGTERM, SIGHUP};

  /// Installs the handlers; throws std::system_error when it cannot.
  StopSignals();
  /// Restores the handling that was in place before.
  ~StopSignals();
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

  /// Readable (poll) when a signal is queued.
  int fd() const { return read_fd_; }
  /// The next queued signal, or 0 when none is.
  int take();
  /// Whether `signal` is handled here (false for one that was ignored and stays so).
  bool handles(int signal) const;

 private:
  int read_fd_ = -1;
  int write_fd_ = -1;
  int previous_fd_ = -1;
  std::array<struct sigaction, kSignals.size()> previous_{};
  std::array<bool, kSignals.size()> installed_{};
};

/// Ends the process as `signal` would have with its default action (the parent sees "killed by signal").
[[noreturn]] void end_process_by(int signal);

/// "SIGTERM" for SIGTERM, and so on.
std::string signal_name(int signal);

}  // namespace dbench::runtime
