#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "models/model_profile.hpp"
#include "sim/allreduce_plan.hpp"
#include "sim/platform.hpp"
#include "sim/timing.hpp"
#include "support/approx.hpp"
#include "timing_fixtures.hpp"
#include "topology/generators.hpp"
#include "topology/graph_policy.hpp"

namespace sim = dbench::sim;
namespace topology = dbench::topology;
using namespace dbench::sim::testing;  // homogeneous_star, options, relative_error, resnet50

namespace {

double star_alpha(const sim::PlatformSpec& p) {
  return 2.0 * (p.intra_node_latency_s + p.nic_latency_s + p.switch_latency_s);
}

/// ResNet-50 on `gpus` GPUs of the Frontier preset, `batch` samples per GPU.
sim::TimingSpec frontier_resnet50(int gpus, int batch) {
  sim::TimingSpec spec;
  spec.platform = sim::platform_preset("frontier");
  spec.gpus = gpus;
  spec.profile = resnet50();
  spec.batch_per_gpu = batch;
  return spec;
}

}  // namespace

TEST_CASE("sim::timing: ring all-reduce on a homogeneous star matches 2(n-1)(alpha + S/(nB))") {
  const sim::PlatformSpec p = homogeneous_star();
  const std::int64_t bytes = 100'000'000;
  for (const int n : {2, 8, 16}) {
    for (const auto fidelity : {sim::Fidelity::fast, sim::Fidelity::full}) {
      CAPTURE(n);
      CAPTURE(static_cast<int>(fidelity));
      sim::CommSimulator simulator(p, n, options(fidelity));
      const double expected =
          2.0 * (n - 1) * (star_alpha(p) + static_cast<double>(bytes) / (n * p.nic_bandwidth_Bps));
      const sim::CommTiming timing = simulator.allreduce(bytes);
      CHECK(relative_error(timing.seconds, expected) < 0.01);
      CHECK(timing.bytes_sent_per_gpu == dbench::testing::approx(2.0 * (n - 1) * 1e8 / n));
    }
  }
}

TEST_CASE("sim::timing: a gossip round on a homogeneous star takes the slowest GPU's transfer time") {
  const sim::PlatformSpec p = homogeneous_star();
  const std::int64_t bytes = 50'000'000;
  const int n = 16;
  // A GPU's NIC carries all it sends (and, the other way, all it receives) at once.
  const auto slowest = [&](const topology::Graph& g) {
    std::vector<int> out(n, 0);
    std::vector<int> in(n, 0);
    for (int j = 0; j < n; ++j) {
      for (const auto& e : g.row(j)) {
        if (e.from != j) {
          ++out[e.from];
          ++in[j];
        }
      }
    }
    const int worst =
        std::max(*std::max_element(out.begin(), out.end()), *std::max_element(in.begin(), in.end()));
    return star_alpha(p) + worst * static_cast<double>(bytes) / p.nic_bandwidth_Bps;
  };
  for (const auto fidelity : {sim::Fidelity::fast, sim::Fidelity::full}) {
    sim::CommSimulator simulator(p, n, options(fidelity));
    for (const auto& graph : {topology::ring(n), topology::exponential(n), topology::torus(n),
                              topology::star(n), topology::one_peer_exponential(n).at(2)}) {
      CAPTURE(graph.name());
      CHECK(relative_error(simulator.gossip(graph, bytes).seconds, slowest(graph)) < 0.01);
    }
  }
}

