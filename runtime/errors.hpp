// Errors of the runtime engine; each message names the worker, the peer or the file and what to do.
#pragma once

#include <stdexcept>
#include <string>

#include "core/errors.hpp"

namespace dbench::runtime {

/// A communication library call failed (MPI, NCCL or CUDA); the message names the call and the reason.
class CommError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// A worker stopped answering: it died or hangs. rank() is the lost worker (-1 when it could not be told).
class PeerLostError : public CommError {
 public:
  /// `rank` is the lost worker; the message says how it was noticed.
  PeerLostError(int rank, const std::string& message) : CommError(message), rank_(rank) {}
  /// The lost worker's rank, or -1.
  int rank() const noexcept { return rank_; }

 private:
  int rank_;
};

/// Training produced a NaN or infinite loss: the driver's error, here under the runtime's name too.
using DivergenceError = core::DivergenceError;

/// A checkpoint that cannot be written or read back, or does not fit the run being resumed.
class CheckpointError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// A measurement refused because the machine's speed drifted while it ran: the command exits with status 75
/// (EX_TEMPFAIL: try again later). An empty what(): another process (a worker, a child) has said why.
class Refused : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
  /// The exit status of a refusal.
  static constexpr int kExitStatus = 75;
};

/// Workers could not be launched (no mpirun, a bad worker count).
class LaunchError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// The run is configured for a number of workers other than the number launched; its input is the workers.
class WorkerCountError : public std::invalid_argument, public models::InputFault {
 public:
  /// `configured` workers were asked for and `launched` run.
  WorkerCountError(int configured, int launched)
      : std::invalid_argument(reason_for(configured, launched)),
        InputFault(models::RunInput::workers, reason_for(configured, launched)),
        configured_(configured),
        launched_(launched) {}
  /// The workers the run is configured for.
  int configured() const noexcept { return configured_; }
  /// The workers launched.
  int launched() const noexcept { return launched_; }

 private:
  static std::string reason_for(int configured, int launched) {
    return std::to_string(configured) + " workers are configured but " + std::to_string(launched) +
           " were launched; configure " + std::to_string(launched) + " or launch " +
           std::to_string(configured);
  }

  int configured_;
  int launched_;
};

/// SIGINT, SIGTERM or SIGHUP stopped a launch: what was launched got the signal too and has ended.
class Interrupted : public LaunchError {
 public:
  /// `signal` is the signal that arrived first; the message says what was stopped.
  Interrupted(int signal, const std::string& message) : LaunchError(message), signal_(signal) {}
  /// The signal, for an exit status of 128 + signal.
  int signal() const noexcept { return signal_; }

 private:
  int signal_;
};

}  // namespace dbench::runtime
