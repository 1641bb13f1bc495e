#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "sim/max_min_flows.hpp"
#include "sim/platform.hpp"
#include "sim/timing.hpp"
#include "support/approx.hpp"
#include "timing_fixtures.hpp"
#include "topology/generators.hpp"

namespace sim = dbench::sim;
namespace topology = dbench::topology;
using dbench::sim::testing::relative_error;

namespace {

/// Flows given as (bytes, links crossed) over links of the given capacities.
sim::MaxMinFlows flows(std::vector<double> capacity,
                       std::vector<std::pair<double, std::vector<std::uint32_t>>> f) {
  sim::MaxMinFlows out;
  out.capacity_Bps = std::move(capacity);
  out.route_begin.push_back(0);
  for (auto& [bytes, links] : f) {
    out.bytes.push_back(bytes);
    out.route_links.insert(out.route_links.end(), links.begin(), links.end());
    out.route_begin.push_back(static_cast<std::uint32_t>(out.route_links.size()));
  }
  return out;
}

}  // namespace

TEST_CASE("sim::max_min_flows: a lone flow takes its bytes over its narrowest link") {
  const auto t = sim::max_min_finish_times(flows({10.0, 4.0, 8.0}, {{20.0, {0, 1, 2}}}));
  CHECK(t.at(0) == dbench::testing::approx(5.0).epsilon(1e-15));
}

TEST_CASE("sim::max_min_flows: two flows halve a link until the shorter one ends") {
  // a at C/2 ends at 2a/C; b then has b - a left at C: (a + b) / C.
  const auto t = sim::max_min_finish_times(flows({2.0}, {{3.0, {0}}, {5.0, {0}}}));
  CHECK(t.at(0) == dbench::testing::approx(3.0).epsilon(1e-15));
  CHECK(t.at(1) == dbench::testing::approx(4.0).epsilon(1e-15));
}

TEST_CASE("sim::max_min_flows: a flow limited elsewhere leaves its share to the others") {
  // Links 0 (10 B/s) and 1 (4 B/s); A (10 B) crosses both, B (16 B) only link 0, C (2 B) only link 1.
  // Until t = 1: link 1 is the bottleneck, A and C at 2, B at the 8 link 0 has left; C ends.
  // Until t = 7/3: A alone on link 1 at 4, B at 6; B ends (8 B left at 6 B/s). Then A's last 8/3 B at 4.
  const auto t = sim::max_min_finish_times(flows({10.0, 4.0}, {{10.0, {0, 1}}, {16.0, {0}}, {2.0, {1}}}));
  CHECK(t.at(2) == dbench::testing::approx(1.0).epsilon(1e-15));
  CHECK(t.at(1) == dbench::testing::approx(7.0 / 3.0).epsilon(1e-15));
  CHECK(t.at(0) == dbench::testing::approx(3.0).epsilon(1e-15));
}

TEST_CASE("sim::max_min_flows: a link crossed twice counts twice and empty flows end at once") {
  const auto t = sim::max_min_finish_times(flows({4.0}, {{8.0, {0, 0}}, {0.0, {0}}, {3.0, {}}}));
  CHECK(t.at(0) == dbench::testing::approx(4.0).epsilon(1e-15));
  CHECK(t.at(1) == 0.0);
  CHECK(t.at(2) == 0.0);
}

// The fast path solves each pattern as max-min sharing over SimGrid's routes; a --cfg SimGrid option makes it
// run SimGrid itself (here one that changes nothing). Both must agree: the model is SimGrid's, solved
// exactly.
TEST_CASE("sim::max_min_flows: the fast path's patterns match SimGrid's own simulation to 1e-9") {
  for (const std::string preset : {"frontier", "dgx-h100", "summit"}) {
    const sim::PlatformSpec p = sim::platform_preset(preset);
    const int n = preset == "summit" ? 48 : 64;
    sim::TimingOptions solved;
    solved.fidelity = sim::Fidelity::fast;
    sim::TimingOptions simgrid = solved;
    simgrid.simgrid_args = {"--cfg=network/model:CM02"};
    double worst = 0.0;
    for (const auto algorithm : {sim::AllReduceAlgorithm::ring, sim::AllReduceAlgorithm::hierarchical,
                                 sim::AllReduceAlgorithm::tree}) {
      solved.allreduce = simgrid.allreduce = algorithm;
      sim::CommSimulator a(p, n, solved);
      sim::CommSimulator b(p, n, simgrid);
      for (const std::int64_t bytes : {std::int64_t{4096}, std::int64_t{25} << 20}) {
        CAPTURE(preset);
        CAPTURE(sim::allreduce_name(algorithm));
        CAPTURE(bytes);
        const double error = relative_error(a.allreduce(bytes).seconds, b.allreduce(bytes).seconds);
        CHECK(error < 1e-9);
        worst = std::max(worst, error);
      }
    }
    sim::CommSimulator a(p, n, solved);
    sim::CommSimulator b(p, n, simgrid);
    for (const auto& graph :
         {topology::exponential(n), topology::one_peer_exponential(n).at(1), topology::torus(n)}) {
      const auto ta = a.gossip(graph, 50'000'000).message_times;
      const auto tb = b.gossip(graph, 50'000'000).message_times;
      REQUIRE(ta.size() == tb.size());
      for (std::size_t i = 0; i < ta.size(); ++i) {
        CAPTURE(preset);
        CAPTURE(graph.name());
        const double error = relative_error(ta[i].seconds, tb[i].seconds);
        CHECK(error < 1e-9);
        worst = std::max(worst, error);
      }
    }
    MESSAGE(preset << ": largest relative difference " << worst);
  }
}
