// Least-squares fits checked against the closed forms they recover.
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "support/approx.hpp"
#include "validation/fits.hpp"

namespace {

using dbench::validation::fit_alpha_beta;
using dbench::validation::fit_compute;
using dbench::validation::fit_line;
using dbench::validation::FitError;

const std::vector<double> kSizes{256, 4096, 65536, 262144, 1048576};

}  // namespace

TEST_CASE("validation::fit_line: exact data gives the line back with zero residuals") {
  const std::vector<double> x{1, 2, 4, 8};
  std::vector<double> y;
  for (const double v : x) {
    y.push_back(3.0 + 0.5 * v);
  }
  for (const bool relative : {false, true}) {
    const auto fit = fit_line(x, y, relative);
    CHECK(fit.intercept == dbench::testing::approx(3.0).epsilon(1e-12));
    CHECK(fit.slope == dbench::testing::approx(0.5).epsilon(1e-12));
    REQUIRE(fit.residuals.size() == x.size());
    for (const double r : fit.residuals) {
      CHECK(std::abs(r) < 1e-12);
    }
    CHECK(fit.rms_residual < 1e-12);
    CHECK(fit.r_squared == dbench::testing::approx(1.0));
  }
}

TEST_CASE("validation::fit_line: ordinary least squares of a known set") {
  // x = 0, 1, 2; y = 1, 2, 4: slope 1.5, intercept 5/6, residuals +1/6, -1/3, +1/6.
  const auto fit = fit_line(std::vector<double>{0, 1, 2}, std::vector<double>{1, 2, 4});
  CHECK(fit.slope == dbench::testing::approx(1.5));
  CHECK(fit.intercept == dbench::testing::approx(5.0 / 6.0));
  CHECK(fit.residuals[0] == dbench::testing::approx(1.0 / 6.0));
  CHECK(fit.residuals[1] == dbench::testing::approx(-1.0 / 3.0));
  CHECK(fit.rms_residual == dbench::testing::approx(std::sqrt((1.0 / 36 + 1.0 / 9 + 1.0 / 36) / 3.0)));
  CHECK(fit.r_squared == dbench::testing::approx(1.0 - (1.0 / 6.0) / (14.0 / 3.0)));
}

TEST_CASE("validation::fit_line: rejects what cannot be fitted") {
  CHECK_THROWS_AS(fit_line(std::vector<double>{1}, std::vector<double>{1}), FitError);
  CHECK_THROWS_AS(fit_line(std::vector<double>{1, 2}, std::vector<double>{1}), FitError);
  CHECK_THROWS_AS(fit_line(std::vector<double>{2, 2}, std::vector<double>{1, 3}), FitError);
  CHECK_THROWS_AS(fit_line(std::vector<double>{1, 2}, std::vector<double>{0, 3}, true), FitError);
}

TEST_CASE("validation::fit_alpha_beta: exact alpha-beta times recover alpha and beta") {
  const double alpha = 5e-6;
  const double beta = 8e9;
  std::vector<double> seconds;
  for (const double b : kSizes) {
    seconds.push_back(alpha + b / beta);
  }
  const auto fit = fit_alpha_beta(kSizes, seconds);
  CHECK(fit.alpha_s == dbench::testing::approx(alpha).epsilon(1e-9));
  CHECK(fit.bandwidth_Bps == dbench::testing::approx(beta).epsilon(1e-9));
  CHECK(fit.line.max_relative_residual < 1e-9);
}

TEST_CASE("validation::fit_alpha_beta: +-3 % noise keeps alpha and beta within 6 %") {
  const double alpha = 2e-6;
  const double beta = 5e9;
  std::vector<double> seconds;
  for (std::size_t i = 0; i < kSizes.size(); ++i) {
    seconds.push_back((alpha + kSizes[i] / beta) * (i % 2 == 0 ? 1.03 : 0.97));
  }
  const auto fit = fit_alpha_beta(kSizes, seconds);
  CHECK(fit.alpha_s == dbench::testing::approx(alpha).epsilon(0.06));
  CHECK(fit.bandwidth_Bps == dbench::testing::approx(beta).epsilon(0.06));
  CHECK(fit.line.max_relative_residual == dbench::testing::approx(0.03).epsilon(0.5));
}

