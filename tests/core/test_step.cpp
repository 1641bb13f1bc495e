#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "core/step.hpp"
#include "topology/generators.hpp"
#include "topology/graph_policy.hpp"

namespace core = dbench::core;
namespace topology = dbench::topology;

namespace {

/// An engine that records which parts run_step() calls, in order.
class RecordingEngine final : public core::StepEngine {
 public:
  explicit RecordingEngine(bool shared) : shared_(shared) {}

  void local_step(std::int64_t t, const topology::ScheduleStep& step, bool measure) override {
    calls.push_back("local_step " + std::to_string(t) + " " + step.name + (measure ? " measured" : ""));
  }
  void all_reduce_step(std::int64_t t) override { calls.push_back("all_reduce_step " + std::to_string(t)); }
  void measure() override { calls.push_back("measure"); }
  void global_average(bool measured) override {
    calls.push_back(measured ? "global_average measured" : "global_average");
  }
  bool shares_momentum() const override { return shared_; }
  void share_momentum() override { calls.push_back("share_momentum"); }
  void gossip(std::int64_t t, const topology::Graph& graph) override {
    calls.push_back("gossip " + std::to_string(t) + " " + graph.name());
  }

  std::vector<std::string> calls;

 private:
  bool shared_;
};

using Calls = std::vector<std::string>;

Calls calls_of(const topology::ScheduleStep& step, bool measure, bool shared = false) {
  RecordingEngine engine(shared);
  core::run_step(engine, 7, step, measure);
  return engine.calls;
}

}  // namespace

TEST_CASE("core::step: each communication kind calls the engine's parts in the iteration's order") {
  const topology::Graph ring = topology::ring(4);
  topology::LocalPolicy local(4);
  const topology::ScheduleStep none = local.graph_for(7, nullptr);
  const topology::ScheduleStep all_reduce = topology::AllReducePolicy().graph_for(7, nullptr);
  const topology::ScheduleStep average = topology::GlobalAveragePolicy().graph_for(7, nullptr);
  const topology::ScheduleStep gossip{"ring", &ring, topology::Communication::gossip};
  REQUIRE(none.communication == topology::Communication::none);
  REQUIRE(all_reduce.communication == topology::Communication::all_reduce);
  REQUIRE(average.communication == topology::Communication::global_average);

  CHECK(calls_of(none, false) == Calls{"local_step 7 local"});
  CHECK(calls_of(none, true) == Calls{"local_step 7 local measured", "measure"});
  CHECK(calls_of(all_reduce, false) == Calls{"all_reduce_step 7"});
  CHECK(calls_of(all_reduce, true) == Calls{"all_reduce_step 7", "measure"});
  CHECK(calls_of(average, false) == Calls{"local_step 7 global-average", "global_average"});
  CHECK(calls_of(average, true) ==
        Calls{"local_step 7 global-average measured", "measure", "global_average measured"});
  CHECK(calls_of(gossip, false) == Calls{"local_step 7 ring", "gossip 7 " + ring.name()});
  CHECK(calls_of(gossip, true) == Calls{"local_step 7 ring measured", "measure", "gossip 7 " + ring.name()});
}

TEST_CASE("core::step: the shared momentum follows every global average, and nothing else") {
  const topology::Graph ring = topology::ring(4);
  const topology::ScheduleStep average = topology::GlobalAveragePolicy().graph_for(0, nullptr);
  CHECK(calls_of(average, false, true) ==
        Calls{"local_step 7 global-average", "global_average", "share_momentum"});
  CHECK(calls_of(average, true, true) == Calls{"local_step 7 global-average measured", "measure",
                                               "global_average measured", "share_momentum"});
  CHECK(calls_of({"ring", &ring, topology::Communication::gossip}, false, true) ==
        Calls{"local_step 7 ring", "gossip 7 " + ring.name()});
  CHECK(calls_of(topology::AllReducePolicy().graph_for(0, nullptr), false, true) ==
        Calls{"all_reduce_step 7"});
}

TEST_CASE("core::step: the policies name each step's communication") {
  // Gossip on a graph with edges; none on the identity; the all-reduces without a graph.
  topology::SequencePolicy exponential(topology::GraphSequence(topology::exponential(8)));
  CHECK(exponential.graph_for(0, nullptr).communication == topology::Communication::gossip);
  topology::PeriodicAveragePolicy periodic(topology::GraphSequence(topology::ring(8)), 3);
  CHECK(periodic.graph_for(1, nullptr).communication == topology::Communication::gossip);
  CHECK(periodic.graph_for(2, nullptr).communication == topology::Communication::global_average);
  CHECK(periodic.graph_for(2, nullptr).graph == nullptr);
  topology::LocalPolicy local(8);
  CHECK(local.graph_for(0, nullptr).communication == topology::Communication::none);
  CHECK_FALSE(topology::communicates(local.graph_for(0, nullptr)));
}
