// Load that calibrate and validate notice: a reference kernel (and, where a model is at stake, the model's
// own step) timed on every worker at once before and after each measurement, and a watch that re-measures
// what ran while the machine's speed drifted, a bounded number of times, and then refuses rather than keep
// measurements that timed the neighbours.
#pragma once

#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "runtime/communicator.hpp"

namespace dbench::validation {

/// Seconds per call of a fixed piece of arithmetic (passes over a buffer that fits a core's caches) that
/// every worker of `comm` runs at once, each round timed from a barrier to the next (the median of 9 rounds
/// of about 100 ms). Workers sharing a core, or a core taken by another process, make it slower. Every
/// worker must call it; all get the same value.
double reference_kernel_seconds(runtime::Communicator& comm);

/// The machine's speed changed beyond the tolerance during a measurement and did not settle: what() is the
/// one line that says so; finding() the last reading's part of it ("the model's step drifted +13 % (slower)
/// during round 4 of 5 (step 5.8e-03 s at the start, 6.6e-03 s after it)"), for a line that goes on
/// instead.
class DriftError : public std::runtime_error {
 public:
  DriftError(const std::string& what, std::string finding)
      : std::runtime_error(what), finding_(std::move(finding)) {}
  const std::string& finding() const { return finding_; }

 private:
  std::string finding_;
};

/// A watch that took its own first readings found the machine faster than they read after a measurement, and
/// it stayed so through the wait: the first readings timed a slow spell, and what was measured against them
/// must be measured again from the start (the caller does; a DriftError where it will not).
class SlowStart : public DriftError {
 public:
  using DriftError::DriftError;
};

/// Seconds per call of `body` on every worker of `comm` at once, timed as reference_kernel_seconds times its
/// kernel: rounds of about 100 ms from a barrier to the next, the median of 9 after an untimed one that sets
/// the calls per round. Every worker must call it with the same body; all get the same value.
double barrier_rounds_seconds(runtime::Communicator& comm, const std::function<void()>& body);

/// One reading of the machine's speed: the reference kernel's seconds per call and, where the watch reads it,
/// a model's local training step's (0: not read).
struct Speed {
  double kernel_s = 0.0;
  double step_s = 0.0;
};

/// One reading: after which measurement, and its seconds per call.
struct SpeedReading {
  std::string after;  ///< "start", or the measurement it followed
  double seconds = 0.0;
  double step_seconds = 0.0;  ///< 0: the step was not read
};

/// How a SpeedWatch reads the machine and speaks.
struct SpeedWatchOptions {
  std::string command;      ///< "calibrate", "validate": the first word of its lines
  double tolerance = 0.15;  ///< largest |reading / first reading - 1| that counts as the same machine
  /// The same for the model's step, where it is read. Tighter: the reference kernel follows the load of other
  /// processes, not the spells in which the machine runs the model's kernels faster or slower (a probe on an
  /// idle core: correlation 0.41 between the two), and it is the step that a calibration's compute predicts.
  double step_tolerance = 0.06;
  int retries = 2;  ///< re-measurements of a phase before refusing
  /// Where a reading drifted: the most seconds to wait for the machine's speed to come back within the
  /// tolerances before measuring (or reading) again, reading it every `settle_poll_s`; 0: at once. A shared
  /// machine's slow spells pass: on a 2-vCPU cloud machine each core in turn ran the reference kernel 1.75x
  /// slower for about 30 s at a time, and a re-measurement taken at once fell in the same spell.
  double settle_wait_s = 0.0;
  double settle_poll_s = 5.0;
  /// How the watch waits between those readings (tests pass their own); empty: it sleeps.
  std::function<void(double seconds)> pause{};
  /// When start's `baseline` was read, as its lines say it: "the machine runs +20 % (slower) against WHEN".
  std::string baseline_when = "when it was calibrated";
  /// What start's refusal asks of the user.
  std::string baseline_remedy = "calibrate again on the machine as it is now";
};

/// Watches the machine's speed across a series of measurements. `read` takes one reading (on workers: the
/// same value on every one, reference_kernel_seconds; step_s 0 where the step is not read), `say` prints a
/// line (on rank 0 only, or nowhere). A reading drifted where either part is beyond its tolerance.
class SpeedWatch {
 public:
  SpeedWatch(std::function<Speed()> read, std::function<void(const std::string&)> say,
             SpeedWatchOptions options);

