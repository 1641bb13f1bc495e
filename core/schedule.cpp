#include "core/schedule.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>

#include "core/errors.hpp"

namespace dbench::core {
namespace {

/// Feeds the policy the calls of iterations [0, t0) again, each with the observation it saw then: a policy
/// is a deterministic function of its calls.
void replay(topology::GraphPolicy& policy, const std::vector<topology::PolicyObservation>& observations,
            std::int64_t t0) {
  std::size_t k = 0;
  for (std::int64_t t = 0; t < t0; ++t) {
    while (k + 1 < observations.size() && observations[k + 1].iteration <= t) {
      ++k;
    }
    static_cast<void>(policy.graph_for(t, &observations[k]));
  }
}

void report(const MetricsRow& row, NumericsObserver& observer, ScheduleProgress& progress) {
  if (!std::isfinite(row.test_loss)) {
    throw DivergenceError(
        fmt::format("training diverged at iteration {}: the averaged model's test loss is {}", row.iteration,
                    row.test_loss));
  }
  observer.on_metrics(row);
  progress.final_test_accuracy = row.test_accuracy;
  progress.final_test_loss = row.test_loss;
  progress.best_test_accuracy = std::max(progress.best_test_accuracy, row.test_accuracy);
}

}  // namespace

ScheduleProgress run_schedule(std::int64_t iterations, std::int64_t eval_every, topology::GraphPolicy& policy,
                              ScheduleReplicas& replicas, NumericsObserver& observer, ScheduleProgress from) {
  if (eval_every < 1) {
    throw ValueError(RunInput::eval_every, fmt::format("must be >= 1, got {}", eval_every));
  }
  ScheduleProgress progress = std::move(from);
  if (progress.iterations_done == 0) {
    progress.observations.clear();
    replicas.measure();
    progress.observations.push_back(replicas.observation());
    report(replicas.metrics(), observer, progress);
  } else {
    if (progress.observations.empty()) {
      throw ValueError("run_schedule: a resumed run needs the observations its policy saw");
    }
    replay(policy, progress.observations, progress.iterations_done);
  }
  for (std::int64_t t = progress.iterations_done; t < iterations; ++t) {
    replicas.begin_iteration(t);
    const topology::ScheduleStep step = policy.graph_for(t, &progress.observations.back());
    observer.on_schedule(t, step);
    const bool eval = (t + 1) % eval_every == 0 || t + 1 == iterations;
    replicas.step(t, step, eval || step.observe);
    // Every step's loss is checked, so a divergence is reported the iteration it shows, whatever eval_every.
    if (!std::isfinite(replicas.train_loss())) {
      throw DivergenceError(fmt::format("training diverged at iteration {}: the mean train loss is {}", t,
                                        replicas.train_loss()));
    }
    if (eval || step.observe) {
      progress.observations.push_back(replicas.observation());
    }
    if (eval) {
      report(replicas.metrics(), observer, progress);
    }
    progress.iterations_done = t + 1;
    observer.on_iteration(t);
    observer.on_progress(progress);
  }
  return progress;
}

}  // namespace dbench::core
