// Workers that take turns on a core (shared_core_turns, cores_per_node, same_core_relief) and a centralized
// step's separate update (gradient_step_overhead_s): the platform keys a CPU calibration writes, against
// their closed forms.
#include <doctest/doctest.h>

#include <vector>

#include "sim/platform.hpp"
#include "sim/timing.hpp"
#include "support/approx.hpp"
#include "timing_fixtures.hpp"
#include "topology/generators.hpp"
#include "topology/graph_policy.hpp"

namespace {

using namespace dbench;
using namespace dbench::sim::testing;

// Four GPUs of one node, gossiping on a ring or all-reducing through a measured collective.
sim::TimingSpec cpu_node() {
  sim::TimingSpec spec;
  spec.platform = sim::make_platform({.gpus = 4, .port = {2e9, 1e-6}, .nics = 1, .nic = {2e9, 0.0}},
                                     {.fabric = sim::Fabric::star, .link = {2e9, 0.0}});
  spec.platform.gpu_flops_per_s = 1e11;
  spec.platform.iteration_overhead_s = 2e-5;
  spec.platform.allreduce_latency_s = 1e-5;
  spec.platform.allreduce_bandwidth_Bps = 1e9;
  spec.gpus = 4;
  spec.profile = resnet50();
  spec.batch_per_gpu = 2;
  return spec;
}

}  // namespace

TEST_CASE("sim::time_schedule: workers sharing a core wait for each other's steps, as communication") {
  sim::TimingSpec spec = cpu_node();
  const auto ring = topology::ring(4);
  const std::vector<topology::ScheduleStep> gossip(3, {"ring", &ring, topology::Communication::gossip});
  const std::vector<topology::ScheduleStep> allreduce(
      3, topology::ScheduleStep{"allreduce", nullptr, topology::Communication::all_reduce});
  const double step = sim::compute_seconds(spec.profile, spec.batch_per_gpu, spec.platform);
  for (const auto* schedule : {&gossip, &allreduce}) {
    const auto alone = sim::time_schedule(spec, *schedule);
    spec.platform.shared_core_turns = 1.0;
    const auto shared = sim::time_schedule(spec, *schedule);
    spec.platform.shared_core_turns = 0.0;
    // The step itself is unchanged; the other worker's turn is added to the communication, and to the
    // iteration.
    CHECK(shared.iterations[1].compute_s ==
          dbench::testing::approx(alone.iterations[1].compute_s).epsilon(1e-12));
    CHECK(shared.iterations[1].comm_s ==
          dbench::testing::approx(alone.iterations[1].comm_s + step).epsilon(1e-9));
    CHECK(shared.seconds_per_iteration ==
          dbench::testing::approx(alone.seconds_per_iteration + step).epsilon(1e-9));
  }
}

TEST_CASE("sim::same_core_share: in-neighbours on a GPU's own processor, placed round-robin") {
  sim::PlatformSpec p = cpu_node().platform;
  const auto ring = topology::ring(4);
  const auto exponential = topology::exponential(4);  // in-neighbours i - 1 and i - 2
  // A processor per GPU: no neighbour shares one.
  CHECK(sim::same_core_share(exponential, p) == std::vector<double>(4, 0.0));
  p.cores_per_node = 2;  // GPUs 0 and 2 on one processor, 1 and 3 on the other
  CHECK(sim::same_core_share(ring, p) == std::vector<double>(4, 0.0));
  CHECK(sim::same_core_share(exponential, p) == std::vector<double>(4, 0.5));
  p.cores_per_node = 1;  // all four on one
  CHECK(sim::same_core_share(ring, p) == std::vector<double>(4, 1.0));
  // Two nodes of four: a processor is shared within a node only.
  p.cores_per_node = 2;
  p.gpus_per_node = 2;
  CHECK(sim::same_core_share(exponential, p) == std::vector<double>(4, 0.0));
}

