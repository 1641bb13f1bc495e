// The only translation unit that includes Eigen's eigen-solvers and Spectra: they cost a minute to compile.
#include "topology/spectral.hpp"

#include <Spectra/GenEigsSolver.h>
#include <fmt/core.h>

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdint>
#include <numbers>
#include <numeric>
#include <optional>
#include <random>
#include <span>
#include <vector>

#include "topology/graph_analysis.hpp"

namespace dbench::topology {
namespace {

// Row and column sums within this of 1 make the deflation by the uniform vector exact enough.
constexpr double kStochasticTolerance = 1e-9;
// Mixing operators have norm about 1, so a Lanczos residual this small means an invariant Krylov space.
constexpr double kBreakdown = 1e-13;
// Lanczos keeps its whole basis (no restarts): cap its memory at 2^26 doubles (512 MB).
constexpr std::int64_t kMaxBasisValues = std::int64_t{1} << 26;

void subtract_mean(std::span<double> y) {
  const double mean = std::accumulate(y.begin(), y.end(), 0.0) / static_cast<double>(y.size());
  for (auto& v : y) {
    v -= mean;
  }
}

// x -> (W - J) x = W (x - mean(x) 1) for doubly stochastic W: the eigenvalue 1 of W becomes 0 and every other
// eigenvalue stays, so the largest modulus is |lambda_2|.
class DeflatedOp {
 public:
  using Scalar = double;

  explicit DeflatedOp(const Graph& w) : w_(w), scratch_(static_cast<std::size_t>(w.nodes())) {}

  Eigen::Index rows() const { return w_.nodes(); }
  Eigen::Index cols() const { return w_.nodes(); }

  void apply(std::span<const double> x, std::span<double> y) const {
    std::copy(x.begin(), x.end(), scratch_.begin());
    subtract_mean(scratch_);
    w_.mix(scratch_, y);
    // Removes the rounding drift along 1 that would otherwise show up as a spurious eigenvalue.
    subtract_mean(y);
  }

  // Spectra's operator interface.
  void perform_op(const double* x_in, double* y_out) const {
    const auto n = static_cast<std::size_t>(rows());
    apply({x_in, n}, {y_out, n});
  }

 private:
  const Graph& w_;
  mutable std::vector<double> scratch_;
};

// Products with P - J, P = W_{T-1} ... W_0, for doubly stochastic rounds: (P - J) x = P (x - mean(x) 1), and
// (P - J)^T y = P^T y for y orthogonal to 1.
class PeriodOp {
 public:
  explicit PeriodOp(const GraphSequence& s)
      : s_(s), a_(static_cast<std::size_t>(s.nodes())), b_(static_cast<std::size_t>(s.nodes())) {}

  // y = (P - J) x.
  void apply(std::span<const double> x, std::span<double> y) const {
    std::copy(x.begin(), x.end(), a_.begin());
    subtract_mean(a_);
    for (const auto& g : s_.rounds()) {
      g.mix(a_, b_);
      std::swap(a_, b_);
    }
    subtract_mean(a_);
    std::copy(a_.begin(), a_.end(), y.begin());
  }

  // y = (P - J)^T x.
  void apply_transposed(std::span<const double> x, std::span<double> y) const {
    std::copy(x.begin(), x.end(), a_.begin());
    subtract_mean(a_);
    const auto rounds = s_.rounds();
    for (auto it = rounds.rbegin(); it != rounds.rend(); ++it) {
      it->mix_transposed(a_, b_);
      std::swap(a_, b_);
    }
    subtract_mean(a_);
    std::copy(a_.begin(), a_.end(), y.begin());
  }

  // The symmetric dilation [0, M; M^T, 0] of M = P - J on (a, b): its eigenvalues are +-sigma_i(M), so the
  // largest modulus is ||M||_2 on the scale of sigma itself (the Gram matrix M^T M would square it, and
  // rounding noise of an exact period with it).
  void apply_dilation(std::span<const double> x, std::span<double> y) const {
    const auto n = x.size() / 2;
    apply(x.subspan(n), y.first(n));
    apply_transposed(x.first(n), y.subspan(n));
  }

