// Statistics of a graph or a time-varying sequence: edges, degrees, diameter, mixing checks, spectral gap.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "topology/graph.hpp"
#include "topology/spectral.hpp"

namespace dbench::topology {

/// What a mixing matrix satisfies, within a tolerance.
struct MixingChecks {
  bool nonnegative = true;        ///< every weight >= 0
  bool row_stochastic = true;     ///< nonnegative and every row sums to 1 (mixing preserves constants)
  bool column_stochastic = true;  ///< nonnegative and every column sums to 1 (mixing preserves the average)
  bool symmetric = true;          ///< W_ij = W_ji
  double max_row_error = 0.0;     ///< max_i |sum_j W_ij - 1|
  double max_column_error = 0.0;  ///< max_j |sum_i W_ij - 1|
};

/// Checks one mixing matrix.
MixingChecks check_mixing(const Graph& w, double tolerance = 1e-9);

/// Checks every round of a sequence: a property holds when it holds in every round.
MixingChecks check_mixing(const GraphSequence& sequence, double tolerance = 1e-9);

/// Minimum, mean and maximum of a degree over nodes (and rounds).
struct DegreeRange {
  int min = 0;
  double mean = 0.0;
  int max = 0;
};

/// Limits of analyze().
struct AnalyzeOptions {
  SpectralOptions spectral;
  /// All-sources BFS (exact diameter) while n * arcs stays below this; beyond it, and unless the graph is
  /// vertex-transitive (one BFS is exact), the diameter is a lower bound from repeated double sweeps.
  std::int64_t exact_diameter_work = 200'000'000;
  /// A period whose contraction is below this averages exactly (rounding leaves ~1e-15).
  double exact_consensus_tolerance = 1e-12;
};

/// Statistics of a graph sequence. Edge and degree counts exclude self loops and are per round: for a
/// time-varying family the edge counts are the maximum over the period, degree minima and maxima are taken
/// over all rounds and the means averaged over them. Diameter and connectivity are of the union of the
/// rounds.
struct GraphStats {
  std::string name;  ///< the sequence's kind, e.g. "ring" or "base-2"
  int nodes = 0;
  int period = 1;                     ///< rounds per period (1: static)
  std::int64_t directed_edges = 0;    ///< arcs j -> i with W_ij != 0: messages per round
  std::int64_t undirected_edges = 0;  ///< node pairs joined by an arc either way
  bool directed = false;              ///< some arc has no reverse arc
  DegreeRange in_degree;              ///< in-neighbours per node (row entries besides itself)
  DegreeRange out_degree;             ///< out-neighbours per node
  std::optional<int> diameter;        ///< longest shortest path along arcs; empty when not strongly connected
  bool diameter_exact = true;         ///< false: a lower bound (large graph that is not vertex-transitive)
  MixingChecks checks;                ///< over all rounds
  bool connected = false;  ///< static: strongly connected; time-varying: one period's product mixes
  /// Static: |lambda_2(W)|. Time-varying: empty (see contraction).
  std::optional<double> second_eigenvalue_modulus;
  /// Time-varying: ||W_{period-1} ... W_0 - (1/n) 1 1^T||_2, 0 when one period averages exactly.
  std::optional<double> contraction;
  /// Static: 1 - |lambda_2|. Time-varying: the per-iteration effective gap 1 - contraction^(1/period), so a
  /// family compares with a static graph run for as many iterations; 1 when a period averages exactly.
  double spectral_gap = 0.0;
  bool exact_consensus = false;  ///< time-varying: one period averages exactly
  std::string spectral_method;   ///< the solver that produced the gap
};

/// Computes all statistics of a sequence (a static graph is a sequence of period 1).
GraphStats analyze(const GraphSequence& sequence, const AnalyzeOptions& options = {});

}  // namespace dbench::topology
