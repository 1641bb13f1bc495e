#include "topology/graph_analysis.hpp"

#include <algorithm>
#include <boost/graph/breadth_first_search.hpp>
#include <boost/graph/compressed_sparse_row_graph.hpp>
#include <cmath>
#include <limits>
#include <span>
#include <utility>
#include <vector>

namespace dbench::topology {
namespace {

using CsrGraph = boost::compressed_sparse_row_graph<boost::directedS>;

// Neighbour lists of all nodes back to back, each sorted: node v's are items[offsets[v] .. offsets[v+1]).
template <typename Item>
struct Lists {
  std::vector<std::int64_t> offsets;
  std::vector<Item> items;

  std::span<const Item> of(int v) const {
    return {items.data() + offsets[static_cast<std::size_t>(v)],
            items.data() + offsets[static_cast<std::size_t>(v) + 1]};
  }
};

int node_of(int v) {
  return v;
}
int node_of(const MixingEntry& e) {
  return e.from;
}
int with_node(int, int v) {
  return v;
}
MixingEntry with_node(const MixingEntry& e, int v) {
  return {v, e.weight};
}

// Lists of the transpose in O(n + entries) by counting sort: u appears in v's list for every v in u's list,
// and scanning u in order keeps every new list sorted.
template <typename Item>
Lists<Item> transpose(const Lists<Item>& lists, int n) {
  Lists<Item> t;
  t.offsets.assign(static_cast<std::size_t>(n) + 1, 0);
  for (const auto& item : lists.items) {
    ++t.offsets[static_cast<std::size_t>(node_of(item)) + 1];
  }
  for (std::size_t v = 0; v < static_cast<std::size_t>(n); ++v) {
    t.offsets[v + 1] += t.offsets[v];
  }
  t.items.resize(lists.items.size());
  std::vector<std::int64_t> fill(t.offsets.begin(), t.offsets.end() - 1);
  for (int u = 0; u < n; ++u) {
    for (const auto& item : lists.of(u)) {
      t.items[static_cast<std::size_t>(fill[static_cast<std::size_t>(node_of(item))]++)] = with_node(item, u);
    }
  }
  return t;
}

// Row i's non-zero entries: W_ij with the weights, self included.
Lists<MixingEntry> weighted_rows(const Graph& g) {
  Lists<MixingEntry> rows;
  rows.offsets.push_back(0);
  for (int i = 0; i < g.nodes(); ++i) {
    for (const auto& e : g.row(i)) {
      if (e.weight != 0.0) {
        rows.items.push_back(e);
      }
    }
    rows.offsets.push_back(static_cast<std::int64_t>(rows.items.size()));
  }
  return rows;
}

// In-neighbours j of every node i (W_ij != 0, j != i) over all rounds, sorted and without repeats.
Lists<int> union_in_neighbours(const GraphSequence& s) {
  Lists<int> in;
  in.offsets.push_back(0);
  std::vector<int> merged;
  for (int i = 0; i < s.nodes(); ++i) {
    merged.clear();
    for (const auto& g : s.rounds()) {
      for (const auto& e : g.row(i)) {
        if (e.from != i && e.weight != 0.0) {
          merged.push_back(e.from);
        }
      }
    }
    if (s.time_varying()) {
      std::sort(merged.begin(), merged.end());
      merged.erase(std::unique(merged.begin(), merged.end()), merged.end());
    }
    in.items.insert(in.items.end(), merged.begin(), merged.end());
    in.offsets.push_back(static_cast<std::int64_t>(in.items.size()));
  }
  return in;
}

// Boost's CSR graph with an arc v -> u for every u in v's list; the lists are sorted, so the arcs come
// sorted.
CsrGraph make_csr(const Lists<int>& lists, int n) {
  std::vector<std::pair<int, int>> arcs;
  arcs.reserve(lists.items.size());
  for (int v = 0; v < n; ++v) {
    for (const int u : lists.of(v)) {
      arcs.emplace_back(v, u);
    }
  }
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

Diameter diameter(const Lists<int>& in, int n, bool vertex_transitive, std::int64_t work_limit) {
  const auto forward = make_csr(transpose(in, n), n);  // sender -> receiver
  const auto backward = make_csr(in, n);               // receiver -> sender
  // Strongly connected iff node 0 reaches everyone and everyone reaches node 0.
  const auto first = eccentricity(forward, 0);
  if (first.value < 0 || eccentricity(backward, 0).value < 0) {
    return {std::nullopt, true};
  }
  if (vertex_transitive) {
    return {first.value, true};
  }
  const auto arc_count = static_cast<std::int64_t>(in.items.size());
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
  const int n = g.nodes();
  Lists<int> in;
  in.offsets.push_back(0);
  for (int i = 0; i < n; ++i) {
    for (const auto& e : g.row(i)) {
      if (e.from != i && e.weight != 0.0) {
        in.items.push_back(e.from);
      }
    }
    in.offsets.push_back(static_cast<std::int64_t>(in.items.size()));
  }
  const auto out = transpose(in, n);
  c.arcs = static_cast<std::int64_t>(in.items.size());
  // An arc j -> i has a reverse arc when j is also among i's out-neighbours: intersect the sorted lists.
  std::int64_t mutual = 0;
  for (int i = 0; i < n; ++i) {
    const auto a = in.of(i);
    const auto b = out.of(i);
    c.in_degree.push_back(static_cast<int>(a.size()));
    c.out_degree.push_back(static_cast<int>(b.size()));
    for (std::size_t x = 0, y = 0; x < a.size() && y < b.size();) {
      if (a[x] == b[y]) {
        ++mutual;
        ++x;
        ++y;
      } else if (a[x] < b[y]) {
        ++x;
      } else {
        ++y;
      }
    }
  }
  c.directed = mutual != c.arcs;
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
  const auto rows = weighted_rows(w);
  const auto columns = transpose(rows, n);  // column j as a list: (i, W_ij)
  for (int i = 0; i < n; ++i) {
    double row_sum = 0.0;
    for (const auto& e : rows.of(i)) {
      row_sum += e.weight;
      c.nonnegative = c.nonnegative && e.weight >= 0.0;
    }
    double column_sum = 0.0;
    for (const auto& e : columns.of(i)) {
      column_sum += e.weight;
    }
    c.max_row_error = std::max(c.max_row_error, std::abs(row_sum - 1.0));
    c.max_column_error = std::max(c.max_column_error, std::abs(column_sum - 1.0));
    // W = W^T iff row i and column i list the same nodes with the same weights.
    const auto r = rows.of(i);
    const auto t = columns.of(i);
    c.symmetric = c.symmetric && r.size() == t.size() &&
                  std::equal(r.begin(), r.end(), t.begin(), [&](const MixingEntry& a, const MixingEntry& b) {
                    return a.from == b.from && std::abs(a.weight - b.weight) <= tolerance;
                  });
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
  const auto d = diameter(union_in_neighbours(sequence), s.nodes, sequence.union_vertex_transitive(),
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
