// Graph generators and their mixing weights, and the one factory the rest of DBench calls: make_graph(spec).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "topology/graph.hpp"

namespace dbench::topology {

/// The graph families DBench can build.
enum class GraphKind {
  ring,
  torus,
  hypercube,
  complete,
  star,
  exponential,
  one_peer_exponential,
  random_regular,
  erdos_renyi,
  hyper_hypercube,
  simple_base,
  base,
};

/// How an undirected graph's edges become mixing weights.
enum class WeightScheme {
  automatic,            ///< uniform 1/(d+1) on regular graphs, Metropolis-Hastings otherwise
  uniform,              ///< W_ij = 1/(d_i+1): row-stochastic, doubly stochastic only on regular graphs
  metropolis_hastings,  ///< W_ij = 1/(1+max(d_i,d_j)), W_ii = 1 - sum: symmetric and doubly stochastic
};

/// Everything needed to build one graph; zero means "the kind's default" where a default exists.
struct GraphSpec {
  GraphKind kind = GraphKind::ring;
  int nodes = 0;
  int torus_rows = 0;  ///< torus shape rows x cols; 0 x 0 picks the most square factorisation of n
  int torus_cols = 0;
  int degree = 0;  ///< random-regular: d (required); hyper-hypercube / base: max degree k (default 1)
  double probability = 0.0;                        ///< erdos-renyi: edge probability in (0, 1] (required)
  std::uint64_t seed = 1;                          ///< random kinds only
  WeightScheme weights = WeightScheme::automatic;  ///< undirected static kinds only
};

/// An undirected edge {u, v}, u != v.
struct Edge {
  int u;
  int v;
};

/// The kind names the command line and configs accept, in GraphKind order.
std::span<const std::string_view> known_graph_kinds() noexcept;
/// The name of a kind, e.g. "one-peer-exponential".
std::string_view graph_kind_name(GraphKind kind) noexcept;
/// Parses a kind name; throws GraphError(GraphInput::kind, "unknown kind 'X' (known: ring, torus, ...)").
GraphKind parse_graph_kind(std::string_view name);
/// Parses a weight scheme name: automatic, uniform or metropolis-hastings.
WeightScheme parse_weight_scheme(std::string_view name);
/// Parses "RxC" (e.g. "24x42") into {rows, cols}; throws GraphError(GraphInput::shape, ...).
std::pair<int, int> parse_torus_shape(std::string_view text);
/// The factorisation rows x cols = n with rows <= cols and rows as large as possible.
std::pair<int, int> most_square_shape(int n);

/// Builds the graph (or the time-varying sequence) a spec describes; throws GraphError naming the bad input.
GraphSequence make_graph(const GraphSpec& spec);

/// Mixing weights for an undirected simple graph given by its edges (validated: no loops, no duplicates).
Graph weighted_graph(std::string name, int n, std::span<const Edge> edges, WeightScheme scheme,
                     bool vertex_transitive = false);

/// Ring: i -- i+1 (mod n); weights 1/3 (1/2 for n = 2).
///   0 - 1 - 2 - ... - (n-1) - back to 0
Graph ring(int n);

/// 2-D torus of rows x cols = n (0 x 0: most square): (r,c) -- (r±1 mod R, c) and (r, c±1 mod C); weights
/// 1/(d+1), 1/5 once both sides are at least 3.
///   o-o-o-o   every row and every column closes into a ring
///   | | | |
///   o-o-o-o
Graph torus(int n, int rows = 0, int cols = 0);

/// Hypercube on n = 2^d nodes: i -- i XOR 2^b for b < d; weights 1/(d+1).
///   000 - 001
///    |  X  |    (d = 3: each label differs from a neighbour's in exactly one bit)
///   010 - 011 ...
Graph hypercube(int n);

/// Complete graph: every i -- every j; W = (1/n) 11^T.
Graph complete(int n);

/// Star: hub 0 -- leaf i for i = 1..n-1; Metropolis-Hastings by default (W_0i = 1/n, hub keeps 1/n, a leaf
/// keeps 1 - 1/n).
///     1
///   4-0-2
///     3
Graph star(int n, WeightScheme scheme = WeightScheme::automatic);

/// Static exponential graph (directed): i -> i + 2^k (mod n) for k = 0..tau-1, tau = ceil(log2 n); row i
/// holds i and its in-neighbours i - 2^k, each with weight 1/(tau+1).
///   0 -> 1, 2, 4, 8, ...      1 -> 2, 3, 5, 9, ...
Graph exponential(int n);

/// One-peer exponential graph (time-varying, period tau = ceil(log2 n)): at iteration t node i sends to
/// i + 2^(t mod tau); W_t row i = {i: 1/2, i - 2^m: 1/2}, m = t mod tau. One period averages exactly when n
/// is a power of two.
///   t=0: i -> i+1    t=1: i -> i+2    t=2: i -> i+4 ...
GraphSequence one_peer_exponential(int n);

/// Random d-regular graph (seeded, connected, simple), uniform weights 1/(d+1).
///   every node has exactly d neighbours, drawn by random pairing of d "stubs" per node
Graph random_regular(int n, int degree, std::uint64_t seed);

/// Erdos-Renyi G(n, p) (seeded): each pair i -- j independently with probability p; disconnected draws are
/// redrawn a bounded number of times. Metropolis-Hastings weights by default.
Graph erdos_renyi(int n, double probability, std::uint64_t seed,
                  WeightScheme scheme = WeightScheme::automatic);

}  // namespace dbench::topology