// Cases labelled large-sim sweep 256 to 1008 simulated GPUs. Under the sanitizers they take minutes each
// while the smaller cases here reach the same code, so .ci/run leaves them out of the sanitizer build's run.
TEST_CASE("sim::timing: the fast path is within 1% of full fidelity for every preset and algorithm" *
          doctest::test_suite("large-sim")) {
  const auto profile = resnet50();
  const std::int64_t bytes = profile.parameter_bytes();
  for (const std::string preset : {"frontier", "summit", "dgx-h100"}) {
    const sim::PlatformSpec p = sim::platform_preset(preset);
    CAPTURE(preset);
    // Two nodes, and as many whole nodes as fit in 64 GPUs: every link kind is crossed.
    for (const int n : {2 * p.gpus_per_node, 64 / p.gpus_per_node * p.gpus_per_node}) {
      CAPTURE(n);
      // The model's gradient (pipelined in many chunks) and a latency-bound 4 KB (one chunk).
      check_fast_allreduce_matches_full(p, n, {bytes, std::int64_t{4096}});
      for (const auto algorithm : {sim::AllReduceAlgorithm::ring, sim::AllReduceAlgorithm::hierarchical,
                                   sim::AllReduceAlgorithm::tree, sim::AllReduceAlgorithm::automatic}) {
        CAPTURE(sim::allreduce_name(algorithm));
        // Buckets of 25 MB overlapped with a 50 ms backward pass.
        sim::CommSimulator fast_buckets(p, n, options(sim::Fidelity::fast, algorithm, 25'000'000));
        sim::CommSimulator full_buckets(p, n, options(sim::Fidelity::full, algorithm, 25'000'000));
        const double fast_s = fast_buckets.overlapped_allreduce(bytes, 0.05).seconds;
        CHECK(relative_error(fast_s, full_buckets.overlapped_allreduce(bytes, 0.05).seconds) < 0.01);
      }
      sim::CommSimulator fast(p, n, options(sim::Fidelity::fast));
      sim::CommSimulator full(p, n, options(sim::Fidelity::full));
      for (const auto& graph : {topology::ring(n), topology::exponential(n), topology::torus(n),
                                topology::one_peer_exponential(n).at(3)}) {
        CAPTURE(graph.name());
        CHECK(relative_error(fast.gossip(graph, bytes).seconds, full.gossip(graph, bytes).seconds) < 0.01);
      }
    }
  }
}

TEST_CASE(
    "sim::timing: each fabric times a gossip round between the NIC-bound and the latency-bound limits") {
  sim::PlatformSpec p = sim::platform_preset("dgx-h100");
  const int n = 64;
  const std::int64_t bytes = 10'000'000;
  const auto graph = topology::exponential(n);
  p.buildings = 2;  // multi-building: two of 4 nodes, each uplink as wide as 4 nodes' fabric links
  p.inter_building_bandwidth_Bps = 4.0 * p.switch_bandwidth_Bps;
  for (const auto fabric : {sim::Fabric::star, sim::Fabric::fat_tree, sim::Fabric::dragonfly,
                            sim::Fabric::torus, sim::Fabric::multi_building}) {
    CAPTURE(sim::fabric_name(fabric));
    p.fabric = fabric;
    p.nodes_per_switch = 2;
    sim::CommSimulator simulator(p, n, options(sim::Fidelity::fast));
    const double seconds = simulator.gossip(graph, bytes).seconds;
    // At least: the busiest node's NICs carry its outgoing messages to other nodes (log2(64) = 6 per GPU, 3
    // of them leave the node).
    const double nic_bound = 8.0 * 3.0 * static_cast<double>(bytes) / (p.nic_bandwidth_Bps * p.nics_per_node);
    CHECK(seconds >= nic_bound);
    CHECK(seconds < 20.0 * nic_bound);
  }
}

TEST_CASE("sim::time_schedule: each graph of a schedule is simulated once and every iteration adds compute") {
  const auto profile = resnet50();
  sim::TimingSpec spec;
  spec.platform = sim::platform_preset("dgx-h100");
  spec.gpus = 32;
  spec.profile = profile;
  spec.batch_per_gpu = 32;
  topology::SequencePolicy policy(topology::one_peer_exponential(32));
  std::vector<topology::ScheduleStep> schedule;
  for (int t = 0; t < 23; ++t) {
    schedule.push_back(policy.graph_for(t, nullptr));
  }
  const sim::TimingResult result = sim::time_schedule(spec, schedule);
  CHECK(result.simulations == 5);  // period log2(32)
  REQUIRE(result.iterations.size() == 23);
  const double compute = sim::compute_seconds(profile, 32, spec.platform);
  for (const auto& row : result.iterations) {
    CHECK(row.compute_s == dbench::testing::approx(compute));
    CHECK(row.total_s == dbench::testing::approx(row.compute_s + row.comm_s));
    CHECK(row.bytes_sent == dbench::testing::approx(static_cast<double>(profile.parameter_bytes())));
  }
  // Each GPU waits only for its own in-neighbour, so the GPUs drift apart and a graph's second use (iteration
  // 5) does not repeat its first; never does a GPU wait longer than for the pattern's slowest message after
  // the latest GPU is ready (the global barrier the rows were before per-GPU clocks).
  CHECK(result.iterations[0].comm_s <= result.iterations[5].comm_s * 1.01);
  CHECK(result.samples_per_second == dbench::testing::approx(32.0 * 32.0 / result.seconds_per_iteration));
  CHECK(result.scaling_efficiency == dbench::testing::approx(compute / result.seconds_per_iteration));
  CHECK(result.scaling_efficiency < 1.0);

  // Full fidelity simulates every iteration with each GPU's own start. The first iterations (together, then
  // intra-node messages that share no link) agree; once the GPUs drift apart, inter-node messages that the
  // fast path lets share a NIC (its durations are the all-at-once pattern's) partly miss each other in full
  // fidelity: here up to 8.5 % on one iteration, 2.5 % over the six.
  spec.options.fidelity = sim::Fidelity::full;
  const std::vector<topology::ScheduleStep> head(schedule.begin(), schedule.begin() + 6);
  const sim::TimingResult full = sim::time_schedule(spec, head);
  CHECK(full.simulations == 6);
  double full_sum = 0.0;
  double fast_sum = 0.0;
  for (std::size_t t = 0; t < head.size(); ++t) {
    CHECK(relative_error(full.iterations[t].total_s, result.iterations[t].total_s) < (t < 3 ? 1e-3 : 0.1));
    full_sum += full.iterations[t].total_s;
    fast_sum += result.iterations[t].total_s;
  }
  CHECK(relative_error(full_sum, fast_sum) < 0.03);
}

