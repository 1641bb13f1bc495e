// Means, spreads, correlations and line fits. The p-values use Student's t distribution through the
// regularized incomplete beta function, evaluated as a continued fraction (modified Lentz method).
#include "analysis/statistics.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <iterator>
#include <numeric>
#include <stdexcept>

namespace dbench::analysis {
namespace {

struct Pairs {
  std::vector<double> x;
  std::vector<double> y;
};

Pairs finite_pairs(std::span<const double> x, std::span<const double> y) {
  if (x.size() != y.size()) {
    throw std::invalid_argument(
        fmt::format("paired samples differ in length ({} and {})", x.size(), y.size()));
  }
  Pairs pairs;
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (std::isfinite(x[i]) && std::isfinite(y[i])) {
      pairs.x.push_back(x[i]);
      pairs.y.push_back(y[i]);
    }
  }
  return pairs;
}

double mean_of(const std::vector<double>& v) {
  return std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
}

// Centred sums of squares and cross products, two-pass so that large offsets do not cancel digits.
struct Moments {
  double sxx = 0.0;
  double syy = 0.0;
  double sxy = 0.0;
  double mean_x = 0.0;
  double mean_y = 0.0;
};

Moments moments(const Pairs& p) {
  Moments m;
  m.mean_x = mean_of(p.x);
  m.mean_y = mean_of(p.y);
  for (std::size_t i = 0; i < p.x.size(); ++i) {
    const double dx = p.x[i] - m.mean_x;
    const double dy = p.y[i] - m.mean_y;
    m.sxx += dx * dx;
    m.syy += dy * dy;
    m.sxy += dx * dy;
  }
  return m;
}

// A variance this small relative to the values' magnitude is rounding, not spread.
bool constant(double sum_squares, double mean, std::size_t n) {
  return !(sum_squares > 1e-24 * std::max(1.0, mean * mean) * static_cast<double>(n));
}

Correlation correlation_of(const Pairs& p) {
  Correlation c;
  c.n = p.x.size();
  if (c.n < 3) {
    c.reason = fmt::format("{} pairs; at least 3 are needed", c.n);
    return c;
  }
  const Moments m = moments(p);
  if (constant(m.sxx, m.mean_x, c.n) || constant(m.syy, m.mean_y, c.n)) {
    c.reason =
        constant(m.sxx, m.mean_x, c.n) ? "the first variable is constant" : "the second variable is constant";
    return c;
  }
  c.coefficient = std::clamp(m.sxy / std::sqrt(m.sxx * m.syy), -1.0, 1.0);
  const double df = static_cast<double>(c.n - 2);
  const double one_minus_r2 = 1.0 - c.coefficient * c.coefficient;
  c.p_value =
      one_minus_r2 <= 0.0 ? 0.0 : student_t_two_sided_p(c.coefficient * std::sqrt(df / one_minus_r2), df);
  return c;
}

// Continued fraction of I_x(a, b) after its prefactor: 1 / (1 + d1 / (1 + d2 / (1 + ...))), with
// d_{2m+1} = -(a+m)(a+b+m) x / ((a+2m)(a+2m+1)) and d_{2m} = m (b-m) x / ((a+2m-1)(a+2m)); it converges fast
// for x < (a+1)/(a+b+2). Modified Lentz: f = product of C_j D_j, tiny values guard against division by 0.
double beta_continued_fraction(double a, double b, double x) {
  constexpr double kTiny = 1e-300;
  constexpr double kEpsilon = 1e-15;
  constexpr int kMaxTerms = 10000;
  double f = kTiny;
  double c = f;
  double d = 0.0;
  for (int j = 1; j <= kMaxTerms; ++j) {
    double numerator = 1.0;  // a_1 of the fraction; the later a_j are d_{j-1}
    if (j >= 2) {
      const int k = j - 1;
      const double m = static_cast<double>(k / 2);
      numerator = k % 2 == 1 ? -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))
                             : m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m));
    }
    d = 1.0 + numerator * d;
    d = std::abs(d) < kTiny ? kTiny : d;
    d = 1.0 / d;
    c = 1.0 + numerator / c;
    c = std::abs(c) < kTiny ? kTiny : c;
    const double delta = c * d;
    f *= delta;
    if (std::abs(delta - 1.0) < kEpsilon) {
      return f;
    }
  }
  return f;  // not converged to 1e-15 after kMaxTerms: still accurate far beyond what a p-value needs
}

}  // namespace