 private:
  const GraphSequence& s_;
  mutable std::vector<double> a_;
  mutable std::vector<double> b_;
};

struct LanczosResult {
  double value;  // the Ritz value of largest modulus
  int steps;     // Lanczos steps taken
};

// Lanczos with full re-orthogonalisation and no restarts, for the eigenvalue of largest modulus of a
// symmetric operator with norm about 1. Spectra's SymEigsSolver (1.0.1) throws "TridiagEigen: eigen
// decomposition failed" on operators with few distinct eigenvalues (a star, a hypercube, a period that
// averages exactly), which are common here; with a random start, an invariant Krylov space (tiny residual)
// holds every distinct eigenvalue, so a breakdown simply ends the iteration with exact values.
template <typename Apply>
LanczosResult lanczos_largest_modulus(Apply&& apply, int n, const SpectralOptions& options,
                                      const char* what) {
  const auto max_steps = static_cast<Eigen::Index>(
      std::min<std::int64_t>({n, options.max_krylov_steps, std::max<std::int64_t>(64, kMaxBasisValues / n)}));
  Eigen::MatrixXd basis(n, max_steps);
  std::vector<double> alpha;
  std::vector<double> beta;
  std::mt19937_64 engine(12345);
  std::normal_distribution<double> normal;
  Eigen::VectorXd v(n);
  for (auto& x : v) {
    x = normal(engine);
  }
  v.normalize();
  Eigen::VectorXd w(n);
  for (Eigen::Index j = 0; j < max_steps; ++j) {
    basis.col(j) = v;
    apply(std::span<const double>(v.data(), static_cast<std::size_t>(n)),
          std::span<double>(w.data(), static_cast<std::size_t>(n)));
    alpha.push_back(v.dot(w));
    // Classical Gram-Schmidt twice against the whole basis keeps it orthogonal to working precision.
    for (int pass = 0; pass < 2; ++pass) {
      const auto q = basis.leftCols(j + 1);
      w.noalias() -= q * (q.transpose() * w);
    }
    const double residual = w.norm();
    const bool breakdown = residual < kBreakdown;
    const bool check = breakdown || j + 1 == max_steps || (j + 1) % 8 == 0;
    if (check) {
      const auto k = static_cast<Eigen::Index>(alpha.size());
      Eigen::VectorXd diag = Eigen::Map<Eigen::VectorXd>(alpha.data(), k);
      Eigen::VectorXd sub = Eigen::Map<Eigen::VectorXd>(beta.data(), k - 1);
      Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> ritz;
      ritz.computeFromTridiagonal(diag, sub, Eigen::ComputeEigenvectors);
      if (ritz.info() != Eigen::Success) {
        throw SpectralError(
            fmt::format("{}: the tridiagonal eigen-solver failed in Lanczos step {}", what, k));
      }
      // Ritz values come sorted: the largest modulus is at one end.
      const Eigen::Index best =
          std::abs(ritz.eigenvalues()(0)) > std::abs(ritz.eigenvalues()(k - 1)) ? 0 : k - 1;
      const double theta = ritz.eigenvalues()(best);
      const double error = residual * std::abs(ritz.eigenvectors()(k - 1, best));
      if (breakdown || error <= options.tolerance * std::max(std::abs(theta), kBreakdown)) {
        return {theta, static_cast<int>(k)};
      }
    }
    beta.push_back(residual);
    v = w / residual;
  }
  throw SpectralError(
      fmt::format("{}: Lanczos did not converge in {} steps on a {}-dimensional operator; the "
                  "dense solver handles up to a few thousand nodes",
                  what, max_steps, n));
}

Eigen::MatrixXd dense(const Graph& w) {
  const auto n = static_cast<Eigen::Index>(w.nodes());
  Eigen::MatrixXd m = Eigen::MatrixXd::Zero(n, n);
  for (int i = 0; i < w.nodes(); ++i) {
    for (const auto& e : w.row(i)) {
      m(i, e.from) = e.weight;
    }
  }
  return m;
}

double second_largest(std::vector<double> moduli) {
  std::sort(moduli.begin(), moduli.end(), std::greater<>());
  return moduli.size() > 1 ? moduli[1] : 0.0;
}

SpectralResult dense_gap(const Graph& w, bool symmetric) {
  std::vector<double> moduli;
  const Eigen::MatrixXd m = dense(w);
  if (symmetric) {
    const Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> solver(m, Eigen::EigenvaluesOnly);
    if (solver.info() != Eigen::Success) {
      throw SpectralError(fmt::format("{}: the dense self-adjoint eigen-solver failed", w.name()));
    }
    for (const double v : solver.eigenvalues()) {
      moduli.push_back(std::abs(v));
    }
  } else {
    const Eigen::EigenSolver<Eigen::MatrixXd> solver(m, false);
    if (solver.info() != Eigen::Success) {
      throw SpectralError(fmt::format("{}: the dense general eigen-solver failed", w.name()));
    }
    for (const auto& v : solver.eigenvalues()) {
      moduli.push_back(std::abs(v));
    }
  }
  const double second = second_largest(std::move(moduli));
  return {second, 1.0 - second, symmetric ? "dense self-adjoint" : "dense general"};
}

struct Tap {
  int offset;  // row i holds node (i + offset) mod n
  double weight;
};

// Row 0's taps when every row i is row 0 shifted by i, i.e. W is circulant; checked entry by entry.
std::optional<std::vector<Tap>> circulant_taps(const Graph& w) {
  const int n = w.nodes();
  const auto by_offset = [](const Tap& a, const Tap& b) { return a.offset < b.offset; };
  std::vector<Tap> taps;
  for (const auto& e : w.row(0)) {
    taps.push_back({e.from, e.weight});
  }
  std::vector<Tap> shifted;
  for (int i = 1; i < n; ++i) {
    const auto row = w.row(i);
    if (row.size() != taps.size()) {
      return std::nullopt;
    }
    shifted.clear();
    for (const auto& e : row) {
      shifted.push_back({static_cast<int>((static_cast<std::int64_t>(e.from) - i + n) % n), e.weight});
    }
    // Row i is sorted by node; shifting rotates that order, so one rotation point restores it.
    const auto first = std::min_element(shifted.begin(), shifted.end(), by_offset);
    std::rotate(shifted.begin(), first, shifted.end());
    if (!std::equal(shifted.begin(), shifted.end(), taps.begin(), [](const Tap& a, const Tap& b) {
          return a.offset == b.offset && a.weight == b.weight;
        })) {
      return std::nullopt;
    }
  }
  return taps;
}

// lambda_k = sum_j c_j exp(2 pi i j k / n) for every k: O(n * taps), exact up to rounding.
SpectralResult circulant_gap(const Graph& w, const std::vector<Tap>& taps) {
  const int n = w.nodes();
  std::vector<double> moduli(static_cast<std::size_t>(n));
  for (int k = 0; k < n; ++k) {
    std::complex<double> lambda = 0.0;
    for (const auto& t : taps) {
      // Reducing j k mod n in integers keeps the angle exact for large n.
      const auto phase = static_cast<double>(static_cast<std::int64_t>(t.offset) * k % n);
      lambda += std::polar(t.weight, 2.0 * std::numbers::pi * phase / n);
    }
    moduli[static_cast<std::size_t>(k)] = std::abs(lambda);
  }
  const double second = second_largest(std::move(moduli));
  return {second, 1.0 - second, "circulant (exact DFT)"};
}

SpectralResult iterative_gap(const Graph& w, bool symmetric, const SpectralOptions& options) {
  DeflatedOp op(w);
  if (symmetric) {
    const auto r = lanczos_largest_modulus([&](auto x, auto y) { op.apply(x, y); }, w.nodes(), options,
                                           w.name().c_str());
    const double second = std::abs(r.value);
    return {second, 1.0 - second, "Lanczos on W - J"};
  }
  // Two eigenvalues, so that a conjugate pair (or +-lambda) at the top modulus converges as a whole; asking
  // for more makes Arnoldi wait for the clusters below (at n = 16384, 4 eigenvalues take 150 times longer
  // than 2).
  const auto n = op.rows();
  const Eigen::Index nev = std::min<Eigen::Index>(2, n - 2);
  const Eigen::Index ncv = std::min<Eigen::Index>(n, 32);
  Spectra::GenEigsSolver<DeflatedOp> solver(op, nev, ncv);
  solver.init();
  solver.compute(Spectra::SortRule::LargestMagn, options.max_restarts, options.tolerance);
  if (solver.info() != Spectra::CompInfo::Successful) {
    throw SpectralError(fmt::format("{}: Arnoldi did not converge on {} nodes within {} restarts", w.name(),
                                    w.nodes(), options.max_restarts));
  }
  double second = 0.0;
  for (const auto& v : solver.eigenvalues()) {
    second = std::max(second, std::abs(v));
  }
  return {second, 1.0 - second, "Arnoldi (Spectra) on W - J"};
}

bool doubly_stochastic(const MixingChecks& c) {
  return c.row_stochastic && c.column_stochastic;
}

}  // namespace

SpectralResult spectral_gap(const Graph& w, const SpectralOptions& options) {
  const auto checks = check_mixing(w, kStochasticTolerance);
  const int n = w.nodes();
  const bool deflatable = doubly_stochastic(checks) && n > 3;
  switch (options.method) {
    case SpectralMethod::circulant:
      if (const auto taps = circulant_taps(w)) {
        return circulant_gap(w, *taps);
      }
      throw SpectralError(fmt::format("{}: W is not circulant (row i is not row 0 shifted by i)", w.name()));
    case SpectralMethod::dense:
      return dense_gap(w, checks.symmetric);
    case SpectralMethod::iterative:
      if (!deflatable) {
        throw SpectralError(fmt::format(
            "{}: the iterative solvers need a doubly stochastic W on more than 3 nodes", w.name()));
      }
      return iterative_gap(w, checks.symmetric, options);
    case SpectralMethod::automatic:
      break;
  }
  if (const auto taps = circulant_taps(w)) {
    return circulant_gap(w, *taps);
  }
  if (n <= options.small_limit || (checks.symmetric && n <= options.dense_limit)) {
    return dense_gap(w, checks.symmetric);
  }
  if (deflatable) {
    return iterative_gap(w, checks.symmetric, options);
  }
  if (n <= options.dense_limit) {
    return dense_gap(w, checks.symmetric);
  }
  throw SpectralError(
      fmt::format("{}: W is not doubly stochastic (max row-sum error {:.2g}, column-sum error {:.2g}), so "
                  "its spectrum needs "
                  "the dense solver, limited to {} nodes; got {}",
                  w.name(), checks.max_row_error, checks.max_column_error, options.dense_limit, n));
}

ContractionResult period_contraction(const GraphSequence& sequence, const SpectralOptions& options) {
  const auto checks = check_mixing(sequence, kStochasticTolerance);
  if (!doubly_stochastic(checks)) {
    throw SpectralError(
        fmt::format("{}: the contraction of a period needs doubly stochastic rounds (max row-sum "
                    "error {:.2g}, column-sum error {:.2g})",
                    sequence.kind(), checks.max_row_error, checks.max_column_error));
  }
  const int n = sequence.nodes();
  const PeriodOp op(sequence);
  const bool dense_wanted = options.method == SpectralMethod::dense ||
                            (options.method != SpectralMethod::iterative && n <= options.small_limit);
  if (dense_wanted) {
    // Column c of P - J is (P - J) e_c.
    Eigen::MatrixXd m(n, n);
    std::vector<double> unit(static_cast<std::size_t>(n), 0.0);
    for (int c = 0; c < n; ++c) {
      unit[static_cast<std::size_t>(c)] = 1.0;
      op.apply(unit, std::span<double>(m.col(c).data(), static_cast<std::size_t>(n)));
      unit[static_cast<std::size_t>(c)] = 0.0;
    }
    const Eigen::BDCSVD<Eigen::MatrixXd> svd(m);
    return {svd.singularValues()(0), "dense SVD of the period product"};
  }
  const auto top = lanczos_largest_modulus([&](auto x, auto y) { op.apply_dilation(x, y); }, 2 * n, options,
                                           sequence.kind().c_str());
  return {std::abs(top.value), "Lanczos on the period product"};
}

}  // namespace dbench::topology