TEST_CASE("sim::time_schedule: buckets overlapped with the backward pass hide communication") {
  sim::TimingSpec spec = frontier_resnet50(16, 64);
  const std::vector<topology::ScheduleStep> schedule(
      3, topology::ScheduleStep{"allreduce", nullptr, topology::Communication::all_reduce});
  const sim::TimingResult whole = sim::time_schedule(spec, schedule);
  spec.options.bucket_bytes = 25'000'000;
  const sim::TimingResult buckets = sim::time_schedule(spec, schedule);
  CHECK(buckets.seconds_per_iteration < whole.seconds_per_iteration);
  CHECK(buckets.seconds_per_iteration >= whole.single_gpu_seconds_per_iteration);
  CHECK(buckets.iterations[0].total_s ==
        dbench::testing::approx(buckets.iterations[0].compute_s + buckets.iterations[0].comm_s));
}

TEST_CASE("sim::timing: a platform's measured all-reduce replaces the simulated one, in either fidelity") {
  sim::PlatformSpec p = homogeneous_star();
  p.allreduce_latency_s = 3e-5;
  p.allreduce_bandwidth_Bps = 2e9;
  const std::int64_t bytes = 4'000'000;
  const double expected = 3e-5 + 4e6 / 2e9;
  for (const auto fidelity : {sim::Fidelity::fast, sim::Fidelity::full}) {
    sim::CommSimulator simulator(p, 8, options(fidelity, sim::AllReduceAlgorithm::tree));
    const sim::CommTiming t = simulator.allreduce(bytes);
    CHECK(t.seconds == dbench::testing::approx(expected).epsilon(1e-12));
    // The bytes a ring sends, 2 (n - 1) S / n per GPU, as without a measurement.
    CHECK(t.bytes_sent_per_gpu == dbench::testing::approx(2.0 * 7 * 4e6 / 8));
    CHECK(t.gpu_seconds.size() == 8);
    CHECK(simulator.simulations() == 0);
  }
  // Four buckets under a backward pass, each paying the measured cost: slower than the pass produces them,
  // they queue behind the first, ready after a quarter of the pass.
  sim::CommSimulator bucketed(p, 8, options(sim::Fidelity::fast, sim::AllReduceAlgorithm::ring, 1'000'000));
  const double backward = 1e-3;
  CHECK(bucketed.overlapped_allreduce(bytes, backward).seconds ==
        dbench::testing::approx(backward / 4 + 4 * (3e-5 + 1e6 / 2e9)).epsilon(1e-12));
  // One worker pays the measured collective too (the runtime calls it with one worker as well), and nothing
  // without a measurement.
  sim::CommSimulator alone(p, 1, options(sim::Fidelity::fast));
  CHECK(alone.allreduce(bytes).seconds == dbench::testing::approx(expected).epsilon(1e-12));
  CHECK(alone.allreduce(bytes).bytes_sent_per_gpu == 0.0);
  CHECK(alone.overlapped_allreduce(bytes, backward).seconds ==
        dbench::testing::approx(backward + 3e-5 + 4e6 / 2e9).epsilon(1e-12));
  // Without a measurement the ring is simulated: 2 (n - 1) (alpha + S / (n B)).
  p.allreduce_bandwidth_Bps = 0.0;
  CHECK(sim::CommSimulator(p, 1, options(sim::Fidelity::fast)).allreduce(bytes).seconds == 0.0);
  sim::CommSimulator simulated(p, 8, options(sim::Fidelity::fast));
  CHECK(simulated.allreduce(bytes).seconds ==
        dbench::testing::approx(14.0 * (star_alpha(p) + 4e6 / 8 / p.nic_bandwidth_Bps)).epsilon(1e-3));
}

