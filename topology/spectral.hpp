// Spectra of mixing matrices: second-largest eigenvalue modulus and the contraction of a period's product.
// Only spectral.cpp includes Eigen and Spectra (a translation unit with their eigen-solvers takes a minute to
// compile); everything here is plain values.
#pragma once

#include <stdexcept>
#include <string>

#include "topology/graph.hpp"

namespace dbench::topology {

/// The spectrum could not be computed (a solver did not converge, or no solver fits the matrix).
class SpectralError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Which eigen-solver computes a spectrum.
enum class SpectralMethod {
  automatic,  ///< circulant W: exact DFT; else dense up to dense_limit nodes when symmetric (every W up to
              ///< small_limit), otherwise iterative where W allows it, dense where it does not
  circulant,  ///< exact eigenvalues sum_j c_j exp(2 pi i j k / n) of a circulant W (row i = row 0 shifted by
              ///< i)
  dense,      ///< Eigen's dense self-adjoint (symmetric W) or general eigen-solver; O(n^3)
  iterative,  ///< Lanczos (symmetric) or Spectra's Arnoldi on the deflated operator; needs doubly stochastic
              ///< W
};

/// Solver choice and limits.
struct SpectralOptions {
  SpectralMethod method = SpectralMethod::automatic;
  int dense_limit =
      2048;              ///< automatic: symmetric W up to this size, and any W the iterative path cannot take
  int small_limit = 64;  ///< automatic: every W up to this size is dense (Krylov spaces need room)
  double tolerance = 1e-10;     ///< relative residual at which an iterative eigenvalue counts as converged
  int max_krylov_steps = 1500;  ///< Lanczos steps (without restarts) before giving up
  int max_restarts = 3000;      ///< Arnoldi restarts before giving up
};

/// |lambda_2| and the spectral gap of one mixing matrix.
struct SpectralResult {
  double second_modulus = 0.0;  ///< second-largest eigenvalue modulus |lambda_2|
  double gap = 0.0;             ///< 1 - |lambda_2|
  std::string method;           ///< the solver used, e.g. "dense self-adjoint", "Arnoldi on W - J"
};

/// The second-largest eigenvalue modulus of W. For doubly stochastic W it is the largest modulus of the
/// deflated operator x -> W x - mean(x) 1 (the eigenvalue 1, eigenvector 1, is removed), which is what the
/// iterative solvers compute; other W need the dense general solver (at most dense_limit nodes) unless they
/// are circulant.
SpectralResult spectral_gap(const Graph& w, const SpectralOptions& options = {});

/// How far one period of a sequence is from exact averaging.
struct ContractionResult {
  double contraction = 0.0;  ///< ||W_{period-1} ... W_0 - (1/n) 1 1^T||_2
  std::string method;        ///< the solver used
};

/// ||W_{period-1} ... W_0 - (1/n) 1 1^T||_2 for doubly stochastic rounds, from products of the sparse rounds
/// with vectors (no dense n x n product beyond small_limit nodes): ~1e-15 when one period averages exactly.
ContractionResult period_contraction(const GraphSequence& sequence, const SpectralOptions& options = {});

}  // namespace dbench::topology
