// Achieved bandwidths, collective start, the two protocols, in-switch reduction and rails, against closed
// forms, in both fidelities.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>

#include "sim/platform.hpp"
#include "sim/timing.hpp"
#include "support/approx.hpp"
#include "timing_fixtures.hpp"
#include "topology/generators.hpp"

namespace sim = dbench::sim;
namespace topology = dbench::topology;
using dbench::sim::testing::homogeneous_star;
using dbench::sim::testing::relative_error;

namespace {

sim::TimingOptions options(sim::Fidelity fidelity, sim::AllReduceAlgorithm algorithm) {
  sim::TimingOptions o;
  o.fidelity = fidelity;
  o.allreduce = algorithm;
  return o;
}

// The homogeneous star with the NIC at half its line rate, a collective start and a bulk handshake.
sim::PlatformSpec star_with_protocols() {
  sim::PlatformSpec p = homogeneous_star();
  p.network_efficiency = 0.5;
  p.collective_latency_s = 5e-6;
  p.bulk_step_latency_s = 2e-6;
  return p;
}

double star_alpha(const sim::PlatformSpec& p) {
  return 2.0 * (p.intra_node_latency_s + p.nic_latency_s + p.switch_latency_s);
}

// One node of 8 GPUs on a switch that reduces at half the port's line rate.
sim::PlatformSpec nvls_node() {
  sim::PlatformSpec p =
      sim::make_platform({.gpus = 8, .port = {100e9, 1e-6}, .nic = {10e9, 0.0}}, {.link = {10e9, 0.0}});
  p.intra_node_efficiency = 0.8;
  p.nvls_efficiency = 0.5;
  p.collective_latency_s = 4e-6;
  p.bulk_step_latency_s = 3e-6;
  p.gpu_flops_per_s = 1e13;
  return p;
}

// The key a simulator forced to `algorithm` is refused under, or "accepted".
std::string refusal(const sim::PlatformSpec& platform, int gpus, sim::AllReduceAlgorithm algorithm) {
  try {
    sim::CommSimulator simulator(platform, gpus, options(sim::Fidelity::fast, algorithm));
  } catch (const sim::PlatformError& e) {
    return e.key();
  }
  return "accepted";
}

}  // namespace

TEST_CASE("sim::timing: a ring all-reduce runs the cheaper protocol, each as its closed form") {
  const sim::PlatformSpec p = star_with_protocols();
  const double beta = p.nic_bandwidth_Bps * p.network_efficiency;
  for (const int n : {4, 16}) {
    for (const std::int64_t bytes : {std::int64_t{4096}, std::int64_t{1} << 20, std::int64_t{64} << 20}) {
      const double s = static_cast<double>(bytes);
      // Bulk: every step pays the handshake; low latency: twice the bytes, no handshake.
      const double bulk =
          p.collective_latency_s + 2.0 * (n - 1) * (star_alpha(p) + p.bulk_step_latency_s + s / (n * beta));
      const double low_latency =
          p.collective_latency_s + 2.0 * (n - 1) * (star_alpha(p) + 2.0 * s / (n * beta));
      for (const auto fidelity : {sim::Fidelity::fast, sim::Fidelity::full}) {
        CAPTURE(n);
        CAPTURE(bytes);
        CAPTURE(static_cast<int>(fidelity));
        sim::CommSimulator simulator(p, n, options(fidelity, sim::AllReduceAlgorithm::ring));
        const double t = simulator.allreduce(bytes).seconds;
        const sim::AllReduceChoice choice = simulator.allreduce_algorithms().at(bytes);
        CHECK(choice.algorithm == sim::AllReduceAlgorithm::ring);
        // Beyond 4 MiB the low-latency protocol is not tried.
        const double expected = bytes > (std::int64_t{4} << 20) ? bulk : std::min(bulk, low_latency);
        CHECK(choice.protocol ==
              (expected == low_latency ? sim::Protocol::low_latency : sim::Protocol::bulk));
        CHECK(relative_error(t, expected) < 0.01);
      }
    }
  }
}