TEST_CASE("sim::platform: presets reproduce their published ResNet-50 throughput") {
  const auto profile = resnet50();
  for (const auto name : sim::known_presets()) {
    CAPTURE(std::string(name));
    const sim::PlatformSpec p = sim::platform_preset(name);
    REQUIRE_NOTHROW(sim::validate(p, 8 * p.gpus_per_node));
    const int batch = p.reference_resnet50_batch;
    const double samples_per_s = batch / sim::compute_seconds(profile, batch, p);
    CHECK(relative_error(samples_per_s, p.reference_resnet50_samples_per_s) < 0.05);
    CHECK(samples_per_s > 500.0);
    CHECK(samples_per_s < 10000.0);
  }
}

TEST_CASE("sim::platform: bad platforms are rejected naming the key") {
  sim::PlatformSpec p = sim::platform_preset("summit");
  CHECK(refused_key(p, 12) == "");
  CHECK(refused_key(p, 3) == "");  // part of one node
  CHECK(refused_key(p, 16) == "platform.gpus_per_node");
  p.nic_bandwidth_Bps = 0.0;
  CHECK(refused_key(p, 12) == "platform.nic_bandwidth_Bps");
  p = sim::platform_preset("summit");
  p.switch_bandwidth_Bps = -1.0;
  CHECK(refused_key(p, 12) == "platform.switch_bandwidth_Bps");
  p = sim::platform_preset("summit");
  p.intra_node_bandwidth_Bps = 0.0;
  CHECK(refused_key(p, 12) == "platform.intra_node_bandwidth_Bps");
  p = sim::platform_preset("summit");
  p.nic_latency_s = -1e-6;
  CHECK(refused_key(p, 12) == "platform.nic_latency_s");
  p = sim::platform_preset("summit");
  p.allreduce_bandwidth_Bps = -1.0;
  CHECK(refused_key(p, 12) == "platform.allreduce_bandwidth_Bps");
  CHECK_THROWS_WITH_AS(sim::platform_preset("frontiers"), doctest::Contains("platform.preset"),
                       sim::PlatformError);
  CHECK_THROWS_WITH_AS(sim::parse_fabric("hypercube"), doctest::Contains("platform.fabric"),
                       sim::PlatformError);
  CHECK_THROWS_AS(sim::CommSimulator(p, 16, {}), sim::PlatformError);
}

TEST_CASE("sim::timing: two simulators in one process give the same numbers as one alone") {
  const sim::PlatformSpec p = sim::platform_preset("summit");
  const auto graph = topology::exponential(24);
  sim::CommSimulator alone(p, 24, options(sim::Fidelity::fast));
  const double expected = alone.gossip(graph, 1'000'000).seconds;
  sim::CommSimulator a(p, 24, options(sim::Fidelity::fast));
  sim::CommSimulator b(p, 24, options(sim::Fidelity::full, sim::AllReduceAlgorithm::hierarchical));
  const double first = a.gossip(graph, 1'000'000).seconds;
  b.allreduce(4'000'000);
  const double again = b.gossip(graph, 1'000'000).seconds;
  // SimGrid's clock keeps running from one engine to the next in a process; durations are taken from each
  // run's start, so only rounding at the clock's magnitude may differ.
  CHECK(relative_error(first, expected) < 1e-6);
  CHECK(relative_error(again, expected) < 1e-6);
}

TEST_CASE("sim::time_schedule: averaging over the complete graph is timed as an all-reduce") {
  sim::TimingSpec spec;
  spec.platform = sim::platform_preset("dgx-h100");
  spec.gpus = 16;
  spec.profile = resnet50();
  const auto complete = topology::complete(16);
  const std::vector<topology::ScheduleStep> global = {
      {"global-average", &complete, topology::Communication::gossip}};
  const std::vector<topology::ScheduleStep> allreduce = {
      {"allreduce", nullptr, topology::Communication::all_reduce}};
  const auto a = sim::time_schedule(spec, global);
  const auto b = sim::time_schedule(spec, allreduce);
  // Separate simulators: equal up to rounding at the magnitude of SimGrid's running clock.
  CHECK(a.seconds_per_iteration == dbench::testing::approx(b.seconds_per_iteration).epsilon(1e-9));
  CHECK(a.simulations == b.simulations);
  CHECK(a.allreduce_algorithms == b.allreduce_algorithms);
  spec.options.allreduce = sim::AllReduceAlgorithm::ring;
  CHECK(sim::time_schedule(spec, global).simulations == 1);  // one ring step
  // With a measured all-reduce (CPU workers' MPI_Allreduce), the workers gossip over the complete graph with
  // point-to-point messages, and it is timed so; the gradients' all-reduce takes the measured time.
  spec.platform.allreduce_latency_s = 1e-4;
  spec.platform.allreduce_bandwidth_Bps = 1e9;
  const auto gossip = sim::time_schedule(spec, global, true);
  const auto bytes = static_cast<double>(spec.profile.parameter_bytes());
  const sim::CommTiming expected =
      sim::CommSimulator(spec.platform, 16, {}).gossip(complete, spec.profile.parameter_bytes());
  CHECK(gossip.iterations[0].comm_s == dbench::testing::approx(expected.seconds));
  CHECK(gossip.iterations[0].gpu_bytes_sent[3] == dbench::testing::approx(15.0 * bytes));
  CHECK(sim::time_schedule(spec, allreduce).iterations[0].comm_s ==
        dbench::testing::approx(1e-4 + bytes / 1e9));
}