TEST_CASE("sim::gossip_wait_steps: the turns less the relief by the share, never less than the own step") {
  sim::PlatformSpec p;
  p.shared_core_turns = 0.2;
  p.same_core_relief = 0.3;
  CHECK(sim::gossip_wait_steps(p, 0.0) == dbench::testing::approx(1.2));
  CHECK(sim::gossip_wait_steps(p, 0.5) == dbench::testing::approx(1.05));
  // All in-neighbours on its core: the relief would take 0.1 steps off its own step; the step stays.
  CHECK(sim::gossip_wait_steps(p, 1.0) == 1.0);
  // A relief of its own at a whole share: up to half a share the line through same_core_relief, from there
  // a line to same_core_relief_whole.
  p.shared_core_turns = 0.5;
  p.same_core_relief_whole = 0.1;
  CHECK(sim::gossip_wait_steps(p, 0.0) == dbench::testing::approx(1.5));
  CHECK(sim::gossip_wait_steps(p, 0.25) == dbench::testing::approx(1.425));
  CHECK(sim::gossip_wait_steps(p, 0.5) == dbench::testing::approx(1.35));
  CHECK(sim::gossip_wait_steps(p, 0.75) ==
        dbench::testing::approx(1.375));  // spared halfway from 0.15 to 0.1
  CHECK(sim::gossip_wait_steps(p, 1.0) == dbench::testing::approx(1.4));
}

TEST_CASE(
    "sim::time_schedule: a relief at a whole share alone relieves the rounds whose in-neighbours all "
    "share the processor") {
  sim::TimingSpec spec = cpu_node();
  spec.platform.shared_core_turns = 1.0;
  spec.platform.cores_per_node = 2;
  // One-peer exponential on 4 GPUs over 2 processors: round 0's in-neighbour on the other processor
  // (share 0), round 1's on the GPU's own (share 1).
  const topology::GraphSequence one_peer = topology::one_peer_exponential(4);
  const std::vector<topology::ScheduleStep> rounds{
      {"one-peer 0", &one_peer.at(0), topology::Communication::gossip},
      {"one-peer 1", &one_peer.at(1), topology::Communication::gossip}};
  CHECK(sim::same_core_share(one_peer.at(0), spec.platform) == std::vector<double>(4, 0.0));
  CHECK(sim::same_core_share(one_peer.at(1), spec.platform) == std::vector<double>(4, 1.0));
  const double step = sim::compute_seconds(spec.profile, spec.batch_per_gpu, spec.platform);
  const auto before = sim::time_schedule(spec, rounds);
  spec.platform.same_core_relief_whole = 0.4;  // same_core_relief 0: only whole shares are relieved
  const auto relieved = sim::time_schedule(spec, rounds);
  CHECK(relieved.iterations[0].comm_s == dbench::testing::approx(before.iterations[0].comm_s).epsilon(1e-12));
  CHECK(relieved.iterations[1].comm_s ==
        dbench::testing::approx(before.iterations[1].comm_s - 0.4 * step).epsilon(1e-9));
}

TEST_CASE("sim::time_schedule: in-neighbours sharing a GPU's processor relieve its wait by their share") {
  sim::TimingSpec spec = cpu_node();
  spec.platform.shared_core_turns = 1.0;
  spec.platform.cores_per_node = 2;
  const auto ring = topology::ring(4);
  const auto exponential = topology::exponential(4);
  const std::vector<topology::ScheduleStep> on_ring(3, {"ring", &ring, topology::Communication::gossip});
  const std::vector<topology::ScheduleStep> on_exponential(
      3, {"exponential", &exponential, topology::Communication::gossip});
  const std::vector<topology::ScheduleStep> allreduce(
      3, topology::ScheduleStep{"allreduce", nullptr, topology::Communication::all_reduce});
  const double step = sim::compute_seconds(spec.profile, spec.batch_per_gpu, spec.platform);
  const auto ring_before = sim::time_schedule(spec, on_ring);
  const auto exponential_before = sim::time_schedule(spec, on_exponential);
  const auto allreduce_before = sim::time_schedule(spec, allreduce);
  spec.platform.same_core_relief = 0.6;
  CHECK(refused_key(spec.platform, 4).empty());
  // The ring's in-neighbours are all on the other processor, the all-reduce waits for everyone: unchanged.
  CHECK(sim::time_schedule(spec, on_ring).iterations[1].comm_s ==
        dbench::testing::approx(ring_before.iterations[1].comm_s).epsilon(1e-12));
  CHECK(sim::time_schedule(spec, allreduce).iterations[1].comm_s ==
        dbench::testing::approx(allreduce_before.iterations[1].comm_s).epsilon(1e-12));
  // Half the exponential graph's in-neighbours share the processor: 0.6 x 0.5 steps less of waiting.
  const auto relieved = sim::time_schedule(spec, on_exponential);
  CHECK(relieved.iterations[1].compute_s ==
        dbench::testing::approx(exponential_before.iterations[1].compute_s).epsilon(1e-12));
  CHECK(relieved.iterations[1].comm_s ==
        dbench::testing::approx(exponential_before.iterations[1].comm_s - 0.3 * step).epsilon(1e-9));
  // Full fidelity charges the same.
  spec.options.fidelity = sim::Fidelity::full;
  CHECK(sim::time_schedule(spec, on_exponential).iterations[1].comm_s ==
        dbench::testing::approx(relieved.iterations[1].comm_s).epsilon(1e-9));
  // A relief beyond the turns spares all of them, never the GPU's own step: the exchange alone remains.
  spec.options.fidelity = sim::Fidelity::fast;
  spec.platform.same_core_relief = 3.0;
  spec.platform.shared_core_turns = 0.0;
  const auto no_turns = sim::time_schedule(spec, on_exponential);
  spec.platform.shared_core_turns = 1.0;
  CHECK(sim::time_schedule(spec, on_exponential).iterations[1].comm_s ==
        dbench::testing::approx(no_turns.iterations[1].comm_s).epsilon(1e-9));
}

