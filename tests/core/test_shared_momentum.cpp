#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <span>
#include <vector>

#include "core/errors.hpp"
#include "core/sgd.hpp"
#include "core/shared_momentum.hpp"
#include "support/approx.hpp"

namespace core = dbench::core;

namespace {

/// Replicas that start a period at common parameters and momentum and take `lrs.size()` local SGD steps, each
/// replica with its own gradient; `same_each_step` keeps a replica's gradient fixed over the period.
struct Period {
  std::vector<std::vector<float>> x;
  std::vector<std::vector<float>> buf;
};

float gradient(std::size_t replica, std::size_t step, std::size_t j, bool same_each_step) {
  const std::size_t k = same_each_step ? 0 : step;
  return std::sin(static_cast<float>(3 * replica + 7 * k + 1) * static_cast<float>(j + 1) * 0.37f);
}

Period run_period(const core::SgdConfig& config, std::span<const float> x0, std::span<const float> m0,
                  std::span<const double> lrs, std::size_t replicas, bool same_each_step) {
  Period p;
  for (std::size_t r = 0; r < replicas; ++r) {
    p.x.emplace_back(x0.begin(), x0.end());
    p.buf.emplace_back(m0.begin(), m0.end());
    core::Sgd sgd(config);
    sgd.finish_step();  // the buffers hold momentum already: decay them
    std::vector<float> g(x0.size());
    for (std::size_t k = 0; k < lrs.size(); ++k) {
      for (std::size_t j = 0; j < g.size(); ++j) {
        g[j] = gradient(r, k, j, same_each_step);
      }
      sgd.step_replica(lrs[k], p.x.back(), g, p.buf.back());
    }
  }
  return p;
}

std::vector<float> mean_of(const std::vector<std::vector<float>>& rows) {
  std::vector<double> sum(rows.front().size(), 0.0);
  for (const auto& row : rows) {
    for (std::size_t j = 0; j < row.size(); ++j) {
      sum[j] += row[j];
    }
  }
  std::vector<float> mean(sum.size());
  for (std::size_t j = 0; j < sum.size(); ++j) {
    mean[j] = static_cast<float>(sum[j] / static_cast<double>(rows.size()));
  }
  return mean;
}

/// Largest |a - b| over the elements, relative to the largest |b|.
double relative_error(std::span<const float> a, std::span<const float> b) {
  double worst = 0.0;
  double scale = 0.0;
  for (std::size_t j = 0; j < a.size(); ++j) {
    worst = std::max(worst, std::abs(static_cast<double>(a[j]) - b[j]));
    scale = std::max(scale, std::abs(static_cast<double>(b[j])));
  }
  return worst / scale;
}

}  // namespace

TEST_CASE("core::shared_momentum: one step between averages rebuilds the replicas' mean momentum") {
  const std::vector<float> x0{0.5f, -1.0f, 2.0f, 0.25f, -0.75f};
  const std::vector<float> m0{0.1f, 0.2f, -0.3f, 0.0f, 0.05f};
  for (const bool nesterov : {false, true}) {
    CAPTURE(nesterov);
    // Weight decay too: with one step, the displacement holds the mean of g + lambda x exactly.
    const core::SgdConfig config{.momentum = 0.9, .weight_decay = 1e-2, .nesterov = nesterov};
    const std::vector<double> lrs{0.1};
    const Period p = run_period(config, x0, m0, lrs, 8, false);
    const auto coefficients = core::shared_momentum_coefficients(lrs, config);
    const auto mean_x = mean_of(p.x);
    std::vector<float> rebuilt(x0.size());
    for (std::size_t j = 0; j < x0.size(); ++j) {
      rebuilt[j] = static_cast<float>(coefficients.from_displacement * (x0[j] - mean_x[j]) +
                                      coefficients.from_momentum * m0[j]);
    }
    CHECK(relative_error(rebuilt, mean_of(p.buf)) < 1e-5);
  }
}

