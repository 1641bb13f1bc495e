#include "topology/graph_policy.hpp"

#include <fmt/core.h>

#include <limits>

namespace dbench::topology {
namespace {

Graph identity(int nodes) {
  if (nodes < 1) {
    throw GraphError(GraphInput::nodes, fmt::format("local steps need at least 1 replica, got {}", nodes));
  }
  std::vector<std::vector<MixingEntry>> rows(static_cast<std::size_t>(nodes));
  for (int i = 0; i < nodes; ++i) {
    rows[static_cast<std::size_t>(i)].push_back({i, 1.0});
  }
  return Graph("local", std::move(rows), true);
}

}  // namespace

LocalPolicy::LocalPolicy(int nodes) : identity_(identity(nodes)) {}

bool communicates(const ScheduleStep& step) noexcept {
  return step.communication != Communication::none;
}

Communication gossip_on(const Graph& graph) noexcept {
  return graph.entries().size() > static_cast<std::size_t>(graph.nodes()) ? Communication::gossip
                                                                          : Communication::none;
}

ScheduleStep SequencePolicy::graph_for(std::int64_t iteration, const PolicyObservation*) {
  const Graph& graph = sequence_.at(iteration);
  if (!sequence_.time_varying()) {
    return {sequence_.kind(), &graph, gossip_on(graph)};
  }
  return {fmt::format("{}/{}", sequence_.kind(), iteration % sequence_.period()), &graph, gossip_on(graph)};
}

}  // namespace dbench::topology