TEST_CASE("sim::time_schedule: a global parameter average is never hidden behind the backward pass") {
  sim::TimingSpec spec = frontier_resnet50(16, 64);
  spec.options.bucket_bytes = 25'000'000;
  spec.options.allreduce = sim::AllReduceAlgorithm::ring;  // one pattern per all-reduce size
  const auto ring = topology::ring(16);
  topology::ScheduleStep average{"global-average", nullptr};
  average.communication = topology::Communication::global_average;
  const std::vector<topology::ScheduleStep> schedule = {
      {"allreduce", nullptr, topology::Communication::all_reduce},
      average,
      {"ring", &ring, topology::Communication::gossip},
      average,
      {"allreduce", nullptr, topology::Communication::all_reduce}};
  const auto r = sim::time_schedule(spec, schedule);
  CHECK(r.simulations == 3);  // gradient buckets, the parameters' all-reduce, the ring
  CHECK(r.iterations[1].total_s > r.iterations[0].total_s);
  CHECK(r.iterations[1].total_s ==
        dbench::testing::approx(r.iterations[1].compute_s + r.iterations[1].comm_s));
  // The same communication from the same (synchronised) start, up to the clocks' rounding; after the ring,
  // whose GPUs drift apart, the average also waits for the last of them.
  CHECK(r.iterations[3].total_s >= r.iterations[1].total_s);
  CHECK(r.iterations[3].total_s == dbench::testing::approx(r.iterations[1].total_s).epsilon(1e-3));
  CHECK(r.iterations[4].total_s == dbench::testing::approx(r.iterations[0].total_s).epsilon(1e-9));
}

TEST_CASE("sim::time_schedule: per-GPU rows give each GPU its own bytes and its own time") {
  sim::TimingSpec spec;
  spec.platform = homogeneous_star();
  spec.gpus = 8;
  spec.profile = resnet50();
  const auto hub = topology::star(8);
  const std::vector<topology::ScheduleStep> schedule = {{"star", &hub, topology::Communication::gossip}};
  const auto r = sim::time_schedule(spec, schedule, true);
  const auto& row = r.iterations.at(0);
  REQUIRE(row.gpu_bytes_sent.size() == 8);
  const double s = static_cast<double>(spec.profile.parameter_bytes());
  CHECK(row.gpu_bytes_sent[0] == 7.0 * s);  // the hub sends to every leaf
  CHECK(row.gpu_bytes_sent[3] == s);
  // The hub's NIC carries 7 copies each way, so every GPU waits about as long as the hub: the slowest is the
  // iteration's communication.
  CHECK(*std::max_element(row.gpu_comm_s.begin(), row.gpu_comm_s.end()) ==
        dbench::testing::approx(row.comm_s));
  CHECK(row.gpu_comm_s[0] == dbench::testing::approx(row.comm_s));
  CHECK(row.gpu_total_s[3] == dbench::testing::approx(row.compute_s + row.gpu_comm_s[3]));
}

