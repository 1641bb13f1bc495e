// Calibration files: what dbench calibrate writes is what the simulator's platform loader reads.
#include <doctest/doctest.h>

#include <fstream>
#include <string>
#include <vector>

#include "experiments/timing_setup.hpp"
#include "sim/platform.hpp"
#include "support/approx.hpp"
#include "support/temp_dir.hpp"
#include "validation/calibration.hpp"

namespace {

using namespace dbench;

validation::LinkCalibration link(const std::string& pattern, double alpha, double beta) {
  validation::LinkCalibration l;
  l.pattern = pattern;
  l.bytes = {1024, 65536, 1048576};
  for (const double b : l.bytes) {
    l.seconds.push_back(alpha + b / beta);
  }
  l.fit = validation::fit_alpha_beta(l.bytes, l.seconds);
  return l;
}

validation::Calibration example() {
  validation::Calibration c;
  c.workers = 4;
  c.host = "test-host";
  validation::ModelCalibration m;
  m.model = "mlp";
  m.flops_per_sample = 3e5;
  m.batches = {8, 16, 32};
  for (const double b : m.batches) {
    m.seconds.push_back(2e-5 + b * m.flops_per_sample / 1.5e10);
    m.seconds_alone.push_back(0.9 * m.seconds.back());
    m.gossip_seconds.push_back(1e-5);
  }
  m.fit = validation::fit_compute(m.batches, m.seconds, m.flops_per_sample);
  c.models.push_back(m);
  c.point_to_point = link("ping-pong", 1e-6, 2e10);
  c.exchange = link("exchange", 4e-6, 6e9);
  c.allreduce = link("all-reduce", 8e-6, 1e9);
  c.small_allreduce_s = 5e-6;
  return c;
}

}  // namespace

TEST_CASE(
    "validation::anchored_fit: the line keeps its latency and passes through the model's measured size") {
  validation::LinkCalibration l = link("all-reduce", 8e-6, 1e9);
  // The size a model sends, measured 30 % slower than the line through the other sizes.
  l.bytes.push_back(200000);
  l.seconds.push_back(1.3 * (8e-6 + 200000 / 1e9));
  l.fit = validation::fit_alpha_beta(l.bytes, l.seconds);
  const validation::AlphaBetaFit at = validation::anchored_fit(l, 200000);
  CHECK(at.alpha_s == l.fit.alpha_s);
  CHECK(at.alpha_s + 200000 / at.bandwidth_Bps == dbench::testing::approx(l.seconds.back()).epsilon(1e-12));
  // A size not measured, or a measurement not above the latency, leaves the fit as it is.
  CHECK(validation::anchored_fit(l, 12345).bandwidth_Bps == l.fit.bandwidth_Bps);
  CHECK(validation::anchored_fit(l, 0).bandwidth_Bps == l.fit.bandwidth_Bps);
  l.seconds.back() = l.fit.alpha_s / 2;
  CHECK(validation::anchored_fit(l, 200000).bandwidth_Bps == l.fit.bandwidth_Bps);

  // The model's platform file takes the anchored lines, and says so.
  validation::Calibration c = example();
  c.models.front().parameter_bytes = 65536;
  c.allreduce.seconds[1] *= 1.5;
  const std::string toml = validation::platform_toml(c, c.models.front());
  CHECK(toml.find("the line through the 65536 bytes of mlp's parameters as measured") != std::string::npos);
  const testing::TempDir dir;
  std::ofstream(dir.path() / "mlp.toml") << toml;
  const sim::PlatformSpec p = experiments::read_calibration(dir.path() / "mlp.toml");
  CHECK(p.allreduce_latency_s + 65536 / p.allreduce_bandwidth_Bps ==
        dbench::testing::approx(c.allreduce.seconds[1]).epsilon(1e-5));
}

