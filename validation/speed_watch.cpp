#include "validation/speed_watch.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <limits>
#include <span>
#include <utility>

#include "validation/timed_rounds.hpp"

namespace dbench::validation {
namespace {

/// "+34 % (slower)" / "-12 % (faster)".
std::string drift_words(double drift) {
  return fmt::format("{:+.0f} % ({})", 100.0 * drift, drift > 0.0 ? "slower" : "faster");
}

}  // namespace

double reference_kernel_seconds(runtime::Communicator& comm) {
  // 16 Ki floats (64 KiB): a core's L2; 8 passes of a multiply-add per call, about 10 us.
  std::vector<float> buffer(16384, 1.0f);
  float scale = 0.999f;
  const auto body = [&] {
    for (int pass = 0; pass < 8; ++pass) {
      for (float& x : buffer) {
        x = x * scale + 0.001f;
      }
    }
    // Depends on the buffer, so that no pass can be left out.
    scale = 0.999f + 1e-9f * buffer[static_cast<std::size_t>(buffer[0] > 2.0f)];
  };
  // Each round is timed from one barrier to the next on every worker, so that it spans the turns of workers
  // sharing a core whichever of them starts first (a worker timing only its own calls would miss the turn of
  // one that had not started yet), and lasts about 100 ms; the median of 9 rounds after an untimed one that
  // sets the calls per round. Rounds of 20 ms (7 of them) read a core kept busy by another process anywhere
  // from 0.6 to 1.6 times one reading, as the scheduler moved that process between the workers' cores.
  constexpr int kRounds = 9;
  constexpr double kRoundSeconds = 0.1;
  std::array<double, 1> token{0.0};
  int calls = 20;
  std::vector<double> per_call;
  for (int k = -1; k < kRounds; ++k) {
    comm.allreduce(std::span<double>(token), runtime::ReduceOp::sum);
    const auto start = std::chrono::steady_clock::now();
    for (int c = 0; c < calls; ++c) {
      body();
    }
    comm.allreduce(std::span<double>(token), runtime::ReduceOp::sum);
    std::array<double, 1> elapsed{seconds_since(start)};
    comm.allreduce(std::span<double>(elapsed), runtime::ReduceOp::max);
    if (k >= 0) {
      per_call.push_back(elapsed[0] / calls);
    } else {
      calls = std::max(1, static_cast<int>(std::ceil(kRoundSeconds * calls / std::max(elapsed[0], 1e-9))));
    }
  }
  return median(per_call);
}

SpeedWatch::SpeedWatch(std::function<double()> read, std::function<void(const std::string&)> say,
                       SpeedWatchOptions options)
    : read_(std::move(read)), say_(std::move(say)), options_(std::move(options)) {}

double SpeedWatch::read(const std::string& after) {
  const double seconds = read_();
  readings_.push_back({after, seconds});
  return seconds;
}

void SpeedWatch::start(double baseline) {
  // Three readings, their median: one reading alone is off by up to a tenth on an idle machine.
  const auto median_of_three = [this] {
    std::vector<double> three;
    for (int i = 0; i < 3; ++i) {
      three.push_back(read("start"));
    }
    return median(three);
  };
  double first = median_of_three();
  if (baseline <= 0.0) {
    baseline_ = first;
    return;
  }
  baseline_ = baseline;
  // A passing spell is read again, as a drifted phase is measured again; a machine that stays off refuses.
  for (int attempt = 1; attempt <= options_.retries && std::abs(drift(first)) > options_.tolerance;
       ++attempt) {
    say_(fmt::format(
        "{}: the machine runs {} against {} (beyond the {:.0f} % tolerance); reading it again ({} of {})",
        options_.command, drift_words(drift(first)), options_.baseline_when, 100.0 * options_.tolerance,
        attempt, options_.retries));
    first = median_of_three();
  }
  if (std::abs(drift(first)) > options_.tolerance) {
    throw DriftError(fmt::format(
        "{}: the machine runs {} against {} (reference kernel {:.3e} s then, {:.3e} s now, beyond the "
        "{:.0f} % tolerance){}; {}",
        options_.command, drift_words(drift(first)), options_.baseline_when, baseline_, first,
        100.0 * options_.tolerance,
        options_.retries > 0 ? fmt::format(" and stayed so through {} readings again", options_.retries) : "",
        options_.baseline_remedy));
  }
}

void SpeedWatch::phase(const std::string& name, const std::function<void()>& measure) {
  for (int attempt = 0;; ++attempt) {
    measure();
    const double seconds = read(name);
    const double d = drift(seconds);
    if (std::abs(d) <= options_.tolerance) {
      return;
    }
    if (attempt >= options_.retries) {
      throw DriftError(fmt::format(
          "{}: the machine's speed drifted {} during {} (reference kernel {:.3e} s at the start, {:.3e} s "
          "after it, beyond the {:.0f} % tolerance) and stayed so through {} re-measurement{}; nothing is "
          "written from mixed measurements: run it again on a steady machine",
          options_.command, drift_words(d), name, baseline_, seconds, 100.0 * options_.tolerance,
          options_.retries, options_.retries == 1 ? "" : "s"));
    }
    say_(fmt::format(
        "{}: the machine's speed drifted {} during {} (reference kernel {:.3e} s, {:.3e} s at "
        "the start); measuring it again ({} of {})",
        options_.command, drift_words(d), name, seconds, baseline_, attempt + 1, options_.retries));
  }
}

double SpeedWatch::settled() const {
  std::vector<double> seconds;
  for (const auto& r : readings_) {
    seconds.push_back(r.seconds);
  }
  return seconds.empty() ? 0.0 : median(seconds);
}

double SpeedWatch::largest_drift_within(double limit) const {
  double largest = 0.0;
  for (const auto& r : readings_) {
    if (const double d = std::abs(drift(r.seconds)); d <= limit) {
      largest = std::max(largest, d);
    }
  }
  return largest;
}

double SpeedWatch::largest_drift() const {
  return largest_drift_within(std::numeric_limits<double>::infinity());
}

double SpeedWatch::largest_counted_drift() const {
  return largest_drift_within(options_.tolerance);
}

}  // namespace dbench::validation
