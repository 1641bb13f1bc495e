#include "topology/generators.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <random>
#include <unordered_set>

#include "topology/base_graph.hpp"

namespace dbench::topology {
namespace {

constexpr std::array<std::string_view, 12> kKindNames = {
    "ring",
    "torus",
    "hypercube",
    "complete",
    "star",
    "exponential",
    "one-peer-exponential",
    "random-regular",
    "erdos-renyi",
    "hyper-hypercube",
    "simple-base",
    "base",
};

// Caps memory: 50M entries are 800 MB of rows, far beyond any graph an experiment mixes with.
constexpr std::int64_t kMaxEntries = 50'000'000;
// Random draws that keep coming out disconnected or stuck mean the parameters are the problem, not luck.
constexpr int kMaxDraws = 100;

void require_nodes(int n, std::string_view what) {
  if (n < 2) {
    throw GraphError(GraphInput::nodes, fmt::format("{} needs at least 2 nodes, got {}", what, n));
  }
  if (n > kMaxGraphNodes) {
    throw GraphError(GraphInput::nodes, fmt::format("{} on {} nodes is too large; the limit is {} nodes",
                                                    what, n, kMaxGraphNodes));
  }
}

void require_entries(std::int64_t entries, GraphInput input, std::string_view what) {
  if (entries > kMaxEntries) {
    throw GraphError(
        input, fmt::format("{} would hold {} mixing entries; the limit is {}", what, entries, kMaxEntries));
  }
}

int ceil_log2(int n) {
  int tau = 0;
  while ((std::int64_t{1} << tau) < n) {
    ++tau;
  }
  return tau;
}

// The seed must give the same graph on every platform (sim and runtime build the same graph), so the standard
// distributions, whose algorithms are unspecified, are avoided; mt19937_64's output is fixed by the standard.
class Rng {
 public:
  explicit Rng(std::uint64_t seed) : engine_(seed) {}

  // Uniform in [0, bound) by rejection, without modulo bias.
  std::uint64_t below(std::uint64_t bound) {
    const std::uint64_t limit =
        std::numeric_limits<std::uint64_t>::max() - std::numeric_limits<std::uint64_t>::max() % bound;
    std::uint64_t x = engine_();
    while (x >= limit) {
      x = engine_();
    }
    return x % bound;
  }

  // Uniform in [0, 1) with 53 random bits.
  double uniform() { return static_cast<double>(engine_() >> 11) * 0x1.0p-53; }