namespace dbench::topology {

PeriodicAveragePolicy::PeriodicAveragePolicy(std::unique_ptr<GraphPolicy> between, std::int64_t every)
    : between_(std::move(between)), every_(every) {
  if (every < 1) {
    throw GraphError(GraphInput::period, fmt::format("global averaging needs a period >= 1, got {}", every));
  }
}

PeriodicAveragePolicy::PeriodicAveragePolicy(GraphSequence sequence, std::int64_t every)
    : PeriodicAveragePolicy(std::make_unique<SequencePolicy>(std::move(sequence)), every) {}

ScheduleStep PeriodicAveragePolicy::graph_for(std::int64_t iteration, const PolicyObservation* latest) {
  if ((iteration + 1) % every_ == 0) {
    return GlobalAveragePolicy().graph_for(iteration, latest);
  }
  return between_->graph_for(iteration, latest);
}

std::string PeriodicAveragePolicy::name() const {
  return fmt::format("{}+global/{}", between_->name(), every_);
}

SwitchPolicy::SwitchPolicy(std::vector<std::unique_ptr<GraphPolicy>> stages, std::vector<std::int64_t> starts)
    : stages_(std::move(stages)), starts_(std::move(starts)) {
  if (stages_.empty() || stages_.size() != starts_.size()) {
    throw GraphError(GraphInput::stage_starts,
                     fmt::format("needs one start iteration per stage, got {} stages and {} starts",
                                 stages_.size(), starts_.size()));
  }
  if (starts_.front() != 0) {
    throw GraphError(GraphInput::stage_starts,
                     fmt::format("the first stage must start at iteration 0, got {}", starts_.front()));
  }
  for (std::size_t s = 1; s < starts_.size(); ++s) {
    if (starts_[s] <= starts_[s - 1]) {
      throw GraphError(GraphInput::stage_starts, "start iterations must be strictly increasing");
    }
  }
}

ScheduleStep SwitchPolicy::graph_for(std::int64_t iteration, const PolicyObservation* latest) {
  std::size_t stage = 0;
  while (stage + 1 < starts_.size() && iteration >= starts_[stage + 1]) {
    ++stage;
  }
  return stages_[stage]->graph_for(iteration, latest);
}

std::string SwitchPolicy::name() const {
  std::string name = "switch";
  for (std::size_t s = 0; s < stages_.size(); ++s) {
    name += fmt::format("{}{}@{}", s == 0 ? ":" : ",", stages_[s]->name(), starts_[s]);
  }
  return name;
}

AdaPolicy::AdaPolicy(std::vector<AdaRung> ladder, AdaOptions options)
    : ladder_(std::move(ladder)),
      options_(options),
      rung_(options.start_rung),
      reference_(std::numeric_limits<double>::quiet_NaN()),
      last_ratio_(std::numeric_limits<double>::quiet_NaN()) {
  if (ladder_.empty()) {
    throw GraphError(GraphInput::ladder, "needs at least one rung");
  }
  for (const AdaRung& r : ladder_) {
    if (r.period < 1 || (r.period > 1 && r.between == nullptr)) {
      throw GraphError(GraphInput::ladder,
                       fmt::format("rung '{}': needs a global-average period >= 2 and an exchange between "
                                   "averages, or period 1",
                                   r.name));
    }
  }
  if (!(options_.low > 0.0) || !(options_.high > options_.low)) {
    throw GraphError(GraphInput::band, fmt::format("needs 0 < low < high, got low {} and high {}",
                                                   options_.low, options_.high));
  }
  if (options_.probe_every < 1 || options_.min_dwell < 0 || options_.patience < 1) {
    throw GraphError(
        GraphInput::ada_timing,
        fmt::format("the probe interval and patience must be >= 1 and the dwell >= 0, got {}, {} "
                    "and {}",
                    options_.probe_every, options_.patience, options_.min_dwell));
  }
  if (rung_ < 0 || rung_ >= static_cast<int>(ladder_.size())) {
    throw GraphError(GraphInput::start_rung,
                     fmt::format("{} is not a rung of a ladder of {}", rung_, ladder_.size()));
  }
}

void AdaPolicy::move(int rung, std::int64_t iteration) {
  rung_ = rung;
  rung_since_ = iteration;
  below_ = 0;
}

bool AdaPolicy::observe(const PolicyObservation& seen) {
  if (seen.iteration != pending_iteration_) {
    return false;  // not a measurement Ada asked for (an evaluation's)
  }
  pending_iteration_ = -1;
  const double spread = seen.consensus_distance;
  if (pending_steps_ == 1) {
    // One local step from a common point: the reference. Its first value also starts the comparisons.
    reference_ = spread;
    if (ladder_[static_cast<std::size_t>(rung_)].period != 1) {
      return false;
    }
  }
  if (!(reference_ > 0.0)) {
    return false;  // nothing to compare with yet (or replicas that do not spread at all)
  }
  last_ratio_ = spread / reference_;
  const bool settled = seen.iteration - rung_since_ >= options_.min_dwell;
  if (last_ratio_ > options_.high) {
    below_ = 0;
    if (settled && rung_ + 1 < static_cast<int>(ladder_.size())) {
      move(rung_ + 1, seen.iteration);
    }
  } else if (last_ratio_ < options_.low) {
    ++below_;
    if (settled && below_ >= options_.patience && rung_ > 0) {
      move(rung_ - 1, seen.iteration);
    }
  } else {
    below_ = 0;
  }
  return true;
}

ScheduleStep AdaPolicy::graph_for(std::int64_t iteration, const PolicyObservation* latest) {
  bool acted = false;
  if (latest != nullptr && latest->iteration > last_seen_) {
    last_seen_ = latest->iteration;
    acted = observe(*latest);
  }
  ScheduleStep step = next_step(iteration, latest);
  if (acted) {
    step.signal = last_ratio_;
  }
  return step;
}

ScheduleStep AdaPolicy::next_step(std::int64_t iteration, const PolicyObservation* latest) {
  const AdaRung& rung = ladder_[static_cast<std::size_t>(rung_)];
  const std::int64_t steps =
      iteration - last_average_;  // local steps since the common point, this one included
  // A probe (one step from the last average) at the first average and every probe_every averages after the
  // last probe (without measurements, as in a timing-only run, the rung's own pattern and its probes).
  const bool probe = rung.period > 1 && (!probed_ || averages_ >= options_.probe_every);
  const std::int64_t period = probe ? 1 : rung.period;
  if (steps < period) {
    return rung.between->graph_for(iteration, latest);
  }
  ScheduleStep step = GlobalAveragePolicy().graph_for(iteration, latest);
  step.observe = true;
  pending_iteration_ = iteration + 1;
  pending_steps_ = steps;
  averages_ = probe ? 0 : averages_ + 1;
  probed_ = true;
  last_average_ = iteration;
  return step;
}

}  // namespace dbench::topology