  /// Takes the first reading (the median of three, each part's), which every later one is compared with.
  /// `baseline` > 0: compare with that instead (a calibration's own reading, for validate), after checking
  /// this one against it: a reading beyond the tolerance is taken again, at most `retries` times, then
  /// DriftError. The step's baseline likewise, from `step_baseline` where it is > 0.
  void start(double baseline = 0.0, double step_baseline = 0.0);
  /// Runs `measure`, then reads the machine; where the reading is off the first by more than the tolerance,
  /// says so in one line and runs `measure` again, at most `retries` times, then throws DriftError naming the
  /// drift. `measure` must replace, not add to, what an earlier attempt measured. Where start took its own
  /// first readings and the machine stays faster than they read through a wait (settle_wait_s), throws
  /// SlowStart instead.
  void phase(const std::string& name, const std::function<void()>& measure);

  /// Takes a reading after `after` and keeps it without judging it: a reading inside a phase, which counts
  /// in settled() and the largest drifts; the phase's own reading at its end still decides.
  void note(const std::string& after) { read(after); }

  double baseline() const { return baseline_; }
  double step_baseline() const { return step_baseline_; }  ///< 0: the step is not read
  /// The median of every reading taken: the machine's speed over the whole series, what a later series
  /// (validate's, after a calibration) compares its first reading with.
  double settled() const;
  double settled_step() const;  ///< the same for the step; 0 where it was not read
  const std::vector<SpeedReading>& readings() const { return readings_; }
  /// Largest |reading / baseline - 1| of the readings kept (re-measured phases' readings included).
  double largest_drift() const;
  /// The same over the readings within the tolerance: how far the machine drifted under the measurements
  /// that counted (a phase whose reading was beyond it was measured again).
  double largest_counted_drift() const;
  /// largest_drift and largest_counted_drift of the step's readings; 0 where it is not read.
  double largest_step_drift() const;
  double largest_counted_step_drift() const;

 private:
  /// How far a reading is off the baselines: the part beyond its tolerance (the kernel first), or else the
  /// kernel's.
  struct Drift {
    double value = 0.0;
    bool step = false;    ///< the step's drift, not the kernel's
    bool beyond = false;  ///< beyond its tolerance
  };

  Speed read(const std::string& after);
  Drift assess(const Speed& s) const;
  /// Waits, reading every settle_poll_s (readings not kept: they time the spell), at most settle_wait_s for a
  /// reading within the tolerances, and says how it ended in one line. `drifted`: what drifted ("the
  /// machine's speed", "the model's step"). Nothing where settle_wait_s is 0.
  /// Returns the last reading's drift where the speed did not come back; `then` words what follows from it.
  std::optional<Drift> wait_to_settle(const std::string& drifted,
                                      const std::function<std::string(const Drift&)>& then);
  /// The words for a re-measurement's line: "waiting up to 90 s for it to come back, then " or nothing.
  std::string waiting_words() const;
  /// The words for a refusal after re-measurements: ", each after waiting up to 90 s for it to come back".
  std::string waited_words() const;
  /// Largest |reading / baseline - 1| of one part's readings that are at most `limit` off.
  double largest_drift_within(double limit, bool step) const;
  double drift(double seconds) const { return seconds / baseline_ - 1.0; }
  double step_drift(double seconds) const {
    return step_baseline_ > 0.0 && seconds > 0.0 ? seconds / step_baseline_ - 1.0 : 0.0;
  }

  std::function<Speed()> read_;
  std::function<void(const std::string&)> say_;
  SpeedWatchOptions options_;
  double baseline_ = 0.0;
  double step_baseline_ = 0.0;
  bool own_baseline_ = false;  ///< start read the baselines itself rather than taking them
  std::vector<SpeedReading> readings_;
};

/// Where a measurement against a calibration found the machine changed.
enum class DriftSeen {
  at_start,         ///< it differed from its calibration before the measurement
  while_measuring,  ///< it moved during the measurement and stayed so
};

/// A measurement against a calibration that may be taken again: `start` reads the machine against the
/// calibration and `measure` measures; where either throws DriftError, `recalibrate(n, seen, finding)`
/// calibrates again (the n-th time; `finding`: the error's finding()) and both run again, at most `retries`
/// times; then the DriftError goes on. `measure` must replace, not add to, what an earlier attempt measured.
/// Returns how many times it calibrated again.
int measure_with_recalibration(
    int retries, const std::function<void()>& start, const std::function<void()>& measure,
    const std::function<void(int n, DriftSeen seen, const std::string& finding)>& recalibrate);

}  // namespace dbench::validation
