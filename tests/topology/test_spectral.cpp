// Spectral gaps against closed forms, and the contraction of time-varying families.
#include <doctest/doctest.h>

#include <cmath>
#include <complex>
#include <numbers>

#include "support/approx.hpp"
#include "tests/topology/helpers.hpp"
#include "topology/generators.hpp"
#include "topology/graph_analysis.hpp"
#include "topology/spectral.hpp"

namespace topo = dbench::topology;

namespace {

constexpr double kPi = std::numbers::pi;

// |a - b| <= 1e-6 |b| (absolute near zero).
bool close(double a, double b) {
  return std::abs(a - b) <= 1e-6 * std::max(std::abs(b), 1e-3);
}

// The circulant formula lambda_k = (1 + sum_m exp(2 pi i 2^m k / n)) / (tau + 1), computed here on its own.
double exponential_gap_closed_form(int n) {
  int tau = 0;
  while ((1 << tau) < n) {
    ++tau;
  }
  double second = 0.0;
  for (int k = 1; k < n; ++k) {
    std::complex<double> sum = 1.0;
    for (int m = 0; m < tau; ++m) {
      const double angle = 2.0 * kPi * static_cast<double>((static_cast<long long>(1) << m) * k % n) / n;
      sum += std::polar(1.0, angle);
    }
    second = std::max(second, std::abs(sum) / (tau + 1));
  }
  return 1.0 - second;
}

}  // namespace

TEST_CASE("topology::ring: spectral gap equals (2/3)(1 - cos 2π/n)") {
  for (const int n : {3, 4, 5, 16, 100, 1008}) {
    CAPTURE(n);
    const auto r = topo::spectral_gap(topo::ring(n));
    CHECK(close(r.gap, (2.0 / 3.0) * (1.0 - std::cos(2.0 * kPi / n))));
  }
}

TEST_CASE("topology::torus: spectral gap from eigenvalues (1 + 2cos(2πa/R) + 2cos(2πb/C))/5") {
  for (const auto& [rows, cols] :
       std::vector<std::pair<int, int>>{{3, 3}, {4, 6}, {5, 7}, {8, 8}, {28, 36}}) {
    CAPTURE(rows);
    CAPTURE(cols);
    double second = 0.0;
    for (int a = 0; a < rows; ++a) {
      for (int b = 0; b < cols; ++b) {
        if (a != 0 || b != 0) {
          const double lambda = (1 + 2 * std::cos(2 * kPi * a / rows) + 2 * std::cos(2 * kPi * b / cols)) / 5;
          second = std::max(second, std::abs(lambda));
        }
      }
    }
    CHECK(close(topo::spectral_gap(topo::torus(rows * cols, rows, cols)).gap, 1.0 - second));
  }
}

TEST_CASE("topology::complete: spectral gap is 1") {
  for (const int n : {2, 3, 10, 100}) {
    CHECK(topo::spectral_gap(topo::complete(n)).gap == dbench::testing::approx(1.0).epsilon(1e-9));
  }
}

TEST_CASE("topology::hypercube: spectral gap is 2/(d+1)") {
  // Eigenvalues (1 + d - 2|S|)/(d + 1), |S| = 0..d: besides 1, the largest modulus is (d - 1)/(d + 1),
  // reached at |S| = 1 and |S| = d.
  for (int d = 1; d <= 10; ++d) {
    CAPTURE(d);
    CHECK(close(topo::spectral_gap(topo::hypercube(1 << d)).gap, 2.0 / (d + 1)));
  }
}

TEST_CASE("topology::exponential: spectral gap matches the circulant formula at n = 1024 and n = 1008") {
  topo::SpectralOptions arnoldi;
  arnoldi.method = topo::SpectralMethod::iterative;
  for (const int n : {5, 12, 100, 1008, 1024}) {
    CAPTURE(n);
    const auto g = topo::exponential(n);
    const double expected = exponential_gap_closed_form(n);
    const auto automatic = topo::spectral_gap(g);
    CHECK(automatic.method == "circulant (exact DFT)");
    CHECK(close(automatic.gap, expected));
    const auto iterative = topo::spectral_gap(g, arnoldi);
    CHECK(iterative.method == "Arnoldi (Spectra) on W - J");
    CHECK(close(iterative.gap, expected));
  }
}

