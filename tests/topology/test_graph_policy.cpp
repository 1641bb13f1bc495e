// Graph policies: the schedule each produces from iterations and observations.
#include <doctest/doctest.h>

#include <memory>
#include <vector>

#include "topology/generators.hpp"
#include "topology/graph_policy.hpp"

namespace {

namespace dt = dbench::topology;

std::vector<std::unique_ptr<dt::GraphPolicy>> ladder(int n) {
  std::vector<std::unique_ptr<dt::GraphPolicy>> rungs;
  rungs.push_back(std::make_unique<dt::SequencePolicy>(dt::one_peer_exponential(n)));
  rungs.push_back(std::make_unique<dt::SequencePolicy>(dt::GraphSequence(dt::exponential(n))));
  rungs.push_back(std::make_unique<dt::GlobalAveragePolicy>());
  return rungs;
}

dt::PolicyObservation seen(std::int64_t iteration, double relative) {
  dt::PolicyObservation o;
  o.iteration = iteration;
  o.mean_norm_sq = 100.0;
  o.consensus_distance = relative * 100.0;
  return o;
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
  CHECK_FALSE(allreduce.graph_for(3, nullptr).average_parameters);
}

TEST_CASE("topology::policy: periodic global averaging every H iterations") {
  dt::PeriodicAveragePolicy policy(dt::GraphSequence(dt::ring(8)), 4);
  int averages = 0;
  for (std::int64_t t = 0; t < 12; ++t) {
    const auto step = policy.graph_for(t, nullptr);
    const bool expected = (t + 1) % 4 == 0;
    CHECK(step.average_parameters == expected);
    CHECK((step.graph == nullptr) == expected);
    averages += step.average_parameters ? 1 : 0;
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

TEST_CASE("topology::ada: denser above the band after the dwell time, sparser after patience below it") {
  dt::AdaOptions options;
  options.low = 0.01;
  options.high = 0.05;
  options.check_every = 10;
  options.min_dwell = 20;
  options.patience = 2;
  dt::AdaPolicy ada(ladder(16), options);
  CHECK(ada.graph_for(0, nullptr).name == "one-peer-exponential/0");

  // Above the band before the dwell time has passed: stays.
  auto o = seen(10, 0.2);
  ada.graph_for(10, &o);
  CHECK(ada.rung() == 0);
  // Above the band after it: one rung denser, and the same observation is not used twice.
  o = seen(20, 0.2);
  CHECK(ada.graph_for(20, &o).name == "exponential");
  CHECK(ada.graph_for(21, &o).name == "exponential");
  // Inside the band: stays.
  o = seen(50, 0.03);
  ada.graph_for(50, &o);
  CHECK(ada.rung() == 1);
  // Above again: to the top rung, where it stays however high the disagreement.
  o = seen(60, 0.2);
  const auto top = ada.graph_for(60, &o);
  CHECK(top.average_parameters);
  CHECK(ada.rung() == 2);
  o = seen(100, 0.5);
  ada.graph_for(100, &o);
  CHECK(ada.rung() == 2);
  // Below the band: only after `patience` consecutive checks.
  o = seen(110, 0.001);
  ada.graph_for(110, &o);
  CHECK(ada.rung() == 2);
  o = seen(120, 0.001);
  ada.graph_for(120, &o);
  CHECK(ada.rung() == 1);
  // A check inside the band resets the count.
  o = seen(150, 0.001);
  ada.graph_for(150, &o);
  o = seen(160, 0.02);
  ada.graph_for(160, &o);
  o = seen(170, 0.001);
  ada.graph_for(170, &o);
  CHECK(ada.rung() == 1);
}

TEST_CASE("topology::ada: rejects an empty ladder and an inverted band") {
  CHECK_THROWS_WITH(dt::AdaPolicy({}, dt::AdaOptions{}), "ladder: needs at least one rung");
  dt::AdaOptions inverted;
  inverted.low = 0.1;
  inverted.high = 0.01;
  CHECK_THROWS_WITH(dt::AdaPolicy(ladder(8), inverted),
                    "band: needs 0 <= low < high, got low 0.1 and high 0.01");
}
