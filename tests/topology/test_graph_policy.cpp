// Graph policies: the schedule each produces from iterations and observations.
#include <doctest/doctest.h>

#include <cmath>
#include <memory>
#include <vector>

#include "support/approx.hpp"
#include "topology/generators.hpp"
#include "topology/graph_policy.hpp"

namespace {

namespace dt = dbench::topology;

/// local:4 (local steps, a global average every 4th iteration), then the global average every iteration.
std::vector<dt::AdaRung> ladder(int n) {
  std::vector<dt::AdaRung> rungs(2);
  rungs[0].name = "local:4";
  rungs[0].between = std::make_unique<dt::LocalPolicy>(n);
  rungs[0].period = 4;
  rungs[1].name = "global-average";
  return rungs;
}

dt::AdaOptions options() {
  dt::AdaOptions o;
  o.low = 2.5;
  o.high = 5.0;
  o.probe_every = 3;
  o.patience = 2;
  return o;
}

/// Runs Ada over [from, to) as an engine would: every step it asks to observe is answered, at the next
/// iteration, with the consensus distance `spread(k)` of replicas k local steps after their last average.
template <class Spread>
std::vector<dt::ScheduleStep> drive(dt::AdaPolicy& ada, std::int64_t from, std::int64_t to, Spread spread,
                                    dt::PolicyObservation& latest, std::int64_t& last_average) {
  std::vector<dt::ScheduleStep> steps;
  for (std::int64_t t = from; t < to; ++t) {
    steps.push_back(ada.graph_for(t, &latest));
    if (steps.back().observe) {
      latest.iteration = t + 1;
      latest.consensus_distance = spread(t - last_average);
    }
    if (steps.back().communication == dt::Communication::global_average) {
      last_average = t;
    }
  }
  return steps;
}

std::vector<std::int64_t> averages(const std::vector<dt::ScheduleStep>& steps, std::int64_t from) {
  std::vector<std::int64_t> out;
  for (std::size_t i = 0; i < steps.size(); ++i) {
    if (steps[i].communication == dt::Communication::global_average) {
      out.push_back(from + static_cast<std::int64_t>(i));
    }
  }
  return out;
}

}  // namespace

TEST_CASE("topology::policy: a time-varying family names its round, a static graph its kind") {
  dt::SequencePolicy one_peer(dt::one_peer_exponential(16));
  CHECK(one_peer.graph_for(0, nullptr).name == "one-peer-exponential/0");
  CHECK(one_peer.graph_for(6, nullptr).name == "one-peer-exponential/2");
  CHECK(one_peer.graph_for(6, nullptr).graph == &one_peer.sequence().at(6));
  dt::SequencePolicy ring(dt::GraphSequence(dt::ring(8)));
  CHECK(ring.graph_for(5, nullptr).name == "ring");
  dt::AllReducePolicy allreduce;
  CHECK(allreduce.graph_for(3, nullptr).graph == nullptr);
  CHECK(allreduce.graph_for(3, nullptr).communication == dt::Communication::all_reduce);
}

TEST_CASE("topology::policy: periodic global averaging every H iterations") {
  dt::PeriodicAveragePolicy policy(dt::GraphSequence(dt::ring(8)), 4);
  int averages = 0;
  for (std::int64_t t = 0; t < 12; ++t) {
    const auto step = policy.graph_for(t, nullptr);
    const bool expected = (t + 1) % 4 == 0;
    CHECK((step.communication == dt::Communication::global_average) == expected);
    CHECK((step.graph == nullptr) == expected);
    averages += (step.communication == dt::Communication::global_average) ? 1 : 0;
  }
  CHECK(averages == 3);
  CHECK_THROWS_WITH(dt::PeriodicAveragePolicy(dt::GraphSequence(dt::ring(8)), 0),
                    "period: global averaging needs a period >= 1, got 0");
}

TEST_CASE("topology::policy: a switch schedule changes graphs at its start iterations") {
  std::vector<std::unique_ptr<dt::GraphPolicy>> stages;
  stages.push_back(std::make_unique<dt::SequencePolicy>(dt::GraphSequence(dt::exponential(8))));
  stages.push_back(std::make_unique<dt::SequencePolicy>(dt::one_peer_exponential(8)));
  dt::SwitchPolicy policy(std::move(stages), {0, 10});
  CHECK(policy.graph_for(9, nullptr).name == "exponential");
  CHECK(policy.graph_for(10, nullptr).name == "one-peer-exponential/1");

  std::vector<std::unique_ptr<dt::GraphPolicy>> two;
  two.push_back(std::make_unique<dt::AllReducePolicy>());
  two.push_back(std::make_unique<dt::AllReducePolicy>());
  CHECK_THROWS_WITH(dt::SwitchPolicy(std::move(two), {5, 10}),
                    "stage starts: the first stage must start at iteration 0, got 5");
}