TEST_CASE("validation::fit_alpha_beta: a time that does not grow with size has no bandwidth") {
  CHECK_THROWS_AS(fit_alpha_beta(kSizes, std::vector<double>(kSizes.size(), 1e-5)), FitError);
}

TEST_CASE("validation::fit_compute: overhead and rate of t = overhead + batch * flops / rate") {
  const double flops = 3e5;
  const double rate = 2e10;
  const double overhead = 1e-5;
  const std::vector<double> batches{8, 16, 32, 64};
  std::vector<double> seconds;
  for (const double b : batches) {
    seconds.push_back(overhead + b * flops / rate);
  }
  const auto fit = fit_compute(batches, seconds, flops);
  CHECK(fit.flops_per_s == dbench::testing::approx(rate).epsilon(1e-9));
  CHECK(fit.overhead_s == dbench::testing::approx(overhead).epsilon(1e-9));
  CHECK_THROWS_AS(fit_compute(batches, seconds, 0.0), FitError);
}

TEST_CASE("validation::fit_compute_between: the line through the timed batches on either side") {
  const double flops = 3e5;
  // Convex, as LeNet's step on shared cores: the line through all four lies above the step at 24.
  const std::vector<double> batches{8, 16, 32, 64};
  const std::vector<double> seconds{1.55e-3, 2.16e-3, 3.46e-3, 7.13e-3};
  const auto all = fit_compute(batches, seconds, flops);
  const auto near = dbench::validation::fit_compute_between(batches, seconds, flops, 24);
  REQUIRE(near.has_value());
  const auto at = [&](const dbench::validation::ComputeFit& f, double b) { return f.seconds_at(b, flops); };
  CHECK(at(*near, 16) == dbench::testing::approx(2.16e-3));
  CHECK(at(*near, 32) == dbench::testing::approx(3.46e-3));
  CHECK(at(*near, 24) == dbench::testing::approx(2.81e-3));
  CHECK(at(all, 24) > 1.04 * at(*near, 24));
  // A timed batch: the line passes through its own step; the top batch takes the segment below it.
  CHECK(at(*dbench::validation::fit_compute_between(batches, seconds, flops, 16), 16) ==
        dbench::testing::approx(2.16e-3));
  // LeNet's steepest segment would need a negative overhead: the step at the batch is then all FLOPs.
  const auto steepest = dbench::validation::fit_compute_between(batches, seconds, flops, 48);
  REQUIRE(steepest.has_value());
  CHECK(steepest->overhead_s == 0.0);
  CHECK(at(*steepest, 48) == dbench::testing::approx(0.5 * (3.46e-3 + 7.13e-3)));
  const std::vector<double> mlp{4.9e-5, 6.1e-5, 1.16e-4, 1.81e-4};
  const auto top = dbench::validation::fit_compute_between(batches, mlp, flops, 64);
  REQUIRE(top.has_value());
  CHECK(at(*top, 32) == dbench::testing::approx(1.16e-4));
  CHECK(at(*top, 64) == dbench::testing::approx(1.81e-4));
  // Unordered input and a batch timed twice (its mean counts).
  const std::vector<double> shuffled{32, 16, 16};
  const std::vector<double> shuffled_s{3.46e-3, 2.0e-3, 2.32e-3};
  CHECK(at(*dbench::validation::fit_compute_between(shuffled, shuffled_s, flops, 24), 24) ==
        dbench::testing::approx(2.81e-3));
  // Outside the timed batches, or a segment that does not grow: none.
  CHECK_FALSE(dbench::validation::fit_compute_between(batches, seconds, flops, 4).has_value());
  CHECK_FALSE(dbench::validation::fit_compute_between(batches, seconds, flops, 128).has_value());
  const std::vector<double> falling{7.1e-5, 5.75e-5, 1.0e-4, 1.6e-4};
  CHECK_FALSE(dbench::validation::fit_compute_between(batches, falling, flops, 12).has_value());
  CHECK(dbench::validation::fit_compute_between(batches, falling, flops, 24).has_value());
}
