#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <vector>

#include "models/model_profile.hpp"
#include "sim/compute_model.hpp"
#include "sim/platform.hpp"
#include "sim/timing.hpp"
#include "support/approx.hpp"
#include "timing_fixtures.hpp"
#include "topology/generators.hpp"
#include "topology/graph_policy.hpp"

namespace sim = dbench::sim;
namespace topology = dbench::topology;
using namespace dbench::sim::testing;  // homogeneous_star, relative_error, resnet50

namespace {

std::vector<topology::ScheduleStep> repeated(const topology::ScheduleStep& step, int iterations) {
  return std::vector<topology::ScheduleStep>(static_cast<std::size_t>(iterations), step);
}

std::vector<topology::ScheduleStep> one_peer_schedule(const topology::GraphSequence& graphs, int iterations) {
  std::vector<topology::ScheduleStep> schedule;
  for (int t = 0; t < iterations; ++t) {
    const auto& g = graphs.at(t);
    schedule.push_back({g.name(), &g, topology::Communication::gossip});
  }
  return schedule;
}

}  // namespace

TEST_CASE(
    "sim::ComputeModel: lognormal jitter has mean 1 and the given spread, drawn the same in any order") {
  sim::PlatformSpec p = sim::platform_preset("frontier");
  p.compute_jitter_cv = 0.2;
  const int n = 512;
  const sim::ComputeModel model(p, n, 7);
  CHECK_FALSE(model.uniform());
  std::vector<double> f(static_cast<std::size_t>(n));
  double sum = 0.0;
  double squares = 0.0;
  const int iterations = 200;
  for (int t = 0; t < iterations; ++t) {
    model.factors(t, f);
    for (const double x : f) {
      sum += x;
      squares += x * x;
    }
  }
  const double count = static_cast<double>(n) * iterations;
  const double mean = sum / count;
  const double sd = std::sqrt(squares / count - mean * mean);
  CHECK(mean == dbench::testing::approx(1.0).epsilon(0.005));
  CHECK(sd / mean == dbench::testing::approx(0.2).epsilon(0.02));
  // Counter-based: iteration 5 is the same whether or not others were drawn, and another seed differs.
  std::vector<double> again(f.size());
  std::vector<double> other(f.size());
  model.factors(5, f);
  sim::ComputeModel(p, n, 7).factors(5, again);
  sim::ComputeModel(p, n, 8).factors(5, other);
  CHECK(f == again);
  CHECK(f != other);
}

TEST_CASE("sim::ComputeModel: slowdown, tail and stragglers") {
  sim::PlatformSpec p = sim::platform_preset("dgx-h100");
  p.multi_gpu_slowdown = 1.15;
  p.stragglers = 3;
  p.straggler_factor = 2.0;
  const sim::ComputeModel model(p, 64, 1);
  REQUIRE(model.straggler_gpus().size() == 3);
  CHECK(std::is_sorted(model.straggler_gpus().begin(), model.straggler_gpus().end()));
  std::vector<double> f(64);
  model.factors(0, f);
  for (int g = 0; g < 64; ++g) {
    const bool straggler =
        std::binary_search(model.straggler_gpus().begin(), model.straggler_gpus().end(), g);
    CHECK(f[static_cast<std::size_t>(g)] == dbench::testing::approx(straggler ? 2.3 : 1.15));
  }
  // One GPU alone is not slowed by the job it is not in.
  std::vector<double> one(1);
  sim::ComputeModel(p, 1, 1).factors(0, one);
  CHECK(one[0] == dbench::testing::approx(p.stragglers > 0 ? 2.0 : 1.0));

  sim::PlatformSpec tail = sim::platform_preset("dgx-h100");
  tail.compute_tail_probability = 0.01;
  tail.compute_tail_factor = 5.0;
  const sim::ComputeModel tailed(tail, 1000, 3);
  int slowed = 0;
  std::vector<double> t(1000);
  for (int it = 0; it < 100; ++it) {
    tailed.factors(it, t);
    slowed += static_cast<int>(std::count(t.begin(), t.end(), 5.0));
  }
  CHECK(slowed == dbench::testing::approx(1000.0).epsilon(0.1));  // 1 % of 10^5 draws, within 3 sigma
}