TEST_CASE("core::shared_momentum: several steps rebuild the mean exactly when each gradient holds still") {
  const std::vector<float> x0{0.5f, -1.0f, 2.0f, 0.25f};
  const std::vector<float> m0{0.1f, 0.2f, -0.3f, 0.0f};
  for (const bool nesterov : {false, true}) {
    CAPTURE(nesterov);
    const core::SgdConfig config{.momentum = 0.9, .weight_decay = 0.0, .nesterov = nesterov};
    // A period of three steps whose learning rates differ (a schedule in the middle of a change).
    const std::vector<double> lrs{0.1, 0.05, 0.025};
    const Period p = run_period(config, x0, m0, lrs, 6, true);
    const auto c = core::shared_momentum_coefficients(lrs, config);
    const auto mean_x = mean_of(p.x);
    std::vector<float> rebuilt(x0.size());
    for (std::size_t j = 0; j < x0.size(); ++j) {
      rebuilt[j] = static_cast<float>(c.from_displacement * (x0[j] - mean_x[j]) + c.from_momentum * m0[j]);
    }
    CHECK(relative_error(rebuilt, mean_of(p.buf)) < 1e-5);
    // Gradients that change within the period: no longer exact, still the right size and sign.
    const Period moving = run_period(config, x0, m0, lrs, 6, false);
    const auto moving_x = mean_of(moving.x);
    for (std::size_t j = 0; j < x0.size(); ++j) {
      rebuilt[j] = static_cast<float>(c.from_displacement * (x0[j] - moving_x[j]) + c.from_momentum * m0[j]);
    }
    CHECK(relative_error(rebuilt, mean_of(moving.buf)) > 1e-4);
  }
}

TEST_CASE("core::shared_momentum: the class follows its periods and hands every replica the same buffer") {
  const std::vector<float> x0{1.0f, -2.0f, 0.5f};
  const core::SgdConfig config{.momentum = 0.9, .weight_decay = 0.0, .nesterov = true};
  core::SharedMomentum shared(config, x0);
  for (float m : shared.momentum()) {
    CHECK(m == 0.0f);
  }
  // First period: two steps from zero momentum, each replica's gradient fixed, so the rebuild is exact.
  const std::vector<float> zero(x0.size(), 0.0f);
  const Period first = run_period(config, x0, zero, std::vector<double>{0.1, 0.1}, 4, true);
  shared.local_step(0.1);
  shared.local_step(0.1);
  const auto x1 = mean_of(first.x);
  const auto rebuilt = shared.after_average(x1);
  const std::vector<float> m1(rebuilt.begin(), rebuilt.end());
  CHECK(relative_error(m1, mean_of(first.buf)) < 1e-5);
  // Second period: one step from the shared state, measured from the first average on.
  const Period second = run_period(config, x1, m1, std::vector<double>{0.05}, 4, false);
  shared.local_step(0.05);
  const auto m2 = shared.after_average(mean_of(second.x));
  CHECK(relative_error(m2, mean_of(second.buf)) < 1e-5);
}

TEST_CASE("core::shared_momentum: without momentum or movement the displacement is not used") {
  const core::SgdConfig plain{.momentum = 0.0};
  const std::vector<double> lrs{0.1, 0.1};
  CHECK(core::shared_momentum_coefficients(lrs, plain).from_displacement == 0.0);
  const core::SgdConfig heavy{.momentum = 0.5};
  const std::vector<double> still{0.0, 0.0};
  const auto c = core::shared_momentum_coefficients(still, heavy);
  CHECK(c.from_displacement == 0.0);
  CHECK(c.from_momentum == dbench::testing::approx(0.25));
  core::SharedMomentum shared(heavy, std::vector<float>{1.0f, 2.0f});
  CHECK_THROWS_AS(shared.after_average(std::vector<float>{1.0f}), core::ShapeError);
}
