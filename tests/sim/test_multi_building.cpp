// The multi-building fabric: its links' closed forms for one message, the fast path against full fidelity on
// it, its platform errors and the campus preset.
#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "sim/platform.hpp"
#include "sim/timing.hpp"
#include "support/approx.hpp"
#include "timing_fixtures.hpp"
#include "topology/generators.hpp"
#include "topology/graph.hpp"

namespace sim = dbench::sim;
namespace topology = dbench::topology;
using dbench::sim::testing::check_fast_allreduce_matches_full;
using dbench::sim::testing::options;
using dbench::sim::testing::refused_key;
using dbench::sim::testing::relative_error;

namespace {

// One GPU per node, two nodes per leaf switch, two buildings of four nodes (eight GPUs): GPU 1 shares GPU
// 0's leaf, GPU 2 its building, GPU 4 is in the other building. Only the NIC (10 GB/s) and the building
// uplink (1 GB/s) can limit a lone message.
sim::PlatformSpec small_campus(int buildings = 2) {
  sim::PlatformSpec p = sim::make_platform(
      {.gpus = 1, .port = {1e12, 1e-6}, .nics = 1, .nic = {10e9, 2e-6}},
      {.fabric = sim::Fabric::multi_building, .link = {1e12, 0.5e-6}, .nodes_per_switch = 2});
  p.buildings = buildings;
  p.inter_building_bandwidth_Bps = 1e9;
  p.inter_building_latency_s = 20e-6;
  p.gpu_flops_per_s = 1e13;
  return p;
}

// A gossip round of one message, GPU `from` to GPU `to`, among n GPUs.
topology::Graph one_message(int n, int from, int to) {
  std::vector<std::vector<topology::MixingEntry>> rows(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) {
    rows[static_cast<std::size_t>(i)] = {{i, 1.0}};
  }
  rows[static_cast<std::size_t>(to)] = {{from, 0.5}, {to, 0.5}};
  return topology::Graph("one-message", std::move(rows));
}

}  // namespace

TEST_CASE("sim::multi_building: one message takes its route's latencies plus bytes over its narrowest link") {
  const sim::PlatformSpec p = small_campus();
  const std::int64_t bytes = 10'000'000;
  const double ends = 2.0 * (p.intra_node_latency_s + p.nic_latency_s);  // GPU ports and NICs
  const double same_leaf = ends + 2.0 * p.switch_latency_s;              // node ports
  const double same_building = ends + 4.0 * p.switch_latency_s;          // and the leaves' spine links
  const double other_building = same_building + 2.0 * p.inter_building_latency_s;
  const double nic_s = static_cast<double>(bytes) / p.nic_bandwidth_Bps;
  const double uplink_s = static_cast<double>(bytes) / p.inter_building_bandwidth_Bps;
  CHECK(sim::fabric_latency_s(p, 8) == dbench::testing::approx(4.0 * p.switch_latency_s + 40e-6));
  CHECK(sim::fabric_latency_s(small_campus(1), 8) == dbench::testing::approx(4.0 * p.switch_latency_s));
  for (const auto fidelity : {sim::Fidelity::fast, sim::Fidelity::full}) {
    CAPTURE(static_cast<int>(fidelity));
    sim::CommSimulator simulator(p, 8, options(fidelity));
    const double leaf = simulator.gossip(one_message(8, 0, 1), bytes).seconds;
    const double building = simulator.gossip(one_message(8, 0, 2), bytes).seconds;
    const double campus = simulator.gossip(one_message(8, 0, 4), bytes).seconds;
    CHECK(relative_error(leaf, same_leaf + nic_s) < 1e-3);
    CHECK(relative_error(building, same_building + nic_s) < 1e-3);
    CHECK(relative_error(campus, other_building + uplink_s) < 1e-3);
    // Between buildings: the uplinks' latency twice, and the uplink's bandwidth instead of the NIC's.
    CHECK(campus - building == dbench::testing::approx(2.0 * p.inter_building_latency_s + uplink_s - nic_s));
  }
}

TEST_CASE("sim::multi_building: messages leaving a building share its uplink") {
  const sim::PlatformSpec p = small_campus();
  const std::int64_t bytes = 10'000'000;
  // GPUs 0-3 each send to their counterpart 4-7: four messages through building 0's uplink at once.
  std::vector<std::vector<topology::MixingEntry>> rows(8);
  for (int i = 0; i < 4; ++i) {
    rows[static_cast<std::size_t>(i)] = {{i, 1.0}};
    rows[static_cast<std::size_t>(i + 4)] = {{i, 0.5}, {i + 4, 0.5}};
  }
  const topology::Graph across("across", std::move(rows));
  const double expected = 2.0 * (p.intra_node_latency_s + p.nic_latency_s) + 4.0 * p.switch_latency_s +
                          2.0 * p.inter_building_latency_s +
                          4.0 * static_cast<double>(bytes) / p.inter_building_bandwidth_Bps;
  for (const auto fidelity : {sim::Fidelity::fast, sim::Fidelity::full}) {
    CAPTURE(static_cast<int>(fidelity));
    sim::CommSimulator simulator(p, 8, options(fidelity));
    CHECK(relative_error(simulator.gossip(across, bytes).seconds, expected) < 1e-3);
  }
}