TEST_CASE("sim::timing: without a handshake to save, the low-latency protocol is never chosen") {
  sim::PlatformSpec p = star_with_protocols();
  p.bulk_step_latency_s = 0.0;
  sim::CommSimulator simulator(p, 8, options(sim::Fidelity::fast, sim::AllReduceAlgorithm::automatic));
  for (const std::int64_t bytes : {std::int64_t{8}, std::int64_t{4096}, std::int64_t{1} << 20}) {
    simulator.allreduce(bytes);
    CHECK(simulator.allreduce_algorithms().at(bytes).protocol == sim::Protocol::bulk);
  }
}

TEST_CASE("sim::timing: in-switch reduction moves S (n+1)/n per port at its own achieved rate") {
  const sim::PlatformSpec p = nvls_node();
  const int n = 8;
  const std::int64_t bytes = std::int64_t{1} << 30;
  const double s = static_cast<double>(bytes);
  const double expected = p.collective_latency_s + 2.0 * p.bulk_step_latency_s +
                          2.0 * p.intra_node_latency_s +
                          s * (n + 1) / n / (p.intra_node_bandwidth_Bps * p.nvls_efficiency);
  for (const auto fidelity : {sim::Fidelity::fast, sim::Fidelity::full}) {
    CAPTURE(static_cast<int>(fidelity));
    sim::CommSimulator simulator(p, n, options(fidelity, sim::AllReduceAlgorithm::nvls));
    const sim::CommTiming t = simulator.allreduce(bytes);
    CHECK(relative_error(t.seconds, expected) < 0.01);
    CHECK(t.bytes_sent_per_gpu == dbench::testing::approx(s * (n + 1) / n));
    CHECK(simulator.allreduce_algorithms().at(bytes).name() == "nvls/bulk");
  }
  // The ring moves 2(n-1)/n S at 0.8 x 100 GB/s (S / 45.7 GB/s), the switch (n+1)/n S at 0.5 x 100 GB/s
  // (S / 44.4 GB/s): auto keeps the ring; at 0.7 the switch is faster (S / 62.2 GB/s).
  sim::CommSimulator automatic(p, n, options(sim::Fidelity::fast, sim::AllReduceAlgorithm::automatic));
  automatic.allreduce(bytes);
  CHECK(automatic.allreduce_algorithms().at(bytes).algorithm != sim::AllReduceAlgorithm::nvls);
  sim::PlatformSpec faster = p;
  faster.nvls_efficiency = 0.7;
  sim::CommSimulator with_faster_switch(faster, n,
                                        options(sim::Fidelity::fast, sim::AllReduceAlgorithm::automatic));
  with_faster_switch.allreduce(bytes);
  CHECK(with_faster_switch.allreduce_algorithms().at(bytes).algorithm == sim::AllReduceAlgorithm::nvls);
}

TEST_CASE("sim::timing: in-switch reduction only where the node's switch reduces and on one node") {
  sim::PlatformSpec p = nvls_node();
  const auto error_of = [](const sim::PlatformSpec& platform, int gpus) {
    return refusal(platform, gpus, sim::AllReduceAlgorithm::nvls);
  };
  CHECK(error_of(p, 8) == "accepted");
  CHECK(error_of(p, 16) == "platform.allreduce");
  p.nvls_efficiency = 0.0;
  CHECK(error_of(p, 8) == "platform.allreduce");
  // auto never picks it on two nodes.
  p.nvls_efficiency = 1.0;
  sim::CommSimulator automatic(p, 16, options(sim::Fidelity::fast, sim::AllReduceAlgorithm::automatic));
  automatic.allreduce(std::int64_t{1} << 30);
  CHECK(automatic.allreduce_algorithms().at(std::int64_t{1} << 30).algorithm !=
        sim::AllReduceAlgorithm::nvls);
}

