// Statistics for sweeps: means and sample spreads, Pearson and Spearman correlations with Student's t
// p-values, and least-squares lines. Plain values; no Torch, no Eigen.
#pragma once

#include <cmath>
#include <cstddef>
#include <limits>
#include <span>
#include <string>
#include <vector>

namespace dbench::analysis {

/// Quiet NaN, the value of every undefined statistic.
inline constexpr double kUndefined = std::numeric_limits<double>::quiet_NaN();

/// A correlation coefficient with its sample size and two-sided p-value (H0: no correlation).
struct Correlation {
  double coefficient = kUndefined;  ///< Pearson r or Spearman rho; NaN when undefined
  std::size_t n = 0;                ///< pairs used (pairs with a non-finite value are left out)
  double p_value = kUndefined;      ///< from Student's t with n - 2 degrees of freedom
  std::string reason;               ///< why the coefficient is undefined; empty when it is defined
  /// Whether the coefficient is a number.
  bool defined() const { return std::isfinite(coefficient); }
};

/// Least-squares line y = intercept + slope * x.
struct LineFit {
  double slope = kUndefined;
  double intercept = kUndefined;
  double r_squared = kUndefined;  ///< NaN when y is constant
  std::size_t n = 0;              ///< pairs used (pairs with a non-finite value are left out)
  std::string reason;             ///< why the fit is undefined; empty when it is defined
  /// Whether slope and intercept are numbers.
  bool defined() const { return std::isfinite(slope); }
};

/// Regularized incomplete beta function I_x(a, b) for a, b > 0 and x in [0, 1] (continued fraction).
double regularized_incomplete_beta(double a, double b, double x);

/// Two-sided p-value P(|T| >= |t|) of Student's t distribution with `degrees_of_freedom` > 0.
double student_t_two_sided_p(double t, double degrees_of_freedom);

/// Ranks 1..n of `values`; tied values share the average of the ranks they span.
std::vector<double> average_ranks(std::span<const double> values);

/// Pearson's r of the finite pairs, with t = r sqrt((n - 2) / (1 - r^2)) for the p-value. Undefined (NaN and
/// a reason) with fewer than 3 pairs or a constant variable.
Correlation pearson(std::span<const double> x, std::span<const double> y);

/// Spearman's rho: Pearson's r of the average ranks of the finite pairs, p-value as for Pearson.
Correlation spearman(std::span<const double> x, std::span<const double> y);

/// Least-squares line through the finite pairs; undefined with fewer than 3 pairs or a constant x.
LineFit fit_line(std::span<const double> x, std::span<const double> y);

/// Mean and sample standard deviation (n - 1) of the finite values.
struct Spread {
  double mean = kUndefined;
  double stddev = kUndefined;  ///< NaN for fewer than 2 values
  std::size_t n = 0;           ///< finite values
};

/// The spread of the finite values among `values`.
Spread spread(std::span<const double> values);

}  // namespace dbench::analysis