TEST_CASE("sim::platform: bad compute variation is rejected naming the key") {
  const auto rejects = [](auto change, const char* key) {
    sim::PlatformSpec p = sim::platform_preset("frontier");
    change(p);
    try {
      sim::validate(p, 64);
      FAIL("accepted");
    } catch (const sim::PlatformError& e) {
      CHECK(e.key() == key);
    }
  };
  rejects([](sim::PlatformSpec& p) { p.multi_gpu_slowdown = 0.9; }, "platform.multi_gpu_slowdown");
  rejects([](sim::PlatformSpec& p) { p.compute_jitter_cv = -0.1; }, "platform.compute_jitter_cv");
  rejects([](sim::PlatformSpec& p) { p.compute_jitter_cv = std::nan(""); }, "platform.compute_jitter_cv");
  rejects([](sim::PlatformSpec& p) { p.compute_tail_probability = 1.5; },
          "platform.compute_tail_probability");
  rejects([](sim::PlatformSpec& p) { p.compute_tail_factor = 0.5; }, "platform.compute_tail_factor");
  rejects([](sim::PlatformSpec& p) { p.stragglers = 65; }, "platform.stragglers");
  rejects([](sim::PlatformSpec& p) { p.straggler_factor = 0.0; }, "platform.straggler_factor");
}

TEST_CASE(
    "sim::time_schedule: under jitter the all-reduce pays E[max over GPUs] every iteration, gossip less") {
  sim::TimingSpec spec;
  spec.platform = sim::platform_preset("frontier");
  spec.platform.compute_jitter_cv = 0.1;
  spec.gpus = 1008;
  spec.profile = resnet50();
  spec.batch_per_gpu = 32;
  spec.options.allreduce = sim::AllReduceAlgorithm::ring;
  spec.seed = 11;
  const int iterations = 1000;
  const topology::ScheduleStep allreduce_step{"allreduce", nullptr, topology::Communication::all_reduce};
  const sim::TimingResult allreduce = sim::time_schedule(spec, repeated(allreduce_step, iterations));

  // An independent Monte Carlo: another generator, the textbook lognormal with mean 1 and CV 0.1.
  const double compute = sim::compute_seconds(spec.profile, spec.batch_per_gpu, spec.platform);
  sim::CommSimulator comm(spec.platform, spec.gpus, spec.options);
  const double allreduce_s = comm.allreduce(spec.profile.parameter_bytes()).seconds;
  const double sigma = std::sqrt(std::log1p(0.1 * 0.1));
  std::mt19937_64 rng(12345);
  std::lognormal_distribution<double> draw(-0.5 * sigma * sigma, sigma);
  double max_sum = 0.0;
  const int trials = 4000;
  for (int t = 0; t < trials; ++t) {
    double m = 0.0;
    for (int g = 0; g < spec.gpus; ++g) {
      m = std::max(m, draw(rng));
    }
    max_sum += m;
  }
  const double expected = compute * max_sum / trials + allreduce_s;
  MESSAGE("all-reduce under 10 % jitter: " << allreduce.seconds_per_iteration << " s, Monte Carlo "
                                           << expected << " s, no jitter " << compute + allreduce_s << " s");
  CHECK(relative_error(allreduce.seconds_per_iteration, expected) < 0.02);
  CHECK(allreduce.seconds_per_iteration > 1.2 * compute);  // E[max of 1008] is ~1.35 x the mean here

  // One-peer exponential gossip waits only for its in-neighbour: the jitter costs it much less.
  const auto graphs = topology::one_peer_exponential(spec.gpus);
  const sim::TimingResult gossip = sim::time_schedule(spec, one_peer_schedule(graphs, iterations));
  spec.platform.compute_jitter_cv = 0.0;
  const sim::TimingResult calm = sim::time_schedule(spec, one_peer_schedule(graphs, iterations));
  MESSAGE("one-peer exponential: " << gossip.seconds_per_iteration << " s under jitter, "
                                   << calm.seconds_per_iteration << " s without");
  CHECK(gossip.seconds_per_iteration < allreduce.seconds_per_iteration);
  CHECK(gossip.seconds_per_iteration - calm.seconds_per_iteration <
        0.5 * (allreduce.seconds_per_iteration - (compute + allreduce_s)));
}

