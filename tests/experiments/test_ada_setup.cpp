// Ada as a config builds it: where it starts, and which rungs its cost-aware mode keeps.
#include <doctest/doctest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "experiments/config.hpp"
#include "experiments/sim_setup.hpp"
#include "experiments/timing_setup.hpp"
#include "sim/timing.hpp"
#include "topology/graph_policy.hpp"

namespace ex = dbench::experiments;
namespace topology = dbench::topology;

namespace {

ex::ExperimentConfig ada_config(const std::string& extra) {
  return ex::load_config("[train]\nworkers = 64\n[algorithm]\ngraph = \"ada\"\n" + extra);
}

// The family of a schedule entry: "one-peer-exponential/3" -> "one-peer-exponential".
std::string family(const topology::ScheduleStep& step) {
  return step.name.substr(0, step.name.find('/'));
}

// Walks Ada up its ladder by reporting replicas far out of band at every check; returns the rungs visited.
std::vector<std::string> climb(topology::GraphPolicy& policy, int checks) {
  std::vector<std::string> visited;
  topology::PolicyObservation far;
  far.consensus_distance = 1.0;
  far.mean_norm_sq = 1.0;
  for (std::int64_t t = 0; t <= checks; ++t) {
    far.iteration = t;
    const std::string rung = family(policy.graph_for(t, t == 0 ? nullptr : &far));
    if (visited.empty() || visited.back() != rung) {
      visited.push_back(rung);
    }
  }
  return visited;
}

// Seconds per iteration of one graph or policy alone, timed the way `dbench simulate` times a schedule.
double seconds_alone(const std::string& algorithm_section) {
  const ex::ExperimentConfig config =
      ex::load_config("[train]\nworkers = 64\n[algorithm]\n" + algorithm_section);
  auto policy = ex::make_policy(config);
  std::vector<topology::ScheduleStep> steps;
  for (std::int64_t t = 0; t < 16; ++t) {
    steps.push_back(policy->graph_for(t, nullptr));
  }
  return dbench::sim::time_schedule(ex::timing_spec(config), steps, false).seconds_per_iteration;
}

}  // namespace

TEST_CASE("experiments::make_policy: ada_start picks the rung of iteration 0") {
  const std::string ladder = "ada_ladder = \"one-peer-exponential,exponential,global-average\"\n";
  CHECK(family(ex::make_policy(ada_config(ladder))->graph_for(0, nullptr)) == "one-peer-exponential");
  CHECK(family(ex::make_policy(ada_config(ladder + "ada_start = \"densest\"\n"))->graph_for(0, nullptr)) ==
        "global-average");
  CHECK(
      family(ex::make_policy(ada_config(ladder + "ada_start = \"exponential\"\n"))->graph_for(0, nullptr)) ==
      "exponential");
  // The loader refuses it, and make_policy on a config built in code names the same key.
  CHECK_THROWS_WITH_AS(
      ada_config(ladder + "ada_start = \"torus\"\n"),
      doctest::Contains("algorithm.ada_start: 'torus' is neither sparsest, densest nor a rung"),
      ex::ConfigError);
  ex::ExperimentConfig config = ada_config(ladder);
  config.algorithm.ada_start = "torus";
  try {
    ex::make_policy(config);
    FAIL("a start outside the ladder was accepted");
  } catch (const ex::ConfigKeyError& e) {
    CHECK(e.key() == "algorithm.ada_start");
  }
}

TEST_CASE("experiments::make_policy: without cost-awareness Ada climbs every rung of its ladder") {
  auto policy = ex::make_policy(
      ada_config("ada_ladder = \"one-peer-exponential,ring,exponential,global-average\"\nada_min_dwell = 0\n"
                 "ada_check_every = 1\n"));
  CHECK(climb(*policy, 10) ==
        std::vector<std::string>{"one-peer-exponential", "ring", "exponential", "global-average"});
}

TEST_CASE("experiments::make_policy: cost-aware Ada keeps only rungs cheaper than every denser rung") {
  const std::vector<std::string> names = {"one-peer-exponential", "ring", "exponential", "global-average"};
  // Each rung timed on its own (Frontier-like preset, ResNet-50, the defaults of [platform]).
  std::vector<double> seconds;
  for (const auto& name : names) {
    seconds.push_back(name == "global-average" ? seconds_alone("kind = \"centralized\"\n")
                                               : seconds_alone("graph = \"" + name + "\"\n"));
  }
  std::vector<std::string> expected;
  for (std::size_t i = 0; i < names.size(); ++i) {
    bool beaten = false;
    for (std::size_t j = i + 1; j < names.size(); ++j) {
      beaten = beaten || seconds[j] <= seconds[i];
    }
    if (!beaten) {
      expected.push_back(names[i]);
    }
  }
  // The exponential graph's 6 neighbours per GPU cost more than the all-reduce on this platform: dropped.
  CHECK(seconds[2] > seconds[3]);
  const auto config = ada_config(
      "ada_ladder = \"one-peer-exponential,ring,exponential,global-average\"\nada_min_dwell = 0\n"
      "ada_check_every = 1\nada_cost_aware = true\n");
  auto policy = ex::make_policy(config);
  CHECK(climb(*policy, 10) == expected);
  CHECK(expected.size() < names.size());
  // The same choice as flags over the ladder, the form real workers receive from rank 0.
  const std::vector<bool> kept = ex::ada_rungs_kept(config);
  REQUIRE(kept.size() == names.size());
  std::vector<std::string> kept_names;
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (kept[i]) {
      kept_names.push_back(names[i]);
    }
  }
  CHECK(kept_names == expected);
}

TEST_CASE("experiments::make_policy: Ada uses the rungs it is given and simulates nothing") {
  const auto config = ada_config(
      "ada_ladder = \"one-peer-exponential,ring,exponential,global-average\"\nada_min_dwell = 0\n"
      "ada_check_every = 1\nada_cost_aware = true\n");
  auto policy = ex::make_policy(config, std::vector<bool>{true, false, true, false});
  CHECK(climb(*policy, 10) == std::vector<std::string>{"one-peer-exponential", "exponential"});
  // Flags for another ladder are a programming error, not a config one.
  CHECK_THROWS_AS(ex::make_policy(config, std::vector<bool>{true, true}), std::invalid_argument);
}