double regularized_incomplete_beta(double a, double b, double x) {
  if (!(a > 0.0) || !(b > 0.0) || !(x >= 0.0 && x <= 1.0)) {
    return kUndefined;
  }
  if (x == 0.0 || x == 1.0) {
    return x;
  }
  // The continued fraction converges quickly only below the mean; above it use I_x(a,b) = 1 - I_{1-x}(b,a).
  if (x > (a + 1.0) / (a + b + 2.0)) {
    return 1.0 - regularized_incomplete_beta(b, a, 1.0 - x);
  }
  const double log_prefactor =
      a * std::log(x) + b * std::log1p(-x) - (std::lgamma(a) + std::lgamma(b) - std::lgamma(a + b));
  return std::exp(log_prefactor) * beta_continued_fraction(a, b, x) / a;
}

double student_t_two_sided_p(double t, double degrees_of_freedom) {
  if (!(degrees_of_freedom > 0.0) || std::isnan(t)) {
    return kUndefined;
  }
  if (std::isinf(t)) {
    return 0.0;
  }
  // P(|T| >= |t|) = I_{df/(df+t^2)}(df/2, 1/2).
  return regularized_incomplete_beta(degrees_of_freedom / 2.0, 0.5,
                                     degrees_of_freedom / (degrees_of_freedom + t * t));
}

std::vector<double> average_ranks(std::span<const double> values) {
  std::vector<std::size_t> order(values.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t i, std::size_t j) { return values[i] < values[j]; });
  std::vector<double> ranks(values.size());
  for (std::size_t first = 0; first < order.size();) {
    std::size_t last = first + 1;
    while (last < order.size() && values[order[last]] == values[order[first]]) {
      ++last;
    }
    // Positions first..last-1 hold ranks first+1..last; each tied value gets their mean.
    const double rank = (static_cast<double>(first + 1) + static_cast<double>(last)) / 2.0;
    for (std::size_t k = first; k < last; ++k) {
      ranks[order[k]] = rank;
    }
    first = last;
  }
  return ranks;
}

Correlation pearson(std::span<const double> x, std::span<const double> y) {
  return correlation_of(finite_pairs(x, y));
}

Correlation spearman(std::span<const double> x, std::span<const double> y) {
  Pairs p = finite_pairs(x, y);
  p.x = average_ranks(p.x);
  p.y = average_ranks(p.y);
  return correlation_of(p);
}

LineFit fit_line(std::span<const double> x, std::span<const double> y) {
  const Pairs p = finite_pairs(x, y);
  LineFit fit;
  fit.n = p.x.size();
  if (fit.n < 3) {
    fit.reason = fmt::format("{} points; at least 3 are needed", fit.n);
    return fit;
  }
  const Moments m = moments(p);
  if (constant(m.sxx, m.mean_x, fit.n)) {
    fit.reason = "x is constant";
    return fit;
  }
  fit.slope = m.sxy / m.sxx;
  fit.intercept = m.mean_y - fit.slope * m.mean_x;
  if (!constant(m.syy, m.mean_y, fit.n)) {
    fit.r_squared = std::clamp(m.sxy * m.sxy / (m.sxx * m.syy), 0.0, 1.0);
  }
  return fit;
}

Spread spread(std::span<const double> values) {
  std::vector<double> finite;
  std::copy_if(values.begin(), values.end(), std::back_inserter(finite),
               [](double v) { return std::isfinite(v); });
  Spread s;
  s.n = finite.size();
  if (s.n == 0) {
    return s;
  }
  s.mean = mean_of(finite);
  if (s.n >= 2) {
    double sum = 0.0;
    for (double v : finite) {
      sum += (v - s.mean) * (v - s.mean);
    }
    s.stddev = std::sqrt(sum / static_cast<double>(s.n - 1));
  }
  return s;
}

}  // namespace dbench::analysis