TEST_CASE("sim::time_schedule: one persistently slow GPU sets every GPU's pace, all-reduce and gossip") {
  sim::TimingSpec spec;
  spec.platform = sim::platform_preset("dgx-h100");
  spec.platform.stragglers = 1;
  spec.platform.straggler_factor = 2.0;
  spec.gpus = 64;
  spec.profile = resnet50();
  spec.batch_per_gpu = 32;
  const int iterations = 300;
  const auto graphs = topology::one_peer_exponential(spec.gpus);
  const auto ring = topology::ring(spec.gpus);
  const std::vector<std::vector<topology::ScheduleStep>> schedules = {
      repeated({"allreduce", nullptr, topology::Communication::all_reduce}, iterations),
      one_peer_schedule(graphs, iterations),
      repeated({"ring", &ring, topology::Communication::gossip}, iterations)};
  for (const auto& schedule : schedules) {
    CAPTURE(schedule.front().name);
    const sim::TimingResult r = sim::time_schedule(spec, schedule, true);
    REQUIRE(r.straggler_gpus.size() == 1);
    const auto slow = static_cast<std::size_t>(r.straggler_gpus.front());
    // Each GPU's seconds per iteration over the last 96 iterations (whole periods of the one-peer graphs).
    const int window = 96;
    std::vector<double> rate(static_cast<std::size_t>(spec.gpus), 0.0);
    for (int t = iterations - window; t < iterations; ++t) {
      for (std::size_t g = 0; g < rate.size(); ++g) {
        rate[g] += r.iterations[static_cast<std::size_t>(t)].gpu_total_s[g] / window;
      }
    }
    const double compute = sim::compute_seconds(spec.profile, spec.batch_per_gpu, spec.platform);
    CHECK(rate[slow] >= 2.0 * compute * (1.0 - 1e-9));
    for (const double g : rate) {
      CHECK(relative_error(g, rate[slow]) < 0.01);
    }
  }
}

TEST_CASE("sim::time_schedule: full fidelity's per-GPU clocks agree with the fast path under jitter") {
  sim::TimingSpec spec;
  spec.platform = homogeneous_star();
  spec.platform.compute_jitter_cv = 0.3;
  spec.platform.stragglers = 1;
  spec.platform.straggler_factor = 1.5;
  spec.gpus = 16;
  spec.profile = resnet50();
  spec.batch_per_gpu = 4;
  const auto graphs = topology::one_peer_exponential(spec.gpus);
  const std::vector<std::vector<topology::ScheduleStep>> schedules = {
      repeated({"allreduce", nullptr, topology::Communication::all_reduce}, 12),
      one_peer_schedule(graphs, 12)};
  for (const auto& schedule : schedules) {
    CAPTURE(schedule.front().name);
    for (const std::int64_t buckets : {std::int64_t{0}, std::int64_t{25'000'000}}) {
      CAPTURE(buckets);
      spec.options.bucket_bytes = buckets;
      spec.options.fidelity = sim::Fidelity::fast;
      const sim::TimingResult fast = sim::time_schedule(spec, schedule, true);
      spec.options.fidelity = sim::Fidelity::full;
      const sim::TimingResult full = sim::time_schedule(spec, schedule, true);
      REQUIRE(full.gpu_clock_s.size() == 16);
      for (std::size_t g = 0; g < 16; ++g) {
        CHECK(relative_error(full.gpu_clock_s[g], fast.gpu_clock_s[g]) < 0.01);
      }
    }
  }
}
