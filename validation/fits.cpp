#include "validation/fits.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <utility>

namespace dbench::validation {

LineFit fit_line(std::span<const double> x, std::span<const double> y, bool relative) {
  if (x.size() != y.size()) {
    throw FitError(fmt::format("fit: {} x values but {} y values", x.size(), y.size()));
  }
  if (x.size() < 2) {
    throw FitError(fmt::format("fit: needs at least 2 measurements, got {}", x.size()));
  }
  // Weighted normal equations: minimise sum w_i (y_i - a - b x_i)^2.
  double sw = 0.0;
  double sx = 0.0;
  double sy = 0.0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (relative && !(y[i] > 0.0)) {
      throw FitError(fmt::format("fit: a relative fit needs positive values, got {} at x = {}", y[i], x[i]));
    }
    const double w = relative ? 1.0 / (y[i] * y[i]) : 1.0;
    sw += w;
    sx += w * x[i];
    sy += w * y[i];
  }
  const double mx = sx / sw;
  const double my = sy / sw;
  double sxx = 0.0;
  double sxy = 0.0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double w = relative ? 1.0 / (y[i] * y[i]) : 1.0;
    sxx += w * (x[i] - mx) * (x[i] - mx);
    sxy += w * (x[i] - mx) * (y[i] - my);
  }
  if (!(sxx > 0.0)) {
    throw FitError("fit: every measurement has the same x; measure at least two sizes");
  }
  LineFit fit;
  fit.slope = sxy / sxx;
  fit.intercept = my - fit.slope * mx;
  double ss_res = 0.0;
  double ss_tot = 0.0;
  double mean_y = 0.0;
  for (const double v : y) {
    mean_y += v / static_cast<double>(y.size());
  }
  fit.residuals.reserve(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double r = y[i] - (fit.intercept + fit.slope * x[i]);
    fit.residuals.push_back(r);
    ss_res += r * r;
    ss_tot += (y[i] - mean_y) * (y[i] - mean_y);
    if (y[i] != 0.0) {
      fit.max_relative_residual = std::max(fit.max_relative_residual, std::abs(r / y[i]));
    }
  }
  fit.rms_residual = std::sqrt(ss_res / static_cast<double>(x.size()));
  fit.r_squared = ss_tot > 0.0 ? 1.0 - ss_res / ss_tot : (ss_res == 0.0 ? 1.0 : 0.0);
  return fit;
}

AlphaBetaFit fit_alpha_beta(std::span<const double> bytes, std::span<const double> seconds) {
  AlphaBetaFit fit;
  fit.line = fit_line(bytes, seconds, true);
  if (!(fit.line.slope > 0.0)) {
    throw FitError(fmt::format(
        "alpha-beta fit: the time does not grow with the message size (slope {} s/byte); measure larger "
        "messages",
        fit.line.slope));
  }
  fit.bandwidth_Bps = 1.0 / fit.line.slope;
  // A slightly negative intercept is noise around a latency too small to resolve.
  fit.alpha_s = std::max(0.0, fit.line.intercept);
  return fit;
}

ComputeFit fit_compute(std::span<const double> batches, std::span<const double> seconds,
                       double flops_per_sample) {
  if (!(flops_per_sample > 0.0)) {
    throw FitError(fmt::format("compute fit: FLOPs per sample must be positive, got {}", flops_per_sample));
  }
  ComputeFit fit;
  fit.line = fit_line(batches, seconds, true);
  if (!(fit.line.slope > 0.0)) {
    throw FitError(fmt::format(
        "compute fit: the step time does not grow with the batch (slope {} s/sample); measure larger batches",
        fit.line.slope));
  }
  fit.flops_per_s = flops_per_sample / fit.line.slope;
  fit.overhead_s = std::max(0.0, fit.line.intercept);
  return fit;
}

std::optional<ComputeFit> fit_compute_between(std::span<const double> batches,
                                              std::span<const double> seconds, double flops_per_sample,
                                              double batch) {
  if (batches.size() != seconds.size() || !(flops_per_sample > 0.0)) {
    return std::nullopt;
  }
  // The timed batches in order, a batch timed twice as the mean of its timings.
  std::vector<std::pair<double, double>> points;
  for (std::size_t i = 0; i < batches.size(); ++i) {
    points.emplace_back(batches[i], seconds[i]);
  }
  std::sort(points.begin(), points.end());
  std::vector<std::pair<double, double>> timed;
  for (std::size_t i = 0; i < points.size();) {
    std::size_t j = i;
    double sum = 0.0;
    for (; j < points.size() && points[j].first == points[i].first; ++j) {
      sum += points[j].second;
    }
    timed.emplace_back(points[i].first, sum / static_cast<double>(j - i));
    i = j;
  }
  if (timed.size() < 2 || batch < timed.front().first || batch > timed.back().first) {
    return std::nullopt;
  }
  std::size_t upper = 1;
  while (upper + 1 < timed.size() && timed[upper].first <= batch) {
    ++upper;
  }
  const auto [b0, t0] = timed[upper - 1];
  const auto [b1, t1] = timed[upper];
  const double slope = (t1 - t0) / (b1 - b0);
  if (!(slope > 0.0)) {
    return std::nullopt;
  }
  ComputeFit fit;
  fit.line.intercept = t0 - slope * b0;
  fit.line.slope = slope;
  fit.line.r_squared = 1.0;
  if (fit.line.intercept < 0.0) {
    // No overhead can be negative: the step at `batch` (on the line) is then all FLOPs.
    if (!(batch > 0.0)) {
      return std::nullopt;
    }
    fit.line.slope = (t0 + slope * (batch - b0)) / batch;
    fit.line.intercept = 0.0;
  }
  fit.overhead_s = fit.line.intercept;
  fit.flops_per_s = flops_per_sample / fit.line.slope;
  return fit;
}

}  // namespace dbench::validation