 private:
  std::mt19937_64 engine_;
};

bool connected(int n, std::span<const Edge> edges) {
  std::vector<int> degree(static_cast<std::size_t>(n) + 1, 0);
  for (const auto& e : edges) {
    ++degree[static_cast<std::size_t>(e.u) + 1];
    ++degree[static_cast<std::size_t>(e.v) + 1];
  }
  std::partial_sum(degree.begin(), degree.end(), degree.begin());
  std::vector<int> adjacency(static_cast<std::size_t>(degree.back()));
  std::vector<int> fill(degree.begin(), degree.end() - 1);
  for (const auto& e : edges) {
    adjacency[static_cast<std::size_t>(fill[static_cast<std::size_t>(e.u)]++)] = e.v;
    adjacency[static_cast<std::size_t>(fill[static_cast<std::size_t>(e.v)]++)] = e.u;
  }
  std::vector<char> seen(static_cast<std::size_t>(n), 0);
  std::vector<int> queue{0};
  seen[0] = 1;
  for (std::size_t head = 0; head < queue.size(); ++head) {
    const auto u = static_cast<std::size_t>(queue[head]);
    for (int k = degree[u]; k < degree[u + 1]; ++k) {
      const int v = adjacency[static_cast<std::size_t>(k)];
      if (!seen[static_cast<std::size_t>(v)]) {
        seen[static_cast<std::size_t>(v)] = 1;
        queue.push_back(v);
      }
    }
  }
  return static_cast<int>(queue.size()) == n;
}

std::uint64_t edge_key(int u, int v, int n) {
  const auto lo = static_cast<std::uint64_t>(std::min(u, v));
  const auto hi = static_cast<std::uint64_t>(std::max(u, v));
  return lo * static_cast<std::uint64_t>(n) + hi;
}

// Random pairing of d stubs per node (Steger-Wormald): a pair is accepted only if it adds no loop and no
// duplicate edge, and a draw that gets stuck near the end starts over. Close to uniform for d << n.
std::vector<Edge> pair_stubs(int n, int d, Rng& rng) {
  for (;;) {
    std::vector<int> stubs;
    stubs.reserve(static_cast<std::size_t>(n) * static_cast<std::size_t>(d));
    for (int i = 0; i < n; ++i) {
      stubs.insert(stubs.end(), static_cast<std::size_t>(d), i);
    }
    std::unordered_set<std::uint64_t> present;
    present.reserve(stubs.size());
    std::vector<Edge> edges;
    edges.reserve(stubs.size() / 2);
    bool stuck = false;
    while (!stubs.empty() && !stuck) {
      const std::size_t remaining = stubs.size();
      // Few stubs left may admit no valid pair at all; give up on this draw after enough misses.
      const std::size_t patience = 64 + 4 * remaining * remaining;
      bool placed = false;
      for (std::size_t miss = 0; miss < patience && !placed; ++miss) {
        const auto a = static_cast<std::size_t>(rng.below(remaining));
        auto b = static_cast<std::size_t>(rng.below(remaining - 1));
        if (b >= a) {
          ++b;
        }
        const int u = stubs[a];
        const int v = stubs[b];
        if (u == v || present.contains(edge_key(u, v, n))) {
          continue;
        }
        present.insert(edge_key(u, v, n));
        edges.push_back({u, v});
        // Remove the larger index first so the smaller one stays valid.
        for (const auto idx : {std::max(a, b), std::min(a, b)}) {
          stubs[idx] = stubs.back();
          stubs.pop_back();
        }
        placed = true;
      }
      stuck = !placed;
    }
    if (!stuck) {
      return edges;
    }
  }
}

// A uniformly random Hamiltonian cycle: exactly the connected 2-regular graphs, each equally likely.
std::vector<Edge> random_cycle(int n, Rng& rng) {
  std::vector<int> order(static_cast<std::size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  for (std::size_t i = order.size() - 1; i > 0; --i) {
    std::swap(order[i], order[static_cast<std::size_t>(rng.below(i + 1))]);
  }
  std::vector<Edge> edges;
  for (std::size_t i = 0; i < order.size(); ++i) {
    edges.push_back({order[i], order[(i + 1) % order.size()]});
  }
  return edges;
}

std::vector<Edge> complement(int n, std::span<const Edge> edges) {
  std::vector<bool> present(static_cast<std::size_t>(n) * static_cast<std::size_t>(n), false);
  for (const auto& e : edges) {
    present[static_cast<std::size_t>(e.u) * static_cast<std::size_t>(n) + static_cast<std::size_t>(e.v)] =
        true;
    present[static_cast<std::size_t>(e.v) * static_cast<std::size_t>(n) + static_cast<std::size_t>(e.u)] =
        true;
  }
  std::vector<Edge> out;
  for (int u = 0; u < n; ++u) {
    for (int v = u + 1; v < n; ++v) {
      if (!present[static_cast<std::size_t>(u) * static_cast<std::size_t>(n) + static_cast<std::size_t>(v)]) {
        out.push_back({u, v});
      }
    }
  }
  return out;
}

void reject_option(bool given, GraphInput input, std::string_view kind, std::string_view what) {
  if (given) {
    throw GraphError(input, fmt::format("kind '{}' takes no {}", kind, what));
  }
}

// How messages name each kind: "a ring", "an Erdos-Renyi graph", ...
std::string_view noun(GraphKind kind) {
  constexpr std::array<std::string_view, kKindNames.size()> kNouns = {
      "a ring",
      "a torus",
      "a hypercube",
      "a complete graph",
      "a star",
      "an exponential graph",
      "a one-peer exponential graph",
      "a random regular graph",
      "an Erdos-Renyi graph",
      "a hyper-hypercube",
      "a simple Base-(k+1) graph",
      "a Base-(k+1) graph",
  };
  return kNouns[static_cast<std::size_t>(kind)];
}

int peer_degree(const GraphSpec& spec) {
  const int k = spec.degree == 0 ? 1 : spec.degree;
  if (k < 1 || k >= spec.nodes) {
    throw GraphError(GraphInput::degree,
                     fmt::format("{} on {} nodes needs a maximum degree k in [1, {}], got {}",
                                 noun(spec.kind), spec.nodes, spec.nodes - 1, k));
  }
  return k;
}

}  // namespace

std::span<const std::string_view> known_graph_kinds() noexcept {
  return kKindNames;
}

std::string_view graph_kind_name(GraphKind kind) noexcept {
  return kKindNames[static_cast<std::size_t>(kind)];
}

GraphKind parse_graph_kind(std::string_view name) {
  for (std::size_t i = 0; i < kKindNames.size(); ++i) {
    if (kKindNames[i] == name) {
      return static_cast<GraphKind>(i);
    }
  }
  std::string known;
  for (const auto k : kKindNames) {
    known += known.empty() ? "" : ", ";
    known += k;
  }
  throw GraphError(GraphInput::kind, fmt::format("unknown kind '{}' (known: {})", name, known));
}

WeightScheme parse_weight_scheme(std::string_view name) {
  if (name == "automatic") {
    return WeightScheme::automatic;
  }
  if (name == "uniform") {
    return WeightScheme::uniform;
  }
  if (name == "metropolis-hastings") {
    return WeightScheme::metropolis_hastings;
  }
  throw GraphError(
      GraphInput::weights,
      fmt::format("unknown weights '{}' (known: automatic, uniform, metropolis-hastings)", name));
}

std::pair<int, int> parse_torus_shape(std::string_view text) {
  const auto bad = [&] {
    return GraphError(GraphInput::shape,
                      fmt::format("expected ROWSxCOLS with positive integers, e.g. 24x42, got '{}'", text));
  };
  const auto x = text.find_first_of("xX");
  if (x == std::string_view::npos) {
    throw bad();
  }
  const auto number = [&](std::string_view part) {
    if (part.empty() || part.size() > 9 ||
        !std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      throw bad();
    }
    int value = 0;
    for (const char c : part) {
      value = value * 10 + (c - '0');
    }
    if (value < 1) {
      throw bad();
    }
    return value;
  };
  return {number(text.substr(0, x)), number(text.substr(x + 1))};
}

std::pair<int, int> most_square_shape(int n) {
  int rows = 1;
  for (int r = 1; static_cast<std::int64_t>(r) * r <= n; ++r) {
    if (n % r == 0) {
      rows = r;
    }
  }
  return {rows, n / rows};
}

Graph weighted_graph(std::string name, int n, std::span<const Edge> edges, WeightScheme scheme,
                     bool vertex_transitive) {
  require_nodes(n, fmt::format("a graph '{}'", name));
  require_entries(static_cast<std::int64_t>(n) + 2 * static_cast<std::int64_t>(edges.size()),
                  GraphInput::nodes, name);
  std::vector<std::vector<int>> neighbours(static_cast<std::size_t>(n));
  for (const auto& e : edges) {
    if (e.u < 0 || e.u >= n || e.v < 0 || e.v >= n || e.u == e.v) {
      throw GraphError(GraphInput::graph,
                       fmt::format("{}: edge {} -- {} is a loop or leaves [0, {})", name, e.u, e.v, n));
    }
    neighbours[static_cast<std::size_t>(e.u)].push_back(e.v);
    neighbours[static_cast<std::size_t>(e.v)].push_back(e.u);
  }
  bool regular = true;
  for (auto& list : neighbours) {
    std::sort(list.begin(), list.end());
    if (std::adjacent_find(list.begin(), list.end()) != list.end()) {
      throw GraphError(GraphInput::graph, fmt::format("{}: an edge is listed twice", name));
    }
    regular = regular && list.size() == neighbours.front().size();
  }
  if (scheme == WeightScheme::automatic) {
    scheme = regular ? WeightScheme::uniform : WeightScheme::metropolis_hastings;
  }
  std::vector<std::vector<MixingEntry>> rows(static_cast<std::size_t>(n));
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const auto& list = neighbours[i];
    const double di = static_cast<double>(list.size());
    auto& row = rows[i];
    row.reserve(list.size() + 1);
    double others = 0.0;
    for (const int j : list) {
      const double w =
          scheme == WeightScheme::uniform
              ? 1.0 / (di + 1.0)
              : 1.0 /
                    (1.0 + std::max(di, static_cast<double>(neighbours[static_cast<std::size_t>(j)].size())));
      row.push_back({j, w});
      others += w;
    }
    row.push_back({static_cast<int>(i), scheme == WeightScheme::uniform ? 1.0 / (di + 1.0) : 1.0 - others});
  }
  return Graph(std::move(name), std::move(rows), vertex_transitive);
}

Graph ring(int n) {
  require_nodes(n, "a ring");
  std::vector<Edge> edges;
  for (int i = 0; i < (n == 2 ? 1 : n); ++i) {
    edges.push_back({i, (i + 1) % n});
  }
  return weighted_graph("ring", n, edges, WeightScheme::uniform, true);
}

Graph torus(int n, int rows, int cols) {
  require_nodes(n, "a torus");
  if (rows == 0 && cols == 0) {
    std::tie(rows, cols) = most_square_shape(n);
  }
  if (rows < 1 || cols < 1) {
    throw GraphError(GraphInput::shape,
                     fmt::format("a torus needs positive rows and columns, got {}x{}", rows, cols));
  }
  if (static_cast<std::int64_t>(rows) * cols != n) {
    throw GraphError(GraphInput::shape, fmt::format("{}x{} is {} nodes, but the graph has {}", rows, cols,
                                                    static_cast<std::int64_t>(rows) * cols, n));
  }
  std::vector<Edge> edges;
  const auto add = [&](int u, int v) {
    if (u != v) {
      edges.push_back({std::min(u, v), std::max(u, v)});
    }
  };
  for (int r = 0; r < rows; ++r) {
    for (int c = 0; c < cols; ++c) {
      add(r * cols + c, r * cols + (c + 1) % cols);
      add(r * cols + c, ((r + 1) % rows) * cols + c);
    }
  }
  // Sides of 2 would count the wrap-around edge twice.
  std::sort(edges.begin(), edges.end(),
            [](const Edge& a, const Edge& b) { return std::pair(a.u, a.v) < std::pair(b.u, b.v); });
  edges.erase(std::unique(edges.begin(), edges.end(),
                          [](const Edge& a, const Edge& b) { return a.u == b.u && a.v == b.v; }),
              edges.end());
  return weighted_graph("torus", n, edges, WeightScheme::uniform, true);
}

Graph hypercube(int n) {
  require_nodes(n, "a hypercube");
  if ((n & (n - 1)) != 0) {
    throw GraphError(GraphInput::nodes, fmt::format("a hypercube needs a power of two, got {}", n));
  }
  std::vector<Edge> edges;
  for (int i = 0; i < n; ++i) {
    for (int bit = 1; bit < n; bit <<= 1) {
      if ((i & bit) == 0) {
        edges.push_back({i, i | bit});
      }
    }
  }
  return weighted_graph("hypercube", n, edges, WeightScheme::uniform, true);
}

Graph complete(int n) {
  require_nodes(n, "a complete graph");
  require_entries(static_cast<std::int64_t>(n) * n, GraphInput::nodes,
                  fmt::format("a complete graph on {} nodes", n));
  std::vector<std::vector<MixingEntry>> rows(static_cast<std::size_t>(n));
  for (auto& row : rows) {
    row.reserve(static_cast<std::size_t>(n));
    for (int j = 0; j < n; ++j) {
      row.push_back({j, 1.0 / n});
    }
  }
  return Graph("complete", std::move(rows), true);
}

Graph star(int n, WeightScheme scheme) {
  require_nodes(n, "a star");
  std::vector<Edge> edges;
  for (int i = 1; i < n; ++i) {
    edges.push_back({0, i});
  }
  return weighted_graph("star", n, edges, scheme, n == 2);
}

Graph exponential(int n) {
  require_nodes(n, "an exponential graph");
  const int tau = ceil_log2(n);
  require_entries(static_cast<std::int64_t>(n) * (tau + 1), GraphInput::nodes,
                  fmt::format("an exponential graph on {} nodes", n));
  const double w = 1.0 / (tau + 1);
  std::vector<std::vector<MixingEntry>> rows(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) {
    auto& row = rows[static_cast<std::size_t>(i)];
    row.push_back({i, w});
    for (int k = 0; k < tau; ++k) {
      // 2^k < n for k < tau, so the offsets are distinct and non-zero.
      row.push_back({static_cast<int>((static_cast<std::int64_t>(i) - (std::int64_t{1} << k) + n) % n), w});
    }
  }
  return Graph("exponential", std::move(rows), true);
}

GraphSequence one_peer_exponential(int n) {
  require_nodes(n, "a one-peer exponential graph");
  const int tau = ceil_log2(n);
  require_entries(static_cast<std::int64_t>(n) * 2 * tau, GraphInput::nodes,
                  fmt::format("a one-peer exponential graph on {} nodes", n));
  std::vector<Graph> rounds;
  for (int m = 0; m < tau; ++m) {
    std::vector<std::vector<MixingEntry>> rows(static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i) {
      const auto from = static_cast<int>((static_cast<std::int64_t>(i) - (std::int64_t{1} << m) + n) % n);
      rows[static_cast<std::size_t>(i)] = {{i, 0.5}, {from, 0.5}};
    }
    rounds.emplace_back(fmt::format("one-peer-exponential[{}]", m), std::move(rows), true);
  }
  return GraphSequence("one-peer-exponential", std::move(rounds), true);
}

Graph random_regular(int n, int degree, std::uint64_t seed) {
  require_nodes(n, "a random regular graph");
  const int d = degree;
  if (d < 1 || d >= n) {
    throw GraphError(
        GraphInput::degree,
        fmt::format("a random regular graph on {} nodes needs a degree d in [1, {}], got {}", n, n - 1, d));
  }
  if ((static_cast<std::int64_t>(n) * d) % 2 != 0) {
    throw GraphError(GraphInput::degree, fmt::format("a d-regular graph needs n*d even, got {}*{}", n, d));
  }
  if (d == 1 && n > 2) {
    throw GraphError(
        GraphInput::degree,
        fmt::format("a 1-regular graph on {} nodes is a matching, never connected; use 2 or more", n));
  }
  require_entries(static_cast<std::int64_t>(n) * (d + 1), GraphInput::degree,
                  fmt::format("a {}-regular graph on {} nodes", d, n));
  Rng rng(seed);
  for (int draw = 0; draw < kMaxDraws; ++draw) {
    std::vector<Edge> edges;
    if (d == 2) {
      edges = random_cycle(n, rng);
    } else if (2 * d >= n) {
      // Dense: pair the sparser complement instead. With d >= n/2 any two nodes share a neighbour or are
      // adjacent, so the result is always connected.
      const int c = n - 1 - d;
      edges = complement(n, c == 0 ? std::vector<Edge>{} : pair_stubs(n, c, rng));
    } else {
      edges = pair_stubs(n, d, rng);
    }
    if (connected(n, edges)) {
      return weighted_graph("random-regular", n, edges, WeightScheme::uniform);
    }
  }
  throw GraphError(
      GraphInput::degree,
      fmt::format("no connected {}-regular graph on {} nodes in {} draws (seed {})", d, n, kMaxDraws, seed));
}

Graph erdos_renyi(int n, double probability, std::uint64_t seed, WeightScheme scheme) {
  require_nodes(n, "an Erdos-Renyi graph");
  const double p = probability;
  if (!(p > 0.0 && p <= 1.0)) {
    throw GraphError(GraphInput::probability,
                     fmt::format("an Erdos-Renyi graph needs an edge probability in (0, 1], got {}", p));
  }
  const double pairs = 0.5 * static_cast<double>(n) * (n - 1);
  require_entries(static_cast<std::int64_t>(n + 2.0 * p * pairs), GraphInput::probability,
                  fmt::format("G({}, {}) on average", n, p));
  Rng rng(seed);
  const double log_q = std::log1p(-p);
  for (int draw = 0; draw < kMaxDraws; ++draw) {
    // Batagelj-Brandes: jump over the absent pairs (v, w), w < v, with geometric gaps instead of drawing
    // every pair, so the cost is O(n + edges).
    std::vector<Edge> edges;
    std::int64_t v = 1;
    std::int64_t w = -1;
    while (v < n) {
      const double gap = p >= 1.0 ? 0.0 : std::floor(std::log1p(-rng.uniform()) / log_q);
      w += 1 + static_cast<std::int64_t>(std::min(gap, 4.0 * pairs));
      while (w >= v && v < n) {
        w -= v;
        ++v;
      }
      if (v < n) {
        edges.push_back({static_cast<int>(w), static_cast<int>(v)});
      }
    }
    if (connected(n, edges)) {
      return weighted_graph("erdos-renyi", n, edges, scheme);
    }
  }
  throw GraphError(
      GraphInput::probability,
      fmt::format("G({}, {}) came out disconnected in {} draws (seed {}); connectivity needs p well "
                  "above ln(n)/n = {:.3g}",
                  n, p, kMaxDraws, seed, std::log(static_cast<double>(n)) / n));
}

GraphSequence make_graph(const GraphSpec& spec) {
  const auto kind = graph_kind_name(spec.kind);
  require_nodes(spec.nodes, noun(spec.kind));
  reject_option((spec.torus_rows != 0 || spec.torus_cols != 0) && spec.kind != GraphKind::torus,
                GraphInput::shape, kind, "shape (only a torus has one)");
  reject_option(spec.probability != 0.0 && spec.kind != GraphKind::erdos_renyi, GraphInput::probability, kind,
                "probability (only erdos-renyi has one)");
  const bool takes_degree = spec.kind == GraphKind::random_regular ||
                            spec.kind == GraphKind::hyper_hypercube || spec.kind == GraphKind::simple_base ||
                            spec.kind == GraphKind::base;
  reject_option(spec.degree != 0 && !takes_degree, GraphInput::degree, kind,
                "degree (only random-regular, hyper-hypercube, simple-base and base have one)");
  const bool takes_weights = spec.kind == GraphKind::star || spec.kind == GraphKind::erdos_renyi;
  reject_option(
      spec.weights != WeightScheme::automatic && !takes_weights, GraphInput::weights, kind,
      "weight choice (only star and erdos-renyi have one; the others are regular or fixed families)");
  switch (spec.kind) {
    case GraphKind::ring:
      return GraphSequence(ring(spec.nodes));
    case GraphKind::torus:
      return GraphSequence(torus(spec.nodes, spec.torus_rows, spec.torus_cols));
    case GraphKind::hypercube:
      return GraphSequence(hypercube(spec.nodes));
    case GraphKind::complete:
      return GraphSequence(complete(spec.nodes));
    case GraphKind::star:
      return GraphSequence(star(spec.nodes, spec.weights));
    case GraphKind::exponential:
      return GraphSequence(exponential(spec.nodes));
    case GraphKind::one_peer_exponential:
      return one_peer_exponential(spec.nodes);
    case GraphKind::random_regular:
      return GraphSequence(random_regular(spec.nodes, spec.degree, spec.seed));
    case GraphKind::erdos_renyi:
      return GraphSequence(erdos_renyi(spec.nodes, spec.probability, spec.seed, spec.weights));
    case GraphKind::hyper_hypercube:
      return hyper_hypercube(spec.nodes, peer_degree(spec));
    case GraphKind::simple_base:
      return simple_base_graph(spec.nodes, peer_degree(spec));
    case GraphKind::base:
      return base_graph(spec.nodes, peer_degree(spec));
  }
  throw GraphError(GraphInput::kind, "unhandled kind");
}

}  // namespace dbench::topology
