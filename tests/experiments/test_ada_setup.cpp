// Ada as a config builds it: where it starts, and which rungs its cost-aware mode keeps.
#include <doctest/doctest.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "experiments/config.hpp"
#include "experiments/sim_setup.hpp"
#include "experiments/timing_setup.hpp"
#include "sim/timing.hpp"
#include "support/approx.hpp"
#include "topology/graph_policy.hpp"

namespace ex = dbench::experiments;
namespace topology = dbench::topology;

namespace {

ex::ExperimentConfig ada_config(const std::string& extra) {
  return ex::load_config("[train]\nworkers = 64\n[algorithm]\ngraph = \"ada\"\n" + extra);
}

const std::string kLadder = "ada_ladder = \"one-peer-exponential:4,local:2,ring:2,global-average\"\n";
const std::vector<std::string> kRungs = {"one-peer-exponential:4", "local:2", "ring:2", "global-average"};

// The family of a schedule entry: "one-peer-exponential/3" -> "one-peer-exponential".
std::string family(const topology::ScheduleStep& step) {
  return step.name.substr(0, step.name.find('/'));
}

// Walks Ada up its ladder by answering every measurement with replicas far apart (100 times the one-step
// spread); returns the rungs visited until the densest.
std::vector<std::string> climb(topology::GraphPolicy& policy, int iterations) {
  auto& ada = dynamic_cast<topology::AdaPolicy&>(policy);
  std::vector<std::string> visited = {ada.rung_name()};
  topology::PolicyObservation latest;
  std::int64_t last_average = -1;
  for (std::int64_t t = 0; t < iterations; ++t) {
    const topology::ScheduleStep step = policy.graph_for(t, &latest);
    if (step.observe) {
      latest.iteration = t + 1;
      latest.consensus_distance = t - last_average == 1 ? 1.0 : 100.0;
    }
    if (step.communication == topology::Communication::global_average) {
      last_average = t;
    }
    if (visited.back() != ada.rung_name()) {
      visited.push_back(ada.rung_name());
    }
    if (ada.rung_name() == "global-average") {
      break;  // the top: from here a ratio of 1 sends Ada back down, which is not what this follows
    }
  }
  return visited;
}

// Seconds per iteration of one rung alone (its exchange, and a global average every H iterations), timed
// the way `dbench simulate` times a schedule.
double seconds_alone(const std::string& rung) {
  const std::size_t colon = rung.find(':');
  const std::string section =
      colon == std::string::npos
          ? "graph = \"" + rung + "\"\n"
          : "graph = \"" + rung.substr(0, colon) + "\"\nglobal_every = " + rung.substr(colon + 1) + "\n";
  const ex::ExperimentConfig config = ex::load_config("[train]\nworkers = 64\n[algorithm]\n" + section);
  auto policy = ex::make_policy(config);
  std::vector<topology::ScheduleStep> steps;
  for (std::int64_t t = 0; t < 16; ++t) {
    steps.push_back(policy->graph_for(t, nullptr));
  }
  return dbench::sim::time_schedule(ex::make_timing_spec(config), steps, false).seconds_per_iteration;
}

}  // namespace

TEST_CASE("experiments::make_policy: ada_start picks the rung of iteration 0") {
  // Iteration 0 measures the one-step spread (a global average); the rung shows from iteration 1.
  const auto second_step = [](const std::string& extra) {
    auto policy = ex::make_policy(ada_config(kLadder + extra));
    policy->graph_for(0, nullptr);
    return family(policy->graph_for(1, nullptr));
  };
  CHECK(second_step("ada_start = \"sparsest\"\n") == "one-peer-exponential");
  CHECK(second_step("") == "global-average");
  CHECK(second_step("ada_start = \"local:2\"\n") == "local");
  // The loader refuses it, and make_policy on a config built in code names the same key.
  CHECK_THROWS_WITH_AS(
      ada_config(kLadder + "ada_start = \"torus\"\n"),
      doctest::Contains("algorithm.ada_start: 'torus' is neither sparsest, densest nor a rung"),
      ex::ConfigError);
  ex::ExperimentConfig config = ada_config(kLadder);
  config.algorithm.ada_start = "torus";
  try {
    ex::make_policy(config);
    FAIL("a start outside the ladder was accepted");
  } catch (const ex::ConfigKeyError& e) {
    CHECK(e.key() == "algorithm.ada_start");
  }
}

TEST_CASE("experiments::make_policy: a rung names its exchange and its global-average period") {
  const auto refused = [](const std::string& ladder, const char* reason) {
    CAPTURE(ladder);
    CHECK_THROWS_WITH_AS(ada_config("ada_ladder = \"" + ladder + "\"\n"), doctest::Contains(reason),
                         ex::ConfigError);
  };
  refused("ring,global-average",
          "algorithm.ada_ladder: rung 'ring': write global-average, or the exchange between global averages "
          "and their period, e.g. local:4 or ring:4");
  refused("local:1",
          "rung 'local:1': the period after ':' must be a whole number of iterations in [2, 1000], "
          "got '1'");
  refused("local:x2", "got 'x2'");
  refused("allreduce:2",
          "rung 'allreduce:2': between global averages the replicas take local steps (local) or gossip on a "
          "graph kind, not allreduce");
  refused("moebius:2", "algorithm.ada_ladder: unknown kind 'moebius'");
}

