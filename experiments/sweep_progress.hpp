// A sweep's progress: counts, elapsed time and ETA, shown as one updating line on a terminal or one line per
// finished run.
#pragma once

#include <cstddef>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "experiments/sweep.hpp"
#include "experiments/sweep_children.hpp"

namespace dbench::experiments {

/// A duration as a user reads it: "42s", "3m07s", "1h05m".
std::string duration_text(double seconds);

/// Counts, elapsed time and ETA, shown as one updating line on a terminal or one line per finished run.
class SweepProgress {
 public:
  /// `total` runs, `done` of them finished earlier; `terminal`: one updating line on stderr.
  SweepProgress(std::size_t total, std::size_t done, bool terminal, bool quiet, int jobs)
      : total_(total),
        done_(done),
        terminal_(terminal),
        quiet_(quiet),
        jobs_(jobs),
        started_(SweepClock::now()) {}

  /// A line above the progress bar (or on its own when not on a terminal).
  void message(std::string_view text);

  /// Counts a run that ended (`failure` empty: done) and reports it with the counts after it.
  void finished(std::span<const SweepRun> runs, std::size_t run, double seconds, const std::string& failure,
                const std::filesystem::path& log, const std::vector<SweepChild>& running, double queued_cost);

  /// Redraws the terminal line with the state of the running and queued runs.
  void update(std::span<const SweepRun> runs, const std::vector<SweepChild>& running, double queued_cost);

  /// Ends the terminal line so that later output starts on its own line.
  void close();

  /// Seconds since the sweep started.
  double elapsed() const;

 private:
  std::string counts() const;

  // Seconds per unit of cost (workers x iterations) measured on the runs done so far, applied to what is
  // left: queued runs spread over the jobs, running ones less what they have already spent.
  double estimate(std::span<const SweepRun> runs, const std::vector<SweepChild>& running,
                  double queued_cost) const;

  std::size_t total_;
  std::size_t done_;
  std::size_t failed_ = 0;
  std::size_t running_ = 0;
  bool terminal_;
  bool quiet_;
  int jobs_;
  SweepClock::time_point started_;
  double measured_seconds_ = 0.0;
  double measured_cost_ = 0.0;
  double eta_ = -1.0;
  bool drawn_ = false;
};

}  // namespace dbench::experiments
