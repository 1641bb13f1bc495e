// Load that calibrate and validate notice: a reference kernel timed on every worker at once before and after
// each measurement, and a watch that re-measures what ran while the machine's speed drifted, a bounded number
// of times, and then refuses rather than keep measurements that timed the neighbours.
#pragma once

#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "runtime/communicator.hpp"

namespace dbench::validation {

/// Seconds per call of a fixed piece of arithmetic (passes over a buffer that fits a core's caches) that
/// every worker of `comm` runs at once, each round timed from a barrier to the next (the median of 9 rounds
/// of about 100 ms). Workers sharing a core, or a core taken by another process, make it slower. Every
/// worker must call it; all get the same value.
double reference_kernel_seconds(runtime::Communicator& comm);

/// The machine's speed changed beyond the tolerance during a measurement and did not settle: what() is the
/// one line that says so.
class DriftError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// One reading of the reference kernel: after which measurement, and its seconds per call.
struct SpeedReading {
  std::string after;  ///< "start", or the measurement it followed
  double seconds = 0.0;
};

/// How a SpeedWatch reads the machine and speaks.
struct SpeedWatchOptions {
  std::string command;      ///< "calibrate", "validate": the first word of its lines
  double tolerance = 0.15;  ///< largest |reading / first reading - 1| that counts as the same machine
  int retries = 2;          ///< re-measurements of a phase before refusing
  /// When start's `baseline` was read, as its lines say it: "the machine runs +20 % (slower) against WHEN".
  std::string baseline_when = "when it was calibrated";
  /// What start's refusal asks of the user.
  std::string baseline_remedy = "calibrate again on the machine as it is now";
};

/// Watches the machine's speed across a series of measurements. `read` takes one reading (on workers: the
/// same value on every one, reference_kernel_seconds), `say` prints a line (on rank 0 only, or nowhere).
class SpeedWatch {
 public:
  SpeedWatch(std::function<double()> read, std::function<void(const std::string&)> say,
             SpeedWatchOptions options);

  /// Takes the first reading (the median of three), which every later one is compared with. `baseline` > 0:
  /// compare with that instead (a calibration's own first reading, for validate), after checking this one
  /// against it: a reading beyond the tolerance is taken again, at most `retries` times, then DriftError.
  void start(double baseline = 0.0);
  /// Runs `measure`, then reads the machine; where the reading is off the first by more than the tolerance,
  /// says so in one line and runs `measure` again, at most `retries` times, then throws DriftError naming the
  /// drift. `measure` must replace, not add to, what an earlier attempt measured.
  void phase(const std::string& name, const std::function<void()>& measure);

  double baseline() const { return baseline_; }
  /// The median of every reading taken: the machine's speed over the whole series, what a later series
  /// (validate's, after a calibration) compares its first reading with.
  double settled() const;
  const std::vector<SpeedReading>& readings() const { return readings_; }
  /// Largest |reading / baseline - 1| of the readings kept (re-measured phases' readings included).
  double largest_drift() const;
  /// The same over the readings within the tolerance: how far the machine drifted under the measurements
  /// that counted (a phase whose reading was beyond it was measured again).
  double largest_counted_drift() const;

 private:
  double read(const std::string& after);
  /// Largest |reading / baseline - 1| of the readings at most `limit` off.
  double largest_drift_within(double limit) const;
  double drift(double seconds) const { return seconds / baseline_ - 1.0; }

  std::function<double()> read_;
  std::function<void(const std::string&)> say_;
  SpeedWatchOptions options_;
  double baseline_ = 0.0;
  std::vector<SpeedReading> readings_;
};

}  // namespace dbench::validation
