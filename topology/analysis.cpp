#include "topology/analysis.hpp"

#include <algorithm>
#include <boost/graph/breadth_first_search.hpp>
#include <boost/graph/compressed_sparse_row_graph.hpp>
#include <cmath>
#include <limits>
#include <utility>
#include <vector>

namespace dbench::topology {
namespace {

using Arc = std::pair<int, int>;  // sender -> receiver
using CsrGraph = boost::compressed_sparse_row_graph<boost::directedS>;

// Arcs j -> i for every W_ij != 0, i != j, over all rounds, without repeats.
std::vector<Arc> union_arcs(const GraphSequence& s) {
  std::vector<Arc> arcs;
  for (const auto& g : s.rounds()) {
    for (int i = 0; i < g.nodes(); ++i) {
      for (const auto& e : g.row(i)) {
        if (e.from != i && e.weight != 0.0) {
          arcs.emplace_back(e.from, i);
        }
      }
    }
  }
  std::sort(arcs.begin(), arcs.end());
  arcs.erase(std::unique(arcs.begin(), arcs.end()), arcs.end());
  return arcs;
}

CsrGraph make_csr(std::vector<Arc> arcs, int n) {
  std::sort(arcs.begin(), arcs.end());
  return CsrGraph(boost::edges_are_sorted, arcs.begin(), arcs.end(), static_cast<std::size_t>(n));
}

// Hop distances from `source` (-1: unreachable), with Boost's BFS.
std::vector<int> distances_from(const CsrGraph& g, int source) {
  const auto n = boost::num_vertices(g);
  std::vector<int> distance(n, -1);
  distance[static_cast<std::size_t>(source)] = 0;
  const auto index = boost::get(boost::vertex_index, g);
  auto map = boost::make_iterator_property_map(distance.begin(), index);
  boost::breadth_first_search(
      g, boost::vertex(static_cast<std::size_t>(source), g),
      boost::visitor(boost::make_bfs_visitor(boost::record_distances(map, boost::on_tree_edge()))));
  return distance;
}

struct Eccentricity {
  int value;     // largest distance, -1 if some node is unreachable
  int farthest;  // a node at that distance
};

Eccentricity eccentricity(const CsrGraph& g, int source) {
  const auto d = distances_from(g, source);
  Eccentricity e{0, source};
  for (std::size_t v = 0; v < d.size(); ++v) {
    if (d[v] < 0) {
      return {-1, static_cast<int>(v)};
    }
    if (d[v] > e.value) {
      e = {d[v], static_cast<int>(v)};
    }
  }
  return e;
}

struct Diameter {
  std::optional<int> value;
  bool exact;
};

Diameter diameter(const std::vector<Arc>& arcs, int n, bool vertex_transitive, std::int64_t work_limit) {
  const auto forward = make_csr(arcs, n);
  std::vector<Arc> reversed;
  reversed.reserve(arcs.size());
  for (const auto& [from, to] : arcs) {
    reversed.emplace_back(to, from);
  }
  const auto backward = make_csr(std::move(reversed), n);
  // Strongly connected iff node 0 reaches everyone and everyone reaches node 0.
  const auto first = eccentricity(forward, 0);
  if (first.value < 0 || eccentricity(backward, 0).value < 0) {
    return {std::nullopt, true};
  }
  if (vertex_transitive) {
    return {first.value, true};
  }
  const auto arc_count = static_cast<std::int64_t>(arcs.size());
  if (static_cast<std::int64_t>(n) * std::max<std::int64_t>(arc_count, 1) <= work_limit) {
    int best = first.value;
    for (int v = 1; v < n; ++v) {
      best = std::max(best, eccentricity(forward, v).value);
    }
    return {best, true};
  }
  // Double sweeps: a BFS from the farthest node found so far often lands on a diameter's end; every
  // eccentricity is a lower bound.
  int best = first.value;
  int next = first.farthest;
  for (int sweep = 0; sweep < 8; ++sweep) {
    const auto e = eccentricity(backward, next);  // who is far from `next`, then start from there forwards
    const auto f = eccentricity(forward, e.farthest);
    best = std::max({best, e.value, f.value});
    next = f.farthest;
  }
  return {best, false};
}

struct RoundCounts {
  std::int64_t arcs = 0;
  std::int64_t pairs = 0;
  bool directed = false;
  std::vector<int> in_degree;
  std::vector<int> out_degree;
};

RoundCounts count_round(const Graph& g) {
  RoundCounts c;
  const auto n = static_cast<std::size_t>(g.nodes());
  c.in_degree.assign(n, 0);
  c.out_degree.assign(n, 0);
  std::int64_t mutual = 0;
  for (int i = 0; i < g.nodes(); ++i) {
    for (const auto& e : g.row(i)) {
      if (e.from == i || e.weight == 0.0) {
        continue;
      }
      ++c.arcs;
      ++c.in_degree[static_cast<std::size_t>(i)];
      ++c.out_degree[static_cast<std::size_t>(e.from)];
      if (g.weight(e.from, i) != 0.0) {
        ++mutual;
      } else {
        c.directed = true;
      }
    }
  }
  c.pairs = mutual / 2 + (c.arcs - mutual);
  return c;
}

void merge_degrees(DegreeRange& range, const std::vector<int>& degree, bool first, int period) {
  const auto [lo, hi] = std::minmax_element(degree.begin(), degree.end());
  double sum = 0.0;
  for (const int d : degree) {
    sum += d;
  }
  const double mean = sum / static_cast<double>(degree.size()) / period;
  if (first) {
    range = {*lo, mean, *hi};
    return;
  }
  range.min = std::min(range.min, *lo);
  range.max = std::max(range.max, *hi);
  range.mean += mean;
}

}  // namespace

MixingChecks check_mixing(const Graph& w, double tolerance) {
  MixingChecks c;
  const int n = w.nodes();
  std::vector<double> column(static_cast<std::size_t>(n), 0.0);
  for (int i = 0; i < n; ++i) {
    double row = 0.0;
    for (const auto& e : w.row(i)) {
      row += e.weight;
      column[static_cast<std::size_t>(e.from)] += e.weight;
      c.nonnegative = c.nonnegative && e.weight >= 0.0;
      if (c.symmetric && std::abs(w.weight(e.from, i) - e.weight) > tolerance) {
        c.symmetric = false;
      }
    }
    c.max_row_error = std::max(c.max_row_error, std::abs(row - 1.0));
  }
  for (const double s : column) {
    c.max_column_error = std::max(c.max_column_error, std::abs(s - 1.0));
  }
  c.row_stochastic = c.nonnegative && c.max_row_error <= tolerance;
  c.column_stochastic = c.nonnegative && c.max_column_error <= tolerance;
  return c;
}

MixingChecks check_mixing(const GraphSequence& sequence, double tolerance) {
  MixingChecks all;
  for (const auto& g : sequence.rounds()) {
    const auto c = check_mixing(g, tolerance);
    all.nonnegative = all.nonnegative && c.nonnegative;
    all.row_stochastic = all.row_stochastic && c.row_stochastic;
    all.column_stochastic = all.column_stochastic && c.column_stochastic;
    all.symmetric = all.symmetric && c.symmetric;
    all.max_row_error = std::max(all.max_row_error, c.max_row_error);
    all.max_column_error = std::max(all.max_column_error, c.max_column_error);
  }
  return all;
}

GraphStats analyze(const GraphSequence& sequence, const AnalyzeOptions& options) {
  GraphStats s;
  s.name = sequence.kind();
  s.nodes = sequence.nodes();
  s.period = sequence.period();
  bool first = true;
  for (const auto& g : sequence.rounds()) {
    const auto c = count_round(g);
    s.directed_edges = std::max(s.directed_edges, c.arcs);
    s.undirected_edges = std::max(s.undirected_edges, c.pairs);
    s.directed = s.directed || c.directed;
    merge_degrees(s.in_degree, c.in_degree, first, s.period);
    merge_degrees(s.out_degree, c.out_degree, first, s.period);
    first = false;
  }
  const auto d = diameter(union_arcs(sequence), s.nodes, sequence.union_vertex_transitive(),
                          options.exact_diameter_work);
  s.diameter = d.value;
  s.diameter_exact = d.exact;
  s.checks = check_mixing(sequence);

  if (!sequence.time_varying()) {
    const auto spectrum = spectral_gap(sequence.rounds().front(), options.spectral);
    s.second_eigenvalue_modulus = spectrum.second_modulus;
    s.spectral_gap = spectrum.gap;
    s.spectral_method = spectrum.method;
    s.connected = s.diameter.has_value();
    return s;
  }
  const auto product = period_contraction(sequence, options.spectral);
  s.exact_consensus = product.contraction < options.exact_consensus_tolerance;
  s.contraction = s.exact_consensus ? 0.0 : product.contraction;
  s.spectral_gap = 1.0 - std::pow(*s.contraction, 1.0 / s.period);
  s.spectral_method = product.method;
  s.connected = s.diameter.has_value() && *s.contraction < 1.0 - options.exact_consensus_tolerance;
  return s;
}

}  // namespace dbench::topology
