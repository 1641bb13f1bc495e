// Least-squares fits checked against the closed forms they recover.
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

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
    CHECK(fit.intercept == doctest::Approx(3.0).epsilon(1e-12));
    CHECK(fit.slope == doctest::Approx(0.5).epsilon(1e-12));
    REQUIRE(fit.residuals.size() == x.size());
    for (const double r : fit.residuals) {
      CHECK(std::abs(r) < 1e-12);
    }
    CHECK(fit.rms_residual < 1e-12);
    CHECK(fit.r_squared == doctest::Approx(1.0));
  }
}

TEST_CASE("validation::fit_line: ordinary least squares of a known set") {
  // x = 0, 1, 2; y = 1, 2, 4: slope 1.5, intercept 5/6, residuals +1/6, -1/3, +1/6.
  const auto fit = fit_line(std::vector<double>{0, 1, 2}, std::vector<double>{1, 2, 4});
  CHECK(fit.slope == doctest::Approx(1.5));
  CHECK(fit.intercept == doctest::Approx(5.0 / 6.0));
  CHECK(fit.residuals[0] == doctest::Approx(1.0 / 6.0));
  CHECK(fit.residuals[1] == doctest::Approx(-1.0 / 3.0));
  CHECK(fit.rms_residual == doctest::Approx(std::sqrt((1.0 / 36 + 1.0 / 9 + 1.0 / 36) / 3.0)));
  CHECK(fit.r_squared == doctest::Approx(1.0 - (1.0 / 6.0) / (14.0 / 3.0)));
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
  CHECK(fit.alpha_s == doctest::Approx(alpha).epsilon(1e-9));
  CHECK(fit.bandwidth_Bps == doctest::Approx(beta).epsilon(1e-9));
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
  CHECK(fit.alpha_s == doctest::Approx(alpha).epsilon(0.06));
  CHECK(fit.bandwidth_Bps == doctest::Approx(beta).epsilon(0.06));
  CHECK(fit.line.max_relative_residual == doctest::Approx(0.03).epsilon(0.5));
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
  CHECK(fit.flops_per_s == doctest::Approx(rate).epsilon(1e-9));
  CHECK(fit.overhead_s == doctest::Approx(overhead).epsilon(1e-9));
  CHECK_THROWS_AS(fit_compute(batches, seconds, 0.0), FitError);
}
