// What a stop signal must not leave behind: a command's half-written staging directories.
#pragma once

#include <filesystem>
#include <mutex>
#include <thread>
#include <vector>

#include "results/results_dir.hpp"
#include "runtime/stop_signals.hpp"

namespace dbench::experiments {

/// While alive, a stop signal (SIGINT, SIGTERM, SIGHUP) first removes the directories registered here, then
/// ends the process as the signal would have. A command that stages results makes one in its main thread
/// and hands it to its ResultsDir (or a report's staging); the work itself runs on undisturbed until the
/// signal ends it.
class SignalCleanup final : public results::StagingCleanup {
 public:
  /// Takes the stop signals (see runtime::StopSignals) and starts the thread that acts on them.
  SignalCleanup();
  /// Gives the signals back; registered directories are left as they are.
  ~SignalCleanup() override;
  SignalCleanup(const SignalCleanup&) = delete;
  SignalCleanup& operator=(const SignalCleanup&) = delete;

  /// Removes `directory` with everything in it when a stop signal arrives.
  void add(const std::filesystem::path& directory) override;
  /// Forgets `directory`.
  void forget(const std::filesystem::path& directory) override;
  /// Hold it while changing a registered directory (writing into it, renaming it): a signal then waits for
  /// the change to finish instead of removing half of it.
  std::unique_lock<std::recursive_mutex> hold() override { return std::unique_lock(mutex_); }

 private:
  void watch();

  runtime::StopSignals signals_;
  int wake_fd_ = -1;
  std::recursive_mutex mutex_;
  std::vector<std::filesystem::path> directories_;
  std::thread thread_;
};

}  // namespace dbench::experiments