TEST_CASE("topology::spectral: the iterative solvers agree with the dense ones") {
  topo::SpectralOptions dense;
  dense.method = topo::SpectralMethod::dense;
  topo::SpectralOptions iterative;
  iterative.method = topo::SpectralMethod::iterative;
  for (const auto& g : {topo::exponential(300), topo::ring(300), topo::torus(400), topo::hypercube(256),
                        topo::random_regular(300, 3, 5), topo::erdos_renyi(300, 0.05, 2), topo::star(300),
                        topo::complete(100)}) {
    CAPTURE(g.name());
    const auto a = topo::spectral_gap(g, dense);
    const auto b = topo::spectral_gap(g, iterative);
    CHECK(a.method.starts_with("dense"));
    CHECK_FALSE(b.method.starts_with("dense"));
    CHECK(std::abs(b.second_modulus - a.second_modulus) <= 1e-6 * std::max(a.second_modulus, 1e-9));
  }
}

TEST_CASE("topology::spectral: large graphs use the deflated iterative solvers") {
  const int n = 4096;
  topo::SpectralOptions arnoldi;
  arnoldi.method = topo::SpectralMethod::iterative;
  const auto r = topo::spectral_gap(topo::exponential(n), arnoldi);
  CHECK(close(r.gap, exponential_gap_closed_form(n)));
  const auto h = topo::spectral_gap(topo::hypercube(n));
  CHECK(h.method == "Lanczos on W - J");
  CHECK(close(h.gap, 2.0 / 13.0));
  const auto t = topo::spectral_gap(topo::torus(n));
  CHECK(t.method == "Lanczos on W - J");
  CHECK(close(t.gap, (2.0 / 5.0) * (1.0 - std::cos(2.0 * kPi / 64))));
  const auto ring = topo::spectral_gap(topo::ring(20000));
  CHECK(ring.method == "circulant (exact DFT)");
  CHECK(close(ring.gap, (2.0 / 3.0) * (1.0 - std::cos(2.0 * kPi / 20000))));
}

TEST_CASE("topology::spectral: a W that is not doubly stochastic takes the dense general solver") {
  const auto g = topo::star(50, topo::WeightScheme::uniform);
  const auto r = topo::spectral_gap(g);
  CHECK(r.method == "dense general");
  CHECK(r.gap > 0.0);
  CHECK(r.gap < 1.0);
  topo::SpectralOptions iterative;
  iterative.method = topo::SpectralMethod::iterative;
  CHECK_THROWS_AS(topo::spectral_gap(g, iterative), topo::SpectralError);
  topo::SpectralOptions small;
  small.dense_limit = 40;
  small.small_limit = 10;
  CHECK_THROWS_AS(topo::spectral_gap(g, small), topo::SpectralError);
}

TEST_CASE("topology::one-peer-exponential: exact after τ = 10 rounds at n = 1024, a residual at n = 1008") {
  const auto exact = topo::one_peer_exponential(1024);
  CHECK(exact.period() == 10);
  CHECK(topo::testing::consensus_error_after_period(exact, 1) < 1e-12);
  const auto exact_stats = topo::analyze(exact);
  CHECK(exact_stats.exact_consensus);
  CHECK(*exact_stats.contraction == 0.0);
  CHECK(exact_stats.spectral_gap == 1.0);

  const auto inexact = topo::one_peer_exponential(1008);
  const double residual = topo::period_contraction(inexact).contraction;
  MESSAGE("one-peer exponential, n = 1008: ||W_9 ... W_0 - J||_2 = "
          << residual << ", consensus error " << topo::testing::consensus_error_after_period(inexact, 1));
  CHECK(residual > 0.0);
  CHECK(residual < 1.0);
  CHECK(topo::testing::consensus_error_after_period(inexact, 1) > 1e-6);
  const auto stats = topo::analyze(inexact);
  CHECK_FALSE(stats.exact_consensus);
  CHECK(stats.spectral_gap == dbench::testing::approx(1.0 - std::pow(residual, 1.0 / 10)).epsilon(1e-6));
}

TEST_CASE("topology::spectral: the period contraction of a static graph is its |λ2| when W is symmetric") {
  const auto g = topo::ring(200);
  const auto sequence = topo::GraphSequence(g);
  CHECK(close(topo::period_contraction(sequence).contraction, topo::spectral_gap(g).second_modulus));
  // Dense and Lanczos paths agree on a sequence that does not average exactly.
  topo::SpectralOptions dense;
  dense.method = topo::SpectralMethod::dense;
  const auto one_peer = topo::one_peer_exponential(100);
  CHECK(close(topo::period_contraction(one_peer).contraction,
              topo::period_contraction(one_peer, dense).contraction));
}