TEST_CASE("sim::timing: a pipelined tree on a homogeneous star takes the plan's alpha-beta step sum") {
  // Each step ends when the busiest NIC (most messages out or in, one chunk each) is done.
  const sim::PlatformSpec p = homogeneous_star();
  for (const int n : {2, 8, 13}) {
    for (const std::int64_t bytes :
         {std::int64_t{4096}, std::int64_t{10'000'000}, std::int64_t{200'000'000}}) {
      CAPTURE(n);
      CAPTURE(bytes);
      const auto s = static_cast<double>(bytes);
      const sim::TreePlan plan = sim::tree_plan(n, s, sim::tree_chunks(p, n, s));
      double expected = 0.0;
      for (int step = 0; step < plan.steps(); ++step) {
        std::vector<int> out(static_cast<std::size_t>(n), 0);
        std::vector<int> in(static_cast<std::size_t>(n), 0);
        for (int t = 0; t < 2; ++t) {
          for (int v = 0; v < n; ++v) {
            const int parent = plan.trees[static_cast<std::size_t>(t)].parent[static_cast<std::size_t>(v)];
            if (plan.up_active(t, v, step)) {
              ++out[static_cast<std::size_t>(v)];
              ++in[static_cast<std::size_t>(parent)];
            }
            if (plan.down_active(t, v, step)) {
              ++out[static_cast<std::size_t>(parent)];
              ++in[static_cast<std::size_t>(v)];
            }
          }
        }
        const int busiest =
            std::max(*std::max_element(out.begin(), out.end()), *std::max_element(in.begin(), in.end()));
        expected += star_alpha(p) + busiest * plan.chunk_bytes / p.nic_bandwidth_Bps;
      }
      for (const auto fidelity : {sim::Fidelity::fast, sim::Fidelity::full}) {
        sim::CommSimulator simulator(p, n, options(fidelity, sim::AllReduceAlgorithm::tree));
        const sim::CommTiming t = simulator.allreduce(bytes);
        CHECK(relative_error(t.seconds, expected) < 0.01);
        CHECK(t.bytes_sent_per_gpu == dbench::testing::approx(2.0 * (n - 1) * s / n));
        CHECK(t.messages == 4LL * plan.chunks * (n - 1));
      }
    }
  }
}

TEST_CASE("sim::timing: a tree all-reduce of 1 GB on one DGX H100 reaches 0.8 of the ring's bus bandwidth") {
  const sim::PlatformSpec p = sim::platform_preset("dgx-h100");
  const int n = 8;
  const std::int64_t bytes = 1'000'000'000;
  const auto busbw = [&](double seconds) { return static_cast<double>(bytes) / seconds * 2.0 * (n - 1) / n; };
  for (const auto fidelity : {sim::Fidelity::fast, sim::Fidelity::full}) {
    CAPTURE(static_cast<int>(fidelity));
    sim::CommSimulator ring(p, n, options(fidelity, sim::AllReduceAlgorithm::ring));
    sim::CommSimulator tree(p, n, options(fidelity, sim::AllReduceAlgorithm::tree));
    const double ring_busbw = busbw(ring.allreduce(bytes).seconds);
    const double tree_busbw = busbw(tree.allreduce(bytes).seconds);
    MESSAGE("1 GB on 8 H100: ring busbw " << ring_busbw / 1e9 << " GB/s, tree " << tree_busbw / 1e9
                                          << " GB/s");
    // The tree's bound: every GPU sends 2S against the ring's 2(n-1)S/n, so at most (n-1)/n of the ring.
    CHECK(tree_busbw >= 0.8 * ring_busbw);
    CHECK(tree_busbw <= (n - 1.0) / n * ring_busbw * 1.001);
  }
  // Latency-bound, the tree's 2 log2(n) hops beat the ring's 2(n-1).
  sim::CommSimulator ring(p, 64, options(sim::Fidelity::fast, sim::AllReduceAlgorithm::ring));
  sim::CommSimulator tree(p, 64, options(sim::Fidelity::fast, sim::AllReduceAlgorithm::tree));
  CHECK(tree.allreduce(4096).seconds < 0.5 * ring.allreduce(4096).seconds);
}

TEST_CASE("sim::timing: a pipelined hierarchical all-reduce agrees with full fidelity, pipeline or not") {
  for (const std::string preset : {"frontier", "summit", "dgx-h100"}) {
    CAPTURE(preset);
    const sim::PlatformSpec p = sim::platform_preset(preset);
    const int n = 8 * p.gpus_per_node;
    sim::CommSimulator fast(p, n, options(sim::Fidelity::fast, sim::AllReduceAlgorithm::hierarchical));
    sim::CommSimulator full(p, n, options(sim::Fidelity::full, sim::AllReduceAlgorithm::hierarchical));
    // 4 KB: one chunk, the phases one after the other; 200 MB: chunks in every phase at once.
    CHECK(sim::hierarchical_chunks(p, n, 4096) == 1);
    CHECK(sim::hierarchical_chunks(p, n, 2e8) > 1);
    for (const std::int64_t bytes : {std::int64_t{4096}, std::int64_t{200'000'000}}) {
      CAPTURE(bytes);
      const sim::CommTiming t = fast.allreduce(bytes);
      CHECK(relative_error(t.seconds, full.allreduce(bytes).seconds) < 0.01);
      // Each GPU still sends what the unpipelined algorithm sends.
      const auto s = static_cast<double>(bytes);
      const int g = p.gpus_per_node;
      CHECK(t.bytes_sent_per_gpu == dbench::testing::approx(2.0 * (g - 1) * s / g + 2.0 * 7 * s / n));
    }
  }
}

