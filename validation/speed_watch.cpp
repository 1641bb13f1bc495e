#include "validation/speed_watch.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <limits>
#include <span>
#include <thread>
#include <utility>

#include "validation/timed_rounds.hpp"

namespace dbench::validation {
namespace {

/// "+34 % (slower)" / "-12 % (faster)".
std::string drift_words(double drift) {
  return fmt::format("{:+.0f} % ({})", 100.0 * drift, drift > 0.0 ? "slower" : "faster");
}

/// What a drift is in, for the lines said: "the machine runs", "the model's step runs".
std::string subject(bool step) {
  return step ? "the model's step" : "the machine";
}
std::string part(bool step) {
  return step ? "step" : "reference kernel";
}
/// What drifted during a measurement: "the machine's speed", "the model's step".
std::string what_drifted(bool step) {
  return step ? "the model's step" : "the machine's speed";
}

}  // namespace

double barrier_rounds_seconds(runtime::Communicator& comm, const std::function<void()>& body) {
  // Each round is timed from one barrier to the next on every worker, so that it spans the turns of workers
  // sharing a core whichever of them starts first (a worker timing only its own calls would miss the turn of
  // one that had not started yet), and lasts about 100 ms; the median of 9 rounds after untimed ones that set
  // the calls per round (doubled from one until a round lasts 10 ms). Rounds of 20 ms (7 of them) read a core
  // kept busy by another process anywhere from 0.6 to 1.6 times one reading, as the scheduler moved that
  // process between the workers' cores.
  constexpr int kRounds = 9;
  constexpr double kRoundSeconds = 0.1;
  constexpr double kSizingSeconds = 0.01;
  std::array<double, 1> token{0.0};
  int calls = 1;
  std::vector<double> per_call;
  for (int k = -1; k < kRounds;) {
    comm.allreduce(std::span<double>(token), runtime::ReduceOp::sum);
    const auto start = std::chrono::steady_clock::now();
    for (int c = 0; c < calls; ++c) {
      body();
    }
    comm.allreduce(std::span<double>(token), runtime::ReduceOp::sum);
    std::array<double, 1> elapsed{seconds_since(start)};
    comm.allreduce(std::span<double>(elapsed), runtime::ReduceOp::max);
    // Every worker has the same elapsed time, so all take the same turn here.
    if (k >= 0) {
      per_call.push_back(elapsed[0] / calls);
    } else if (elapsed[0] < kSizingSeconds) {
      calls *= 2;
      continue;
    } else {
      calls = std::max(1, static_cast<int>(std::ceil(kRoundSeconds * calls / elapsed[0])));
    }
    ++k;
  }
  return median(per_call);
}

double reference_kernel_seconds(runtime::Communicator& comm) {
  // 16 Ki floats (64 KiB): a core's L2; 8 passes of a multiply-add per call, about 10 us.
  std::vector<float> buffer(16384, 1.0f);
  float scale = 0.999f;
  return barrier_rounds_seconds(comm, [&] {
    for (int pass = 0; pass < 8; ++pass) {
      for (float& x : buffer) {
        x = x * scale + 0.001f;
      }
    }
    // Depends on the buffer, so that no pass can be left out.
    scale = 0.999f + 1e-9f * buffer[static_cast<std::size_t>(buffer[0] > 2.0f)];
  });
}

SpeedWatch::SpeedWatch(std::function<Speed()> read, std::function<void(const std::string&)> say,
                       SpeedWatchOptions options)
    : read_(std::move(read)), say_(std::move(say)), options_(std::move(options)) {
  if (!options_.pause) {
    options_.pause = [](double seconds) {
      std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
    };
  }
}

Speed SpeedWatch::read(const std::string& after) {
  const Speed speed = read_();
  readings_.push_back({after, speed.kernel_s, speed.step_s});
  return speed;
}

SpeedWatch::Drift SpeedWatch::assess(const Speed& s) const {
  const double kernel = drift(s.kernel_s);
  if (std::abs(kernel) > options_.tolerance) {
    return {kernel, false, true};
  }
  if (const double step = step_drift(s.step_s); std::abs(step) > options_.step_tolerance) {
    return {step, true, true};
  }
  return {kernel, false, false};
}

std::string SpeedWatch::waiting_words() const {
  return options_.settle_wait_s > 0.0
             ? fmt::format("waiting up to {:.0f} s for it to come back, then ", options_.settle_wait_s)
             : std::string();
}

std::string SpeedWatch::waited_words() const {
  return options_.retries > 0 && options_.settle_wait_s > 0.0
             ? fmt::format(", each after waiting up to {:.0f} s for it to come back", options_.settle_wait_s)
             : std::string();
}

std::optional<SpeedWatch::Drift> SpeedWatch::wait_to_settle(
    const std::string& drifted, const std::function<std::string(const Drift&)>& then) {
  if (options_.settle_wait_s <= 0.0) {
    return std::nullopt;
  }
  // A count of readings rather than a clock decides, so that every worker reading the same values waits
  // alike; the clock only words the line.
  const int polls =
      std::max(1, static_cast<int>(std::ceil(options_.settle_wait_s / options_.settle_poll_s - 1e-9)));
  const auto began = std::chrono::steady_clock::now();
  const auto after = [&](int k, const Speed& s) {
    const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
    return fmt::format("after {:.0f} s ({} reading{}, one every {:g} s: reference kernel {:.3e} s{})", waited,
                       k, k == 1 ? "" : "s", options_.settle_poll_s, s.kernel_s,
                       s.step_s > 0.0 ? fmt::format(", step {:.3e} s", s.step_s) : std::string());
  };
  Speed s;
  for (int k = 1; k <= polls; ++k) {
    options_.pause(options_.settle_poll_s);
    s = read_();
    if (!assess(s).beyond) {
      say_(fmt::format("{}: {} is back within the tolerance {}", options_.command, drifted, after(k, s)));
      return std::nullopt;
    }
  }
  const Drift d = assess(s);
  say_(fmt::format("{}: {} is not back: {} {}; {}", options_.command, what_drifted(d.step),
                   drift_words(d.value), after(polls, s), then(d)));
  return d;
}

void SpeedWatch::start(double baseline, double step_baseline) {
  // Three readings, each part's median: one reading alone is off by up to a tenth on an idle machine.
  const auto median_of_three = [this] {
    std::vector<double> kernel;
    std::vector<double> step;
    for (int i = 0; i < 3; ++i) {
      const Speed s = read("start");
      kernel.push_back(s.kernel_s);
      step.push_back(s.step_s);
    }
    return Speed{median(kernel), median(step)};
  };
  Speed first = median_of_three();
  own_baseline_ = baseline <= 0.0;
  baseline_ = baseline > 0.0 ? baseline : first.kernel_s;
  step_baseline_ = step_baseline > 0.0 ? step_baseline : first.step_s;
  if (baseline <= 0.0 && step_baseline <= 0.0) {
    return;
  }
  // A passing spell is read again, as a drifted phase is measured again; a machine that stays off refuses.
  Drift d = assess(first);
  const auto tolerance = [this](const Drift& of) {
    return 100.0 * (of.step ? options_.step_tolerance : options_.tolerance);
  };
  for (int attempt = 1; attempt <= options_.retries && d.beyond; ++attempt) {
    say_(fmt::format(
        "{}: {} runs {} against {} (beyond the {:.0f} % tolerance); {}reading it again ({} of {})",
        options_.command, subject(d.step), drift_words(d.value), options_.baseline_when, tolerance(d),
        waiting_words(), attempt, options_.retries));
    wait_to_settle(what_drifted(d.step), [](const Drift&) { return "reading it again all the same"; });
    first = median_of_three();
    d = assess(first);
  }
  if (d.beyond) {
    // The finding (what was read) and the refusal around it (the tolerance, the readings again, the remedy).
    const std::string head =
        fmt::format("{} runs {} against {}", subject(d.step), drift_words(d.value), options_.baseline_when);
    const std::string readings =
        fmt::format("{} {:.3e} s then, {:.3e} s now", part(d.step), d.step ? step_baseline_ : baseline_,
                    d.step ? first.step_s : first.kernel_s);
    throw DriftError(
        fmt::format("{}: {} ({}, beyond the {:.0f} % tolerance){}; {}", options_.command, head, readings,
                    tolerance(d),
                    options_.retries > 0 ? fmt::format(" and stayed so through {} readings again{}",
                                                       options_.retries, waited_words())
                                         : "",
                    options_.baseline_remedy),
        fmt::format("{} ({})", head, readings));
  }
}

void SpeedWatch::phase(const std::string& name, const std::function<void()>& measure) {
  for (int attempt = 0;; ++attempt) {
    measure();
    const Speed s = read(name);
    const Drift d = assess(s);
    if (!d.beyond) {
      return;
    }
    const std::string what = what_drifted(d.step);
    const double then = d.step ? step_baseline_ : baseline_;
    const double now = d.step ? s.step_s : s.kernel_s;
    const double tolerance = 100.0 * (d.step ? options_.step_tolerance : options_.tolerance);
    // What this reading found, said as the line that measures again, and in the refusal around the
    // readings (with the tolerance, the re-measurements and the remedy).
    const std::string head = fmt::format("{} drifted {} during {}", what, drift_words(d.value), name);
    const std::string readings =
        fmt::format("{} {:.3e} s at the start, {:.3e} s after it", part(d.step), then, now);
    const std::string finding = fmt::format("{} ({})", head, readings);
    if (attempt >= options_.retries) {
      throw DriftError(fmt::format("{}: {} ({}, beyond the {:.0f} % tolerance) and stayed so through {} "
                                   "re-measurement{}{}; nothing is written from mixed measurements: run it "
                                   "again on a steady machine",
                                   options_.command, head, readings, tolerance, options_.retries,
                                   options_.retries == 1 ? "" : "s", waited_words()),
                       finding);
    }
    say_(fmt::format("{}: {}; {}measuring it again ({} of {})", options_.command, finding, waiting_words(),
                     attempt + 1, options_.retries));
    // Faster than the first readings and staying so through the wait: they, not this measurement, timed a
    // spell.
    const auto slow_start = [this](const Drift& last) {
      return own_baseline_ && !last.step && last.value < 0.0;
    };
    const std::optional<Drift> after = wait_to_settle(what, [&](const Drift& last) -> std::string {
      return slow_start(last)
                 ? "the first readings timed a slow spell, and what was measured against them is "
                   "measured again from the start"
                 : "measuring it again all the same";
    });
    if (after && slow_start(*after)) {
      throw SlowStart(
          fmt::format("{}: {} ({}, beyond the {:.0f} % tolerance) and stayed so through a wait of "
                      "up to {:.0f} s: the first readings timed a slow spell; nothing is written "
                      "from mixed measurements: run it again on a steady machine",
                      options_.command, head, readings, tolerance, options_.settle_wait_s),
          finding);
    }
  }
}

double SpeedWatch::settled() const {
  std::vector<double> seconds;
  for (const auto& r : readings_) {
    seconds.push_back(r.seconds);
  }
  return seconds.empty() ? 0.0 : median(seconds);
}

double SpeedWatch::settled_step() const {
  std::vector<double> seconds;
  for (const auto& r : readings_) {
    if (r.step_seconds > 0.0) {
      seconds.push_back(r.step_seconds);
    }
  }
  return seconds.empty() ? 0.0 : median(seconds);
}

double SpeedWatch::largest_drift_within(double limit, bool step) const {
  double largest = 0.0;
  for (const auto& r : readings_) {
    const double d = std::abs(step ? step_drift(r.step_seconds) : drift(r.seconds));
    if (d <= limit) {
      largest = std::max(largest, d);
    }
  }
  return largest;
}

double SpeedWatch::largest_drift() const {
  return largest_drift_within(std::numeric_limits<double>::infinity(), false);
}

double SpeedWatch::largest_counted_drift() const {
  return largest_drift_within(options_.tolerance, false);
}

double SpeedWatch::largest_step_drift() const {
  return largest_drift_within(std::numeric_limits<double>::infinity(), true);
}

double SpeedWatch::largest_counted_step_drift() const {
  return largest_drift_within(options_.step_tolerance, true);
}

int measure_with_recalibration(
    int retries, const std::function<void()>& start, const std::function<void()>& measure,
    const std::function<void(int n, DriftSeen seen, const std::string& finding)>& recalibrate) {
  for (int n = 1;; ++n) {
    DriftSeen seen = DriftSeen::at_start;
    std::string finding;
    try {
      start();
      seen = DriftSeen::while_measuring;
      measure();
      return n - 1;
    } catch (const DriftError& e) {
      if (n > retries) {
        throw;
      }
      finding = e.finding();
    }
    recalibrate(n, seen, finding);
  }
}

}  // namespace dbench::validation