TEST_CASE(
    "sim::time_schedule: a step whose gradient is all-reduced pays the separate update, a local one not") {
  sim::TimingSpec spec = cpu_node();
  const auto ring = topology::ring(4);
  const std::vector<topology::ScheduleStep> schedule{
      {"allreduce", nullptr, topology::Communication::all_reduce},
      {"ring", &ring, topology::Communication::gossip},
      {"local", nullptr, topology::Communication::none}};
  const auto before = sim::time_schedule(spec, schedule);
  spec.platform.gradient_step_overhead_s = 3e-5;
  const auto after = sim::time_schedule(spec, schedule);
  CHECK(after.iterations[0].compute_s ==
        dbench::testing::approx(before.iterations[0].compute_s + 3e-5).epsilon(1e-12));
  CHECK(after.iterations[0].comm_s == dbench::testing::approx(before.iterations[0].comm_s).epsilon(1e-9));
  CHECK(after.iterations[1].compute_s ==
        dbench::testing::approx(before.iterations[1].compute_s).epsilon(1e-12));
  CHECK(after.iterations[2].compute_s ==
        dbench::testing::approx(before.iterations[2].compute_s).epsilon(1e-12));
}

TEST_CASE("sim::validate: the shared-core keys and gradient_step_overhead_s out of range name their key") {
  sim::PlatformSpec p = cpu_node().platform;
  CHECK(refused_key(p, 4).empty());
  p.shared_core_turns = -0.5;
  CHECK(refused_key(p, 4) == "platform.shared_core_turns");
  p.shared_core_turns = 3.5;  // more than the node's other 3 GPUs
  CHECK(refused_key(p, 4) == "platform.shared_core_turns");
  p.shared_core_turns = 3.0;
  CHECK(refused_key(p, 4).empty());
  p.gradient_step_overhead_s = -1e-6;
  CHECK(refused_key(p, 4) == "platform.gradient_step_overhead_s");
  p.gradient_step_overhead_s = 0.0;
  p.shared_core_turns = 1.0;
  p.same_core_relief = 3.5;  // more than the node's other 3 GPUs
  CHECK(refused_key(p, 4) == "platform.same_core_relief");
  p.same_core_relief = -0.1;
  CHECK(refused_key(p, 4) == "platform.same_core_relief");
  p.same_core_relief = 2.0;  // beyond shared_core_turns: the wait it spares is not only the turns' slope
  CHECK(refused_key(p, 4).empty());
  p.same_core_relief_whole = 3.5;
  CHECK(refused_key(p, 4) == "platform.same_core_relief_whole");
  p.same_core_relief_whole = -0.1;
  CHECK(refused_key(p, 4) == "platform.same_core_relief_whole");
  p.same_core_relief_whole = 0.0;  // no relief where all in-neighbours share the processor
  CHECK(refused_key(p, 4).empty());
  p.cores_per_node = 5;  // more processors than the node's 4 GPUs
  CHECK(refused_key(p, 4) == "platform.cores_per_node");
  p.cores_per_node = -1;
  CHECK(refused_key(p, 4) == "platform.cores_per_node");
}