TEST_CASE("topology::local: no messages, and every other step communicates") {
  dt::LocalPolicy local(8);
  const auto step = local.graph_for(3, nullptr);
  CHECK(step.name == "local");
  REQUIRE(step.graph != nullptr);
  CHECK(step.graph->nodes() == 8);
  CHECK_FALSE(dt::communicates(step));
  CHECK(dt::communicates(dt::AllReducePolicy().graph_for(0, nullptr)));
  CHECK(dt::communicates(dt::GlobalAveragePolicy().graph_for(0, nullptr)));
  dt::SequencePolicy ring(dt::GraphSequence(dt::ring(8)));
  CHECK(dt::communicates(ring.graph_for(0, nullptr)));
}

TEST_CASE("topology::ada: measures at its global averages and probes the one-step spread") {
  dt::AdaPolicy ada(ladder(16), options());
  dt::PolicyObservation latest;
  std::int64_t last_average = -1;
  // H = 4 spreads the replicas 3 times as far as one step does: inside the band [2.5, 5].
  const auto steps = drive(
      ada, 0, 30, [](std::int64_t k) { return k == 1 ? 1.0 : 3.0; }, latest, last_average);
  // A probe first (one step from the common start), then every 4th iteration, and after every 3 averages
  // another probe: two averages in a row.
  CHECK(averages(steps, 0) == std::vector<std::int64_t>{0, 4, 8, 12, 13, 17, 21, 25, 26});
  for (const auto& step : steps) {
    CHECK(step.observe == (step.communication == dt::Communication::global_average));
    if (step.communication != dt::Communication::global_average) {
      CHECK(step.name == "local");
    }
  }
  CHECK(ada.rung() == 0);
  CHECK(ada.reference_spread() == dbench::testing::approx(1.0));
  CHECK(ada.last_ratio() == dbench::testing::approx(3.0));
  // The step chosen right after a comparison carries the ratio; the probe's answer is no comparison.
  CHECK(std::isnan(steps[1].signal));
  CHECK(steps[5].signal == dbench::testing::approx(3.0));
  CHECK(std::isnan(steps[6].signal));
}

TEST_CASE("topology::ada: denser above the band at once, sparser after patience below it") {
  dt::AdaPolicy ada(ladder(16), options());
  dt::PolicyObservation latest;
  std::int64_t last_average = -1;
  // Drift: four local steps spread the replicas 6 times as far as one.
  auto steps = drive(
      ada, 0, 6, [](std::int64_t k) { return k == 1 ? 1.0 : 6.0; }, latest, last_average);
  CHECK(ada.rung() == 1);
  CHECK(ada.last_ratio() == dbench::testing::approx(6.0));
  CHECK(steps[5].signal == dbench::testing::approx(6.0));
  CHECK(steps[5].communication == dt::Communication::global_average);
  // On the global average every measurement is a one-step spread: ratio 1, below the band; after two of
  // them Ada tries the sparser rung again.
  steps = drive(
      ada, 6, 7, [](std::int64_t) { return 1.0; }, latest, last_average);
  CHECK(ada.rung() == 1);
  steps = drive(
      ada, 7, 12, [](std::int64_t) { return 1.0; }, latest, last_average);
  CHECK(ada.rung() == 0);
  // Three averages since the last probe (on the dense rung): the sparser rung starts with a probe.
  CHECK(averages(steps, 7) == std::vector<std::int64_t>{7, 11});
  CHECK(steps[1].name == "local");
}

TEST_CASE("topology::ada: the dwell time holds a rung") {
  dt::AdaOptions o = options();
  o.min_dwell = 20;
  dt::AdaPolicy ada(ladder(16), o);
  dt::PolicyObservation latest;
  std::int64_t last_average = -1;
  drive(
      ada, 0, 19, [](std::int64_t k) { return k == 1 ? 1.0 : 6.0; }, latest, last_average);
  CHECK(ada.rung() == 0);
  drive(
      ada, 19, 30, [](std::int64_t k) { return k == 1 ? 1.0 : 6.0; }, latest, last_average);
  CHECK(ada.rung() == 1);
}

TEST_CASE("topology::ada: rejects an empty ladder, an inverted band and a rung without its exchange") {
  CHECK_THROWS_WITH(dt::AdaPolicy({}, dt::AdaOptions{}), "ladder: needs at least one rung");
  dt::AdaOptions inverted;
  inverted.low = 0.1;
  inverted.high = 0.01;
  CHECK_THROWS_WITH(dt::AdaPolicy(ladder(8), inverted),
                    "band: needs 0 < low < high, got low 0.1 and high 0.01");
  std::vector<dt::AdaRung> bare(1);
  bare[0].name = "local:3";
  bare[0].period = 3;
  CHECK_THROWS_WITH(dt::AdaPolicy(std::move(bare), dt::AdaOptions{}),
                    "ladder: rung 'local:3': needs a global-average period >= 2 and an exchange between "
                    "averages, or period 1");
  dt::AdaOptions no_probe;
  no_probe.probe_every = 0;
  CHECK_THROWS_WITH(dt::AdaPolicy(ladder(8), no_probe),
                    "ada timing: the probe interval and patience must be >= 1 and the dwell >= 0, got 0, 2 "
                    "and 0");
}