namespace {

// auto against every algorithm the preset can force, at about `wanted` GPUs over a grid of sizes (one test
// case per preset and scale: under the sanitizers each takes minutes).
void check_auto_is_fastest(const std::string& preset, int wanted) {
  const sim::PlatformSpec p = sim::platform_preset(preset);
  {
    const int n = wanted / p.gpus_per_node * p.gpus_per_node;
    sim::CommSimulator automatic(p, n, options(sim::Fidelity::fast, sim::AllReduceAlgorithm::automatic));
    std::vector<sim::CommSimulator> forced;
    for (const auto a : {sim::AllReduceAlgorithm::ring, sim::AllReduceAlgorithm::hierarchical,
                         sim::AllReduceAlgorithm::tree}) {
      forced.emplace_back(p, n, options(sim::Fidelity::fast, a));
    }
    // In-network reduction where the fabric has it (dgx-h100).
    if (p.collnet_efficiency > 0.0) {
      forced.emplace_back(p, n, options(sim::Fidelity::fast, sim::AllReduceAlgorithm::collnet));
    }
    // 4 KB (latency-bound) to 1 GB (bandwidth-bound); at 1008 GPUs (a few seconds per size and
    // algorithm) the sizes where the choice changes, latency- to bandwidth-bound.
    std::vector<std::int64_t> sizes = {4096, std::int64_t{1} << 20};
    if (wanted == 256) {
      sizes.insert(sizes.end(), {std::int64_t{32} << 20, std::int64_t{1} << 30});
    }
    for (const std::int64_t bytes : sizes) {
      CAPTURE(preset);
      CAPTURE(n);
      CAPTURE(bytes);
      const double chosen = automatic.allreduce(bytes).seconds;
      double best = 1e300;
      for (auto& f : forced) {
        // Separate simulators: equal up to rounding at the magnitude of SimGrid's running clock.
        const double t = f.allreduce(bytes).seconds;
        CHECK(chosen <= t * (1.0 + 1e-9));
        best = std::min(best, t);
      }
      CHECK(relative_error(chosen, best) < 1e-9);
      CHECK(automatic.allreduce_algorithms().at(bytes).algorithm != sim::AllReduceAlgorithm::automatic);
    }
  }
}

}  // namespace

// One ctest case per preset and scale (each takes minutes under the sanitizers), all in the large-sim suite.
#define DBENCH_AUTO_IS_FASTEST_CASE(PRESET, GPUS)                                                   \
  TEST_CASE("sim::timing: auto is the fastest forced algorithm at every size (" PRESET " at " #GPUS \
            " GPUs)" *                                                                              \
            doctest::test_suite("large-sim")) {                                                     \
    check_auto_is_fastest(PRESET, GPUS);                                                            \
  }

DBENCH_AUTO_IS_FASTEST_CASE("frontier", 256)
DBENCH_AUTO_IS_FASTEST_CASE("frontier", 1008)
DBENCH_AUTO_IS_FASTEST_CASE("summit", 256)
DBENCH_AUTO_IS_FASTEST_CASE("summit", 1008)
DBENCH_AUTO_IS_FASTEST_CASE("dgx-h100", 256)
DBENCH_AUTO_IS_FASTEST_CASE("dgx-h100", 1008)

#undef DBENCH_AUTO_IS_FASTEST_CASE