TEST_CASE("sim::multi_building: the fast path agrees with full fidelity for all-reduces and gossip") {
  // DGX H100 nodes, two per building and one per leaf switch (every link kind is crossed), on 2 and 4
  // buildings whose uplinks (two NICs' worth) are thin enough to matter.
  sim::PlatformSpec p = sim::platform_preset("dgx-h100-campus");
  p.nodes_per_switch = 1;
  p.inter_building_bandwidth_Bps = 100e9;
  for (const int buildings : {2, 4}) {
    p.buildings = buildings;
    const int n = 2 * buildings * p.gpus_per_node;
    CAPTURE(n);
    check_fast_allreduce_matches_full(p, n, {std::int64_t{10'000'000}, std::int64_t{4096}});
    sim::CommSimulator fast(p, n, options(sim::Fidelity::fast));
    sim::CommSimulator full(p, n, options(sim::Fidelity::full));
    for (const auto& graph : {topology::exponential(n), topology::one_peer_exponential(n).at(2),
                              topology::one_peer_exponential(n).at(4), topology::ring(n)}) {
      CAPTURE(graph.name());
      const std::int64_t bytes = 10'000'000;
      CHECK(relative_error(fast.gossip(graph, bytes).seconds, full.gossip(graph, bytes).seconds) < 0.01);
    }
  }
}

TEST_CASE("sim::multi_building: buildings and leaves that do not divide the nodes evenly agree too") {
  // 10 nodes in 2 buildings of 5, 3 nodes per leaf: leaves of 3 and 2 nodes in each building.
  sim::PlatformSpec p = small_campus();
  p.nodes_per_switch = 3;
  const int n = 10;
  sim::CommSimulator fast(p, n, options(sim::Fidelity::fast));
  sim::CommSimulator full(p, n, options(sim::Fidelity::full));
  const std::int64_t bytes = 1'000'000;
  for (const auto& graph : {topology::exponential(n), topology::ring(n)}) {
    CAPTURE(graph.name());
    CHECK(relative_error(fast.gossip(graph, bytes).seconds, full.gossip(graph, bytes).seconds) < 0.01);
  }
  // GPU 4 (building 0's second leaf) to GPU 5 (building 1's first).
  const double expected = 2.0 * (p.intra_node_latency_s + p.nic_latency_s) + 4.0 * p.switch_latency_s +
                          2.0 * p.inter_building_latency_s +
                          static_cast<double>(bytes) / p.inter_building_bandwidth_Bps;
  CHECK(relative_error(full.gossip(one_message(n, 4, 5), bytes).seconds, expected) < 1e-3);
}

TEST_CASE("sim::multi_building: bad buildings are rejected naming the key") {
  CHECK(sim::parse_fabric("multi-building") == sim::Fabric::multi_building);
  CHECK(sim::fabric_name(sim::Fabric::multi_building) == "multi-building");
  sim::PlatformSpec p = small_campus();
  CHECK(refused_key(p, 8) == "");
  p.buildings = 0;
  CHECK(refused_key(p, 8) == "platform.buildings");
  p = small_campus();
  p.inter_building_bandwidth_Bps = 0.0;
  CHECK(refused_key(p, 8) == "platform.inter_building_bandwidth_Bps");
  CHECK(refused_key(p, 1) == "");  // one node: one building, no uplink crossed
  p.inter_building_bandwidth_Bps = 1e20;
  CHECK(refused_key(p, 8) == "platform.inter_building_bandwidth_Bps");
  p = small_campus();
  p.inter_building_latency_s = -1e-6;
  CHECK(refused_key(p, 8) == "platform.inter_building_latency_s");
  CHECK_THROWS_WITH_AS(sim::CommSimulator(p, 8, {}), doctest::Contains("platform.inter_building_latency_s"),
                       sim::PlatformError);
}

TEST_CASE("sim::multi_building: the campus preset spreads its nodes over 4 buildings of dgx-h100 nodes") {
  const sim::PlatformSpec campus = sim::platform_preset("dgx-h100-campus");
  const sim::PlatformSpec h100 = sim::platform_preset("dgx-h100");
  CHECK(campus.fabric == sim::Fabric::multi_building);
  CHECK(campus.gpus_per_node == h100.gpus_per_node);
  CHECK(campus.switch_bandwidth_Bps == h100.switch_bandwidth_Bps);
  CHECK(campus.gpu_flops_per_s == h100.gpu_flops_per_s);
  const int nodes = 131072 / campus.gpus_per_node;
  CHECK(sim::nodes_per_building(campus, nodes) == 4096);
  CHECK(sim::building_count(campus, nodes) == 4);
  CHECK(sim::building_count(campus, 5) == 3);  // 2, 2 and 1 nodes
  // The uplink is 1/16 of a 4,096-node building's bisection (2,048 node links).
  CHECK(campus.inter_building_bandwidth_Bps ==
        dbench::testing::approx(2048.0 * campus.switch_bandwidth_Bps / 16.0));
  CHECK_NOTHROW(sim::validate(campus, 131072));
}