TEST_CASE("sim::timing: in-network reduction sends each GPU's shard through its NIC once, in one step") {
  // One GPU per node: no intra-node phase, and one step in which every GPU's NIC carries S each way at
  // collnet_efficiency of its line rate (a ring takes 2 (n - 1) steps of S / n at the achieved p2p rate).
  sim::PlatformSpec p = star_with_protocols();
  p.collnet_efficiency = 0.4;
  const int n = 8;
  for (const std::int64_t bytes : {std::int64_t{1} << 20, std::int64_t{256} << 20}) {
    const double s = static_cast<double>(bytes);
    const double expected = p.collective_latency_s + star_alpha(p) + p.bulk_step_latency_s +
                            s / (p.nic_bandwidth_Bps * p.collnet_efficiency);
    for (const auto fidelity : {sim::Fidelity::fast, sim::Fidelity::full}) {
      CAPTURE(bytes);
      CAPTURE(static_cast<int>(fidelity));
      sim::CommSimulator simulator(p, n, options(fidelity, sim::AllReduceAlgorithm::collnet));
      const sim::CommTiming t = simulator.allreduce(bytes);
      CHECK(relative_error(t.seconds, expected) < 0.01);
      CHECK(t.bytes_sent_per_gpu == dbench::testing::approx(s));
      CHECK(simulator.allreduce_algorithms().at(bytes).name() == "collnet/bulk");
    }
  }
}

TEST_CASE(
    "sim::timing: in-network reduction on DGX H100 nodes beats the ring's bytes and agrees in both "
    "fidelities") {
  const sim::PlatformSpec p = sim::platform_preset("dgx-h100");
  REQUIRE(p.collnet_efficiency > 0.0);
  const int n = 32;
  const int g = p.gpus_per_node;
  const std::int64_t bytes = std::int64_t{1} << 30;
  const double s = static_cast<double>(bytes);
  sim::CommSimulator fast(p, n, options(sim::Fidelity::fast, sim::AllReduceAlgorithm::collnet));
  sim::CommSimulator full(p, n, options(sim::Fidelity::full, sim::AllReduceAlgorithm::collnet));
  const sim::CommTiming a = fast.allreduce(bytes);
  const sim::CommTiming b = full.allreduce(bytes);
  CHECK(relative_error(a.seconds, b.seconds) < 0.02);
  // Reduce-scatter and all-gather inside the node, the shard once up.
  CHECK(a.bytes_sent_per_gpu == dbench::testing::approx((2.0 * (g - 1) + 1.0) * s / g));
  // The NICs carry S / g each way, against the inter-node ring's 2 (nodes - 1) / nodes of it: at 1 GB the
  // in-network reduction is the fastest, and auto takes it.
  sim::CommSimulator hierarchical(p, n, options(sim::Fidelity::fast, sim::AllReduceAlgorithm::hierarchical));
  CHECK(a.seconds < hierarchical.allreduce(bytes).seconds);
  sim::CommSimulator automatic(p, n, options(sim::Fidelity::fast, sim::AllReduceAlgorithm::automatic));
  automatic.allreduce(bytes);
  CHECK(automatic.allreduce_algorithms().at(bytes).algorithm == sim::AllReduceAlgorithm::collnet);
}

TEST_CASE("sim::timing: in-network reduction only where the fabric reduces and across nodes") {
  const auto error_of = [](const sim::PlatformSpec& platform, int gpus) {
    return refusal(platform, gpus, sim::AllReduceAlgorithm::collnet);
  };
  const sim::PlatformSpec h100 = sim::platform_preset("dgx-h100");
  CHECK(error_of(h100, 16) == "accepted");
  CHECK(error_of(h100, 8) == "platform.allreduce");
  const sim::PlatformSpec frontier = sim::platform_preset("frontier");
  CHECK(frontier.collnet_efficiency == 0.0);
  CHECK(error_of(frontier, 16) == "platform.allreduce");
  // auto never picks it where the fabric does not reduce.
  sim::CommSimulator automatic(frontier, 16,
                               options(sim::Fidelity::fast, sim::AllReduceAlgorithm::automatic));
  automatic.allreduce(std::int64_t{1} << 30);
  CHECK(automatic.allreduce_algorithms().at(std::int64_t{1} << 30).algorithm !=
        sim::AllReduceAlgorithm::collnet);
  sim::PlatformSpec bad = h100;
  bad.collnet_efficiency = 1.5;
  CHECK_THROWS_WITH_AS(sim::CommSimulator(bad, 16, sim::TimingOptions{}),
                       doctest::Contains("platform.collnet_efficiency"), sim::PlatformError);
}

