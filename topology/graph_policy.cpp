#include "topology/graph_policy.hpp"

#include <fmt/core.h>

namespace dbench::topology {

ScheduleStep SequencePolicy::graph_for(std::int64_t iteration, const PolicyObservation*) {
  const Graph& graph = sequence_.at(iteration);
  if (!sequence_.time_varying()) {
    return {sequence_.kind(), &graph};
  }
  return {fmt::format("{}/{}", sequence_.kind(), iteration % sequence_.period()), &graph};
}

}  // namespace dbench::topology

namespace dbench::topology {

PeriodicAveragePolicy::PeriodicAveragePolicy(GraphSequence sequence, std::int64_t every)
    : gossip_(std::move(sequence)), every_(every) {
  if (every < 1) {
    throw GraphError(GraphInput::period, fmt::format("global averaging needs a period >= 1, got {}", every));
  }
}

ScheduleStep PeriodicAveragePolicy::graph_for(std::int64_t iteration, const PolicyObservation* latest) {
  if ((iteration + 1) % every_ == 0) {
    return GlobalAveragePolicy().graph_for(iteration, latest);
  }
  return gossip_.graph_for(iteration, latest);
}

std::string PeriodicAveragePolicy::name() const {
  return fmt::format("{}+global/{}", gossip_.name(), every_);
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

AdaPolicy::AdaPolicy(std::vector<std::unique_ptr<GraphPolicy>> ladder, AdaOptions options)
    : ladder_(std::move(ladder)), options_(options), rung_(options.start_rung) {
  if (ladder_.empty()) {
    throw GraphError(GraphInput::ladder, "needs at least one rung");
  }
  if (!(options_.low >= 0.0) || !(options_.high > options_.low)) {
    throw GraphError(GraphInput::band, fmt::format("needs 0 <= low < high, got low {} and high {}",
                                                   options_.low, options_.high));
  }
  if (options_.check_every < 1 || options_.min_dwell < 0 || options_.patience < 1) {
    throw GraphError(
        GraphInput::ada_timing,
        fmt::format("the check interval and patience must be >= 1 and the dwell >= 0, got {}, {} "
                    "and {}",
                    options_.check_every, options_.patience, options_.min_dwell));
  }
  if (rung_ < 0 || rung_ >= static_cast<int>(ladder_.size())) {
    throw GraphError(GraphInput::start_rung,
                     fmt::format("{} is not a rung of a ladder of {}", rung_, ladder_.size()));
  }
}

ScheduleStep AdaPolicy::graph_for(std::int64_t iteration, const PolicyObservation* latest) {
  // Decide once per new observation, and only after the dwell time: hysteresis against oscillation.
  if (latest != nullptr && latest->iteration > last_seen_ && latest->iteration > 0) {
    last_seen_ = latest->iteration;
    const double disagreement = latest->relative_consensus();
    const bool settled = iteration - rung_since_ >= options_.min_dwell;
    if (disagreement > options_.high) {
      below_ = 0;
      if (settled && rung_ + 1 < static_cast<int>(ladder_.size())) {
        ++rung_;
        rung_since_ = iteration;
      }
    } else if (disagreement < options_.low) {
      ++below_;
      if (settled && below_ >= options_.patience && rung_ > 0) {
        --rung_;
        rung_since_ = iteration;
        below_ = 0;
      }
    } else {
      below_ = 0;
    }
  }
  return ladder_[static_cast<std::size_t>(rung_)]->graph_for(iteration, latest);
}

}  // namespace dbench::topology