TEST_CASE("validation::platform_toml: read_calibration reads back the fitted platform") {
  const testing::TempDir dir;
  const validation::Calibration c = example();
  const auto file = dir.path() / "mlp.toml";
  std::ofstream(file) << validation::platform_toml(c, c.models.front());
  const sim::PlatformSpec p = experiments::read_calibration(file);
  CHECK(p.name == "mlp");
  CHECK(p.gpus_per_node == 4);
  CHECK(p.gpu_flops_per_s == dbench::testing::approx(1.5e10).epsilon(1e-5));
  CHECK(p.iteration_overhead_s == dbench::testing::approx(2e-5).epsilon(1e-5));
  // A message crosses two GPU ports: the exchange's alpha split over them.
  CHECK(p.intra_node_latency_s == dbench::testing::approx(2e-6).epsilon(1e-5));
  CHECK(p.intra_node_bandwidth_Bps == dbench::testing::approx(6e9).epsilon(1e-5));
  CHECK(p.fabric == sim::Fabric::star);
  // Centralized steps pay the all-reduce as measured.
  CHECK(p.allreduce_latency_s == dbench::testing::approx(8e-6).epsilon(1e-5));
  CHECK(p.allreduce_bandwidth_Bps == dbench::testing::approx(1e9).epsilon(1e-5));
  CHECK_NOTHROW(sim::validate(p, 4));
  // One node: the simulated compute is the fitted model.
  models::ModelProfile profile;
  profile.forward_flops_per_sample = 1e5;
  profile.backward_flops_per_sample = 2e5;
  CHECK(sim::compute_seconds(profile, 16, p) ==
        dbench::testing::approx(2e-5 + 16 * 3e5 / 1.5e10).epsilon(1e-5));
}

TEST_CASE("validation::platform_toml: the config's batch between two timed ones is charged their line") {
  const testing::TempDir dir;
  validation::Calibration c = example();
  validation::ModelCalibration& m = c.models.front();
  // Concave: the step at 16 above the line through 8 and 32.
  m.seconds[1] *= 1.3;
  m.fit = validation::fit_compute(m.batches, m.seconds, m.flops_per_sample);
  m.step_batch = 24;
  m.step_between = validation::fit_compute_between(m.batches, m.seconds, m.flops_per_sample, 24);
  REQUIRE(m.step_between.has_value());
  const auto file = dir.path() / "mlp.toml";
  const std::string toml = validation::platform_toml(c, m);
  std::ofstream(file) << toml;
  CHECK(toml.find("The step at batch 24 per worker") != std::string::npos);
  // What it was fitted to, for the warning where another model or batch is simulated on it.
  CHECK(toml.find("\nfitted_model = \"mlp\"\nfitted_batch_per_gpu = 24\n") != std::string::npos);
  const sim::PlatformSpec p = experiments::read_calibration(file);
  models::ModelProfile profile;
  profile.forward_flops_per_sample = 1e5;
  profile.backward_flops_per_sample = 2e5;
  // Halfway between the steps at 16 and 32, not the line through all three.
  const double between = 0.5 * (m.seconds[1] + m.seconds[2]);
  CHECK(sim::compute_seconds(profile, 24, p) == dbench::testing::approx(between).epsilon(1e-5));
  CHECK(m.fit.seconds_at(24, m.flops_per_sample) < 0.99 * between);
  const validation::Calibration back = validation::calibration_from_json(validation::to_json(c));
  REQUIRE(back.models.front().step_between.has_value());
  CHECK(back.models.front().step_batch == 24);
  CHECK(back.models.front().step_between->flops_per_s ==
        dbench::testing::approx(m.step_between->flops_per_s));
  CHECK(back.models.front().step_between->overhead_s == dbench::testing::approx(m.step_between->overhead_s));
  CHECK_FALSE(validation::calibration_from_json(validation::to_json(example())).models.front().step_between);
}

TEST_CASE("validation::to_json: the calibration round-trips with its residuals") {
  const validation::Calibration c = example();
  const validation::Calibration back = validation::calibration_from_json(validation::to_json(c));
  CHECK(back.workers == 4);
  CHECK(back.host == "test-host");
  REQUIRE(back.models.size() == 1);
  CHECK(back.models[0].fit.flops_per_s == dbench::testing::approx(c.models[0].fit.flops_per_s));
  CHECK(back.models[0].fit.line.residuals.size() == 3);
  CHECK(back.exchange.fit.bandwidth_Bps == dbench::testing::approx(6e9));
  CHECK(back.allreduce.seconds == c.allreduce.seconds);
  CHECK(back.models[0].seconds_alone == c.models[0].seconds_alone);
  CHECK(back.models[0].gossip_seconds == c.models[0].gossip_seconds);
  CHECK(&validation::model_calibration(back, "mlp") == &back.models[0]);
  CHECK_THROWS_WITH_AS(validation::model_calibration(back, "lenet"), doctest::Contains("calibrated: mlp"),
                       std::invalid_argument);
}
