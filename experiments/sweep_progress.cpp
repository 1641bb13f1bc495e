#include "experiments/sweep_progress.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <cstdio>

namespace dbench::experiments {

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

void SweepProgress::message(std::string_view text) {
  if (quiet_) {
    return;
  }
  fmt::print(stderr, "{}{}\n", terminal_ ? "\r\x1b[K" : "", text);
  drawn_ = false;
}

void SweepProgress::finished(std::span<const SweepRun> runs, std::size_t run, double seconds,
                             const std::string& failure, const std::filesystem::path& log,
                             const std::vector<SweepChild>& running, double queued_cost) {
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
    message(fmt::format("failed {} ({}) after {}, log: {}; {}", runs[run].id, failure, duration_text(seconds),
                        log.string(), counts()));
  } else if (!terminal_) {
    message(fmt::format("done {} in {}; {}", runs[run].id, duration_text(seconds), counts()));
  }
}

void SweepProgress::update(std::span<const SweepRun> runs, const std::vector<SweepChild>& running,
                           double queued_cost) {
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

void SweepProgress::close() {
  if (drawn_ && !quiet_) {
    fmt::print(stderr, "\n");
    drawn_ = false;
  }
}

double SweepProgress::elapsed() const {
  return std::chrono::duration<double>(SweepClock::now() - started_).count();
}

std::string SweepProgress::counts() const {
  return fmt::format("{}/{} done, {} running, {} failed, elapsed {}, ETA {}", done_, total_, running_,
                     failed_, duration_text(elapsed()), eta_ < 0 ? std::string("?") : duration_text(eta_));
}

double SweepProgress::estimate(std::span<const SweepRun> runs, const std::vector<SweepChild>& running,
                               double queued_cost) const {
  if (measured_cost_ <= 0.0) {
    return -1.0;
  }
  const double per_unit = measured_seconds_ / measured_cost_;
  const auto now = SweepClock::now();
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
}  // namespace dbench::experiments
