// Communication graphs as plain values: a mixing matrix W stored row by row, and time-varying sequences of
// them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace dbench::topology {

/// The most nodes a graph may have, checked before anything of size n is allocated: a thousand times the
/// largest scale the study trains at. Building and analysing the largest families at this size takes up to
/// about 4 GB (Base-4's rounds with their spectral analysis); ten times more would not fit most machines.
inline constexpr int kMaxGraphNodes = 1'000'000;

/// What a graph request got wrong. Callers name it their own way: the command line as --nodes, a config as
/// train.workers; the topology library knows neither.
enum class GraphInput {
  nodes,         ///< the number of nodes
  kind,          ///< the graph kind's name
  shape,         ///< a torus's rows x cols
  degree,        ///< the degree of a random-regular graph, or the peers k of a Base-(k+1) family
  probability,   ///< an Erdos-Renyi edge probability
  weights,       ///< the mixing-weight scheme
  graph,         ///< the graph's own rows or rounds (built in code, not requested)
  period,        ///< the period of periodic global averaging
  stage_starts,  ///< a switch policy's start iterations, one per stage
  ladder,        ///< an Ada ladder's rungs
  band,          ///< an Ada consensus-distance band (low, high)
  ada_timing,    ///< an Ada's check interval, dwell and patience
  start_rung,    ///< an Ada's first rung
};

/// The neutral name of an input ("nodes", "shape", "stage starts"): the command line's flag without "--".
std::string_view graph_input_name(GraphInput input) noexcept;

/// A graph request that cannot be honoured; input() says what was wrong, reason() why, in words that name
/// no command-line flag and no config key.
class GraphError : public std::invalid_argument {
 public:
  /// what() is "name: reason", the name from graph_input_name.
  GraphError(GraphInput input, const std::string& reason);

  /// The input the error is about.
  GraphInput input() const noexcept { return input_; }
  /// The reason alone, for callers that name the input themselves.
  const std::string& reason() const noexcept { return reason_; }

 private:
  GraphInput input_;
  std::string reason_;
};

/// One term of a row of W: node `from` contributes `weight` times its value to the row's node.
struct MixingEntry {
  int from;
  double weight;
};

/// One mixing matrix W on n nodes in compressed rows: row i lists i's in-neighbours, itself included, sorted
/// by `from`; a mixing step is x_i <- sum_j W_ij x_j.
class Graph {
 public:
  /// Takes rows as given (duplicates, out-of-range sources and non-finite weights are rejected).
  Graph(std::string name, std::vector<std::vector<MixingEntry>> rows, bool vertex_transitive = false);

  /// A short name for reports, e.g. "ring" or "base-2[3]".
  const std::string& name() const noexcept { return name_; }
  /// Number of nodes n.
  int nodes() const noexcept { return static_cast<int>(offsets_.size()) - 1; }
  /// Row i: i's in-neighbours and itself with their weights, sorted by `from`.
  std::span<const MixingEntry> row(int i) const noexcept {
    return {entries_.data() + offsets_[i], entries_.data() + offsets_[i + 1]};
  }
  /// Start of each row in entries(), n + 1 values: rows are contiguous for fast mixing.
  std::span<const std::int64_t> offsets() const noexcept { return offsets_; }
  /// All rows back to back.
  std::span<const MixingEntry> entries() const noexcept { return entries_; }
  /// W_ij, 0 where j is not in row i (binary search).
  double weight(int i, int j) const noexcept;
  /// True where every node looks the same (circulant, torus, hypercube, ...): one BFS gives the diameter.
  bool vertex_transitive() const noexcept { return vertex_transitive_; }

  /// y = W x.
  void mix(std::span<const double> x, std::span<double> y) const;
  /// y = W^T x (what the receivers' weights send back along each edge).
  void mix_transposed(std::span<const double> x, std::span<double> y) const;

 private:
  std::string name_;
  std::vector<std::int64_t> offsets_;
  std::vector<MixingEntry> entries_;
  bool vertex_transitive_;
};

/// The graphs used iteration after iteration: iteration t uses rounds[t % period]. A static graph is a
/// sequence of period 1; a time-varying family (one-peer exponential, Base-(k+1)) lists one period of rounds.
class GraphSequence {
 public:
  /// A static graph.
  explicit GraphSequence(Graph graph);
  /// A cycle of rounds on the same nodes (at least one).
  GraphSequence(std::string kind, std::vector<Graph> rounds, bool union_vertex_transitive = false);

  /// The family's name, e.g. "one-peer-exponential".
  const std::string& kind() const noexcept { return kind_; }
  /// Number of nodes n.
  int nodes() const noexcept { return rounds_.front().nodes(); }
  /// Number of rounds in one period.
  int period() const noexcept { return static_cast<int>(rounds_.size()); }
  /// True for more than one round.
  bool time_varying() const noexcept { return rounds_.size() > 1; }
  /// The graph of iteration t.
  const Graph& at(std::int64_t iteration) const noexcept {
    return rounds_[static_cast<std::size_t>(iteration % static_cast<std::int64_t>(rounds_.size()))];
  }
  /// All rounds of one period.
  std::span<const Graph> rounds() const noexcept { return rounds_; }
  /// True where the union of the rounds is vertex-transitive (a single BFS gives its diameter).
  bool union_vertex_transitive() const noexcept { return union_vertex_transitive_; }

  /// Applies one full period to x in place: x <- W_{period-1} ... W_1 W_0 x.
  void mix_period(std::span<double> x) const;

 private:
  std::string kind_;
  std::vector<Graph> rounds_;
  bool union_vertex_transitive_;
};

}  // namespace dbench::topology