TEST_CASE("experiments::make_policy: without cost-awareness Ada climbs every rung of its ladder") {
  auto policy = ex::make_policy(ada_config(kLadder + "ada_start = \"sparsest\"\n"));
  const auto visited = climb(*policy, 40);
  CAPTURE(fmt::format("{}", fmt::join(visited, " ")));
  CHECK(visited == kRungs);
}

// The rungs a cost-aware Ada keeps by the rule, from each rung timed alone: those that save at least
// `saving` of the cheapest denser rung's seconds per iteration.
std::vector<std::string> kept_by_rule(const std::vector<double>& seconds, double saving) {
  std::vector<std::string> kept;
  for (std::size_t i = 0; i < kRungs.size(); ++i) {
    bool beaten = false;
    for (std::size_t j = i + 1; j < kRungs.size(); ++j) {
      beaten = beaten || seconds[i] >= (1.0 - saving) * seconds[j];
    }
    if (!beaten) {
      kept.push_back(kRungs[i]);
    }
  }
  return kept;
}

TEST_CASE("experiments::make_policy: cost-aware Ada keeps only rungs that save time on every denser rung") {
  // Each rung timed on its own (Frontier-like preset, ResNet-50, the defaults of [platform]).
  std::vector<double> seconds;
  for (const auto& name : kRungs) {
    seconds.push_back(seconds_alone(name));
  }
  CAPTURE(fmt::format("{}", fmt::join(seconds, " ")));
  // Local steps wait for no one and send nothing: the cheapest rung.
  CHECK(seconds[1] < seconds[3]);
  for (const double saving : {0.0, 0.15, 0.5}) {
    CAPTURE(saving);
    const auto config = ada_config(kLadder + fmt::format("ada_start = \"sparsest\"\nada_cost_aware = true\n"
                                                         "ada_min_saving = {}\n",
                                                         saving));
    const std::vector<std::string> expected = kept_by_rule(seconds, saving);
    auto policy = ex::make_policy(config);
    CHECK(climb(*policy, 40) == expected);
    CHECK(expected.size() < kRungs.size());
    // The same choice as flags over the ladder, the form real workers receive from rank 0.
    const std::vector<bool> kept = ex::ada_rungs_kept(config);
    REQUIRE(kept.size() == kRungs.size());
    std::vector<std::string> kept_names;
    for (std::size_t i = 0; i < kRungs.size(); ++i) {
      if (kept[i]) {
        kept_names.push_back(kRungs[i]);
      }
    }
    CHECK(kept_names == expected);
  }
  // The default asks for 10 %; a saving the local steps do not reach leaves the global average alone.
  CHECK(ada_config(kLadder).algorithm.ada_min_saving == dbench::testing::approx(0.10));
  const double local_saving = 1.0 - seconds[1] / seconds[3];
  const auto strict = ada_config(kLadder + fmt::format("ada_cost_aware = true\nada_min_saving = {}\n",
                                                       std::min(0.99, local_saving + 0.01)));
  const std::vector<bool> kept = ex::ada_rungs_kept(strict);
  CHECK_FALSE(kept[1]);
  CHECK(kept[3]);
  CHECK_THROWS_WITH_AS(ada_config("ada_min_saving = 1.0\n"), doctest::Contains("algorithm.ada_min_saving"),
                       ex::ConfigError);
}

TEST_CASE("experiments::make_policy: Ada uses the rungs it is given and simulates nothing") {
  const auto config = ada_config(kLadder + "ada_start = \"sparsest\"\nada_cost_aware = true\n");
  auto policy = ex::make_policy(config, std::vector<bool>{true, false, true, true});
  CHECK(climb(*policy, 40) == std::vector<std::string>{"one-peer-exponential:4", "ring:2", "global-average"});
  // Flags for another ladder are a programming error, not a config one.
  CHECK_THROWS_AS(ex::make_policy(config, std::vector<bool>{true, true}), std::invalid_argument);
}

TEST_CASE("experiments::numerics_spec: ada_shared_momentum reaches the engines for Ada alone") {
  const dbench::models::Dataset data = [] {
    dbench::models::Dataset d;
    d.channels = 1;
    d.height = 28;
    d.width = 28;
    d.classes = 10;
    return d;
  }();
  CHECK_FALSE(ada_config("").algorithm.ada_shared_momentum);
  CHECK_FALSE(ex::numerics_spec(ada_config(""), data).shared_momentum);
  CHECK(ex::numerics_spec(ada_config("ada_shared_momentum = true\n"), data).shared_momentum);
  // Another graph leaves its momentum alone even with the key set.
  const auto ring =
      ex::load_config("[train]\nworkers = 64\n[algorithm]\ngraph = \"ring\"\nada_shared_momentum = true\n");
  CHECK_FALSE(ex::numerics_spec(ring, data).shared_momentum);
  CHECK_THROWS_WITH_AS(ada_config("ada_shared_momentum = \"yes\"\n"),
                       doctest::Contains("algorithm.ada_shared_momentum"), ex::ConfigError);
}
