// Small helpers shared by the topology test files.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "topology/generators.hpp"
#include "topology/graph.hpp"

namespace dbench::topology::testing {

/// The message of the GraphError `f` throws, or a marker when it throws nothing.
template <typename F>
std::string graph_error_of(F&& f) {
  try {
    f();
  } catch (const GraphError& e) {
    return e.what();
  }
  return "<no GraphError thrown>";
}

/// Builds a sequence from a kind name and a node count, everything else at its default.
inline GraphSequence build(std::string_view kind, int n, int degree = 0, double probability = 0.0) {
  GraphSpec spec;
  spec.kind = parse_graph_kind(kind);
  spec.nodes = n;
  spec.degree = degree;
  spec.probability = probability;
  return make_graph(spec);
}

/// max_i |x_i - mean(x0)| after one period applied to x0.
inline double consensus_error_after_period(const GraphSequence& s, std::uint64_t seed) {
  std::mt19937_64 engine(seed);
  std::normal_distribution<double> normal;
  std::vector<double> x(static_cast<std::size_t>(s.nodes()));
  double mean = 0.0;
  for (auto& v : x) {
    v = normal(engine);
    mean += v;
  }
  mean /= static_cast<double>(x.size());
  s.mix_period(x);
  double worst = 0.0;
  for (const double v : x) {
    worst = std::max(worst, std::abs(v - mean));
  }
  return worst;
}

/// Largest in-degree (row entries besides the node itself) over every round.
inline int max_round_degree(const GraphSequence& s) {
  int worst = 0;
  for (const auto& g : s.rounds()) {
    for (int i = 0; i < g.nodes(); ++i) {
      int d = 0;
      for (const auto& e : g.row(i)) {
        d += e.from != i && e.weight != 0.0 ? 1 : 0;
      }
      worst = std::max(worst, d);
    }
  }
  return worst;
}

}  // namespace dbench::topology::testing
