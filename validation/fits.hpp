// Least-squares fits of micro-benchmark measurements: a straight line, the alpha-beta model of a link
// (time = alpha + bytes / beta) and the compute model of a worker (time = overhead + batch * FLOPs / rate).
#pragma once

#include <optional>
#include <span>
#include <stdexcept>
#include <vector>

namespace dbench::validation {

/// Measurements that cannot be fitted (too few points, mismatched lengths, a degenerate x).
class FitError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

/// y = intercept + slope * x, fitted by ordinary least squares.
struct LineFit {
  double intercept = 0.0;
  double slope = 0.0;
  std::vector<double> residuals;  ///< y_i - fitted y_i, in input order
  double rms_residual = 0.0;      ///< sqrt(mean of squared residuals)
  /// Largest |residual_i| / y_i (0 where y_i is 0): how far the model misses one measurement, relatively.
  double max_relative_residual = 0.0;
  double r_squared = 0.0;  ///< 1 - SS_res / SS_tot (1 when every y is equal and fitted exactly)
};

/// Ordinary least squares of y on x; `relative` weighs each point by 1/y_i^2, so that small and large
/// measurements (latency-bound and bandwidth-bound messages) count alike. Throws FitError with fewer than
/// two points, lengths that differ, all x equal, or (relative) a y that is not positive.
LineFit fit_line(std::span<const double> x, std::span<const double> y, bool relative = false);

/// A link class's alpha-beta model: seconds = alpha_s + bytes / bandwidth_Bps.
struct AlphaBetaFit {
  double alpha_s = 0.0;        ///< fixed cost of a message (latency and software overhead)
  double bandwidth_Bps = 0.0;  ///< bytes per second once the message streams
  LineFit line;                ///< the fit behind it (x: bytes, y: seconds)
};

/// Fits seconds = alpha + bytes / beta with relative weights; throws FitError when the fitted slope is not
/// positive (no bandwidth can be derived) or the intercept negative beyond the noise (clamped to 0
/// otherwise).
AlphaBetaFit fit_alpha_beta(std::span<const double> bytes, std::span<const double> seconds);

/// A worker's compute model for one model: seconds = overhead_s + batch * flops_per_sample / flops_per_s.
struct ComputeFit {
  double overhead_s = 0.0;   ///< fixed seconds per iteration besides the FLOPs
  double flops_per_s = 0.0;  ///< effective training rate, in the FLOP convention of ModelProfile
  LineFit line;              ///< the fit behind it (x: batch, y: seconds)

  /// The step's seconds at `batch` samples of `flops_per_sample` FLOPs each.
  [[nodiscard]] double seconds_at(double batch, double flops_per_sample) const {
    return overhead_s + batch * flops_per_sample / flops_per_s;
  }
};

/// Fits the compute model to step times measured at several batch sizes; `flops_per_sample` is forward +
/// backward FLOPs of one sample. Throws FitError when the time does not grow with the batch.
ComputeFit fit_compute(std::span<const double> batches, std::span<const double> seconds,
                       double flops_per_sample);

/// The compute model at one batch between timed ones: the line through the step at the nearest timed batch
/// at or below `batch` and the one above it (at the top batch, the one below it and the top). The step is not
/// a line over all the timed batches where workers share cores (convex for LeNet, concave for the MLP on 4
/// workers over 2 cores), and the line through all of them misses a batch between two by up to a tenth.
/// Where that line would need a negative overhead, the step it gives at `batch` with none (all FLOPs).
/// nullopt where `batch` lies outside the timed batches or the line between its neighbours does not grow: the
/// fit through all batches stands there. Its `line` is that line (no residuals).
std::optional<ComputeFit> fit_compute_between(std::span<const double> batches,
                                              std::span<const double> seconds, double flops_per_sample,
                                              double batch);

}  // namespace dbench::validation