TEST_CASE("sim::timing: a gossip round pays the collective start once and the achieved rate") {
  const sim::PlatformSpec p = star_with_protocols();
  const int n = 16;
  const std::int64_t bytes = 10'000'000;
  const topology::Graph graph = topology::one_peer_exponential(n).at(0);
  const double expected = p.collective_latency_s + star_alpha(p) +
                          static_cast<double>(bytes) / (p.nic_bandwidth_Bps * p.network_efficiency);
  for (const auto fidelity : {sim::Fidelity::fast, sim::Fidelity::full}) {
    CAPTURE(static_cast<int>(fidelity));
    sim::CommSimulator simulator(p, n, options(fidelity, sim::AllReduceAlgorithm::ring));
    const sim::CommTiming t = simulator.gossip(graph, bytes);
    CHECK(relative_error(t.seconds, expected) < 0.01);
    for (const double g : t.gpu_seconds) {
      CHECK(relative_error(g, expected) < 0.01);
    }
  }
}

TEST_CASE("sim::timing: full fidelity runs auto's algorithm and protocol with the fast path's time") {
  const sim::PlatformSpec p = sim::platform_preset("dgx-h100");
  for (const int n : {8, 16}) {
    for (const std::int64_t bytes : {std::int64_t{4096}, std::int64_t{256} << 10, std::int64_t{64} << 20}) {
      CAPTURE(n);
      CAPTURE(bytes);
      sim::CommSimulator fast(p, n, options(sim::Fidelity::fast, sim::AllReduceAlgorithm::automatic));
      sim::CommSimulator full(p, n, options(sim::Fidelity::full, sim::AllReduceAlgorithm::automatic));
      const double a = fast.allreduce(bytes).seconds;
      const double b = full.allreduce(bytes).seconds;
      CHECK(fast.allreduce_algorithms().at(bytes) == full.allreduce_algorithms().at(bytes));
      MESSAGE(n << " GPUs, " << bytes << " B: " << fast.allreduce_algorithms().at(bytes).name() << " "
                << a * 1e6 << " us fast, " << b * 1e6 << " us full");
      CHECK(relative_error(b, a) < 0.01);
    }
  }
}

TEST_CASE("sim::timing: on DGX H100 nodes, auto runs small all-reduces at low latency, large ones in bulk") {
  const sim::PlatformSpec p = sim::platform_preset("dgx-h100");
  const std::int64_t large = std::int64_t{1} << 30;
  sim::CommSimulator two_nodes(p, 16, options(sim::Fidelity::fast, sim::AllReduceAlgorithm::automatic));
  two_nodes.allreduce(4096);
  two_nodes.allreduce(large);
  CHECK(two_nodes.allreduce_algorithms().at(4096).protocol == sim::Protocol::low_latency);
  CHECK(two_nodes.allreduce_algorithms().at(large).protocol == sim::Protocol::bulk);
  // One node: the switch reduces a large all-reduce (C2's NVLS).
  sim::CommSimulator one_node(p, 8, options(sim::Fidelity::fast, sim::AllReduceAlgorithm::automatic));
  one_node.allreduce(large);
  CHECK(one_node.allreduce_algorithms().at(large).name() == "nvls/bulk");
}

TEST_CASE("sim::validate: efficiencies and protocol costs are refused with the key") {
  const auto rejects = [](auto change, const std::string& key) {
    sim::PlatformSpec p = homogeneous_star();
    change(p);
    try {
      sim::validate(p, 4);
    } catch (const sim::PlatformError& e) {
      CHECK(e.key() == key);
      return;
    }
    FAIL("accepted an invalid " << key);
  };
  rejects([](sim::PlatformSpec& p) { p.intra_node_efficiency = 0.0; }, "platform.intra_node_efficiency");
  rejects([](sim::PlatformSpec& p) { p.intra_node_efficiency = 1.2; }, "platform.intra_node_efficiency");
  rejects([](sim::PlatformSpec& p) { p.network_efficiency = -0.5; }, "platform.network_efficiency");
  rejects([](sim::PlatformSpec& p) { p.nvls_efficiency = 2.0; }, "platform.nvls_efficiency");
  rejects([](sim::PlatformSpec& p) { p.collective_latency_s = -1e-6; }, "platform.collective_latency_s");
  rejects([](sim::PlatformSpec& p) { p.bulk_step_latency_s = std::numeric_limits<double>::infinity(); },
          "platform.bulk_step_latency_s");
}