namespace {

/// Auto with and without pruning on each preset at about `scales` GPUs (whole nodes): the same choice and
/// time at sizes from latency- to bandwidth-bound; returns how many simulations pruning saved.
std::int64_t check_pruning(std::initializer_list<int> scales) {
  std::int64_t skipped = 0;
  for (const std::string preset : {"frontier", "summit", "dgx-h100"}) {
    const sim::PlatformSpec p = sim::platform_preset(preset);
    for (const int wanted : scales) {
      const int n = std::max(2, wanted / p.gpus_per_node * p.gpus_per_node);
      sim::TimingOptions exhaustive = options(sim::Fidelity::fast, sim::AllReduceAlgorithm::automatic);
      exhaustive.exhaustive_auto = true;
      sim::CommSimulator all(p, n, exhaustive);
      sim::CommSimulator pruned(p, n, options(sim::Fidelity::fast, sim::AllReduceAlgorithm::automatic));
      // Latency-bound to bandwidth-bound, the low-latency protocol's range included.
      for (const std::int64_t bytes :
           {std::int64_t{4096}, std::int64_t{256} << 10, std::int64_t{4} << 20, std::int64_t{64} << 20}) {
        CAPTURE(preset);
        CAPTURE(n);
        CAPTURE(bytes);
        const sim::AllReduceChoice expected = all.allreduce_choice(bytes);
        const sim::AllReduceChoice chosen = pruned.allreduce_choice(bytes);
        CHECK(chosen.name() == expected.name());
        // Equal to the last bits but for SimGrid's running clock: a pattern's durations are differences of
        // absolute times, and the patterns simulated before it in the same run differ.
        const double seconds = pruned.allreduce(bytes).seconds;
        CHECK(relative_error(seconds, all.allreduce(bytes).seconds) < 1e-12);
        CHECK(pruned.allreduce_lower_bound(bytes, chosen) <= seconds);
      }
      CHECK(pruned.simulations() <= all.simulations());
      skipped += all.simulations() - pruned.simulations();
    }
  }
  return skipped;
}

}  // namespace

TEST_CASE("sim::timing: auto skips only candidates that cannot win: the same choice and time as trying all") {
  // One node, a few nodes; somewhere in the grid a candidate was not simulated.
  CHECK(check_pruning({8, 64}) > 0);
}

TEST_CASE("sim::timing: auto's pruning keeps the exhaustive choice at 256 GPUs" *
          doctest::test_suite("large-sim")) {
  check_pruning({256});
}

TEST_CASE("sim::timing: an all-reduce's lower bound stays below its simulated time") {
  for (const std::string preset : {"frontier", "dgx-h100"}) {
    const sim::PlatformSpec p = sim::platform_preset(preset);
    for (const int n : {8, 64}) {
      for (const auto algorithm :
           {sim::AllReduceAlgorithm::ring, sim::AllReduceAlgorithm::hierarchical,
            sim::AllReduceAlgorithm::tree, sim::AllReduceAlgorithm::nvls, sim::AllReduceAlgorithm::collnet}) {
        const bool one_node = n <= p.gpus_per_node;
        if ((algorithm == sim::AllReduceAlgorithm::nvls && (!one_node || p.nvls_efficiency == 0.0)) ||
            (algorithm == sim::AllReduceAlgorithm::collnet && (one_node || p.collnet_efficiency == 0.0)) ||
            (algorithm == sim::AllReduceAlgorithm::hierarchical && one_node)) {
          continue;
        }
        sim::CommSimulator simulator(p, n, options(sim::Fidelity::fast, algorithm));
        for (const std::int64_t bytes : {std::int64_t{4096}, std::int64_t{64} << 20}) {
          CAPTURE(preset);
          CAPTURE(n);
          CAPTURE(sim::allreduce_name(algorithm));
          CAPTURE(bytes);
          const double seconds = simulator.allreduce(bytes).seconds;
          const double bound = simulator.allreduce_lower_bound(bytes, simulator.allreduce_choice(bytes));
          CHECK(bound <= seconds);
          // Not vacuous: at least the latencies and per-step costs.
          CHECK(bound > p.collective_latency_s);
        }
      }
    }
  }
}

TEST_CASE("sim::time_schedule: under auto 25 MB buckets never make ResNet-50 slower than one all-reduce" *
          doctest::test_suite("large-sim")) {
  const auto profile = resnet50();
  for (const std::string preset : {"frontier", "summit", "dgx-h100"}) {
    for (const int wanted : {256, 1008}) {
      sim::TimingSpec spec;
      spec.platform = sim::platform_preset(preset);
      spec.gpus = wanted / spec.platform.gpus_per_node * spec.platform.gpus_per_node;
      spec.profile = profile;
      spec.batch_per_gpu = 32;
      const std::vector<topology::ScheduleStep> schedule = {
          {"allreduce", nullptr, topology::Communication::all_reduce}};
      const sim::TimingResult whole = sim::time_schedule(spec, schedule);
      spec.options.bucket_bytes = 25'000'000;
      const sim::TimingResult buckets = sim::time_schedule(spec, schedule);
      CAPTURE(preset);
      CAPTURE(spec.gpus);
      MESSAGE(preset << " " << spec.gpus << " GPUs: efficiency " << whole.scaling_efficiency << " whole, "
                     << buckets.scaling_efficiency << " with 25 MB buckets ("
                     << buckets.allreduce_algorithms.begin()->second.name() << ")");
      CHECK(buckets.seconds_per_iteration <= whole.seconds_per_iteration);
    }
  }
}