TEST_CASE("sim::platform: each GPU reaches the fabric through its own NIC link (rails)") {
  const sim::PlatformSpec dgx = sim::platform_preset("dgx-h100");
  CHECK(sim::nic_links(dgx) == 8);
  CHECK(sim::nic_link_of(dgx, 5) == 5);
  const sim::PlatformSpec frontier = sim::platform_preset("frontier");
  CHECK(sim::nic_links(frontier) == 4);  // two GCDs per NIC
  CHECK(sim::nic_link_of(frontier, 5) == 2);
  const sim::PlatformSpec summit = sim::platform_preset("summit");
  CHECK(sim::nic_links(summit) == 2);  // one NIC per socket of three GPUs
  CHECK(sim::nic_link_of(summit, 2) == 0);
  CHECK(sim::nic_link_of(summit, 3) == 1);
  CHECK(sim::allreduce_channels(dgx, 8) == 1);
  CHECK(sim::allreduce_channels(dgx, 16) == 8);
  CHECK(sim::nic_links(homogeneous_star()) == 1);
}

TEST_CASE("sim::timing: a single inter-node message gets one NIC's bandwidth, not the node's") {
  sim::PlatformSpec p = sim::platform_preset("dgx-h100");
  p.collective_latency_s = 0.0;
  const int n = 16;
  const std::int64_t bytes = 1'000'000'000;
  // i -> i + 1: two messages cross nodes (7 -> 8, 15 -> 0), each alone on its NIC link.
  const topology::Graph graph = topology::one_peer_exponential(n).at(0);
  const double alpha = 2.0 * (p.intra_node_latency_s + p.nic_latency_s) + 2.0 * p.switch_latency_s;
  const double expected = alpha + static_cast<double>(bytes) / p.nic_bandwidth_Bps;
  for (const auto fidelity : {sim::Fidelity::fast, sim::Fidelity::full}) {
    CAPTURE(static_cast<int>(fidelity));
    sim::CommSimulator simulator(p, n, options(fidelity, sim::AllReduceAlgorithm::ring));
    CHECK(relative_error(simulator.gossip(graph, bytes).seconds, expected) < 0.01);
  }
}

TEST_CASE("sim::timing: a ring all-reduce across nodes is striped over every NIC link, shared fairly") {
  // One channel per NIC link: each GPU port carries one message per channel (S / (n C) each, inter- and
  // intra-node alike, shared equally whatever their routes' latencies), each NIC link one channel's.
  const sim::PlatformSpec p = sim::platform_preset("dgx-h100");
  const int n = 16;
  const int channels = sim::allreduce_channels(p, n);
  const std::int64_t bytes = std::int64_t{1} << 30;
  const double s = static_cast<double>(bytes);
  const double port = p.intra_node_bandwidth_Bps * p.intra_node_efficiency;
  const double alpha = 2.0 * (p.intra_node_latency_s + p.nic_latency_s) + 2.0 * p.switch_latency_s;
  const double step = alpha + p.bulk_step_latency_s +
                      std::max(s / (n * port), s / (static_cast<double>(n) * channels * p.nic_bandwidth_Bps));
  const double expected = p.collective_latency_s + 2.0 * (n - 1) * step;
  for (const auto fidelity : {sim::Fidelity::fast, sim::Fidelity::full}) {
    CAPTURE(static_cast<int>(fidelity));
    sim::CommSimulator simulator(p, n, options(fidelity, sim::AllReduceAlgorithm::ring));
    CHECK(relative_error(simulator.allreduce(bytes).seconds, expected) < 0.01);
  }
}
