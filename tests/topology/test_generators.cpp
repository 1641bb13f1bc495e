// Generators: the edges each kind promises, and bad inputs rejected with the argument named.
#include <doctest/doctest.h>

#include <set>
#include <string>
#include <utility>

#include "support/approx.hpp"
#include "tests/topology/helpers.hpp"
#include "topology/generators.hpp"

namespace topo = dbench::topology;
using topo::testing::build;
using topo::testing::graph_error_of;

namespace {

std::set<std::pair<int, int>> undirected_edges(const topo::Graph& g) {
  std::set<std::pair<int, int>> edges;
  for (int i = 0; i < g.nodes(); ++i) {
    for (const auto& e : g.row(i)) {
      if (e.from != i) {
        edges.emplace(std::min(i, e.from), std::max(i, e.from));
      }
    }
  }
  return edges;
}

bool regular(const topo::Graph& g, int d) {
  for (int i = 0; i < g.nodes(); ++i) {
    if (static_cast<int>(g.row(i).size()) != d + 1) {
      return false;
    }
  }
  return true;
}

}  // namespace

TEST_CASE("topology::make_graph: n = 0 and n = 1 are rejected for every kind") {
  for (const auto kind : topo::known_graph_kinds()) {
    for (const int n : {0, 1, -3}) {
      CAPTURE(kind);
      CAPTURE(n);
      const auto message = graph_error_of([&] { build(kind, n, 0, kind == "erdos-renyi" ? 0.5 : 0.0); });
      CHECK(message.starts_with("nodes: "));
      CHECK(message.find("at least 2 nodes, got " + std::to_string(n)) != std::string::npos);
    }
  }
}

TEST_CASE("topology::make_graph: builds every kind at n = 2") {
  for (const auto kind : topo::known_graph_kinds()) {
    CAPTURE(kind);
    const int degree = kind == "random-regular" ? 1 : 0;
    const auto s = build(kind, 2, degree, kind == "erdos-renyi" ? 1.0 : 0.0);
    CHECK(s.nodes() == 2);
  }
}

TEST_CASE("topology::parse_graph_kind: an unknown kind names itself and the known ones") {
  const auto message = graph_error_of([] { topo::parse_graph_kind("rnig"); });
  CHECK(message.starts_with("kind: unknown kind 'rnig' (known: ring, torus, hypercube, complete, star, "));
  CHECK(message.ends_with(", base)"));
  for (const auto kind : topo::known_graph_kinds()) {
    CHECK(topo::graph_kind_name(topo::parse_graph_kind(kind)) == kind);
  }
}

TEST_CASE("topology::make_graph: an option the kind does not take is rejected") {
  topo::GraphSpec spec;
  spec.kind = topo::GraphKind::ring;
  spec.nodes = 8;
  spec.degree = 3;
  CHECK(graph_error_of([&] { topo::make_graph(spec); }).starts_with("degree: kind 'ring' takes no degree"));
  spec.degree = 0;
  spec.torus_rows = 2;
  spec.torus_cols = 4;
  CHECK(graph_error_of([&] { topo::make_graph(spec); }).starts_with("shape: "));
  spec.torus_rows = spec.torus_cols = 0;
  spec.probability = 0.5;
  CHECK(graph_error_of([&] { topo::make_graph(spec); }).starts_with("probability: "));
  spec.probability = 0.0;
  spec.weights = topo::WeightScheme::uniform;
  CHECK(graph_error_of([&] { topo::make_graph(spec); }).starts_with("weights: "));
}

TEST_CASE("topology::ring: i -- i+1 mod n") {
  const auto g = topo::ring(7);
  CHECK(regular(g, 2));
  const auto edges = undirected_edges(g);
  CHECK(edges.size() == 7);
  for (int i = 0; i < 7; ++i) {
    CHECK(edges.contains({std::min(i, (i + 1) % 7), std::max(i, (i + 1) % 7)}));
  }
  CHECK(undirected_edges(topo::ring(2)).size() == 1);
}

TEST_CASE("topology::torus: picks the most square shape") {
  CHECK(topo::most_square_shape(1008) == std::pair(28, 36));
  CHECK(topo::most_square_shape(16) == std::pair(4, 4));
  CHECK(topo::most_square_shape(13) == std::pair(1, 13));
  const auto g = topo::torus(1008);
  CHECK(regular(g, 4));
  CHECK(undirected_edges(g).size() == 2 * 1008);
  // Node (r, c) = r * 36 + c: right and down neighbours wrap around.
  CHECK(g.weight(35, 0) > 0.0);
  CHECK(g.weight(0, 27 * 36) > 0.0);
}

TEST_CASE("topology::torus: sides of 1 and 2 do not repeat edges") {
  CHECK(regular(topo::torus(8, 2, 4), 3));
  CHECK(regular(topo::torus(4, 2, 2), 2));
  CHECK(regular(topo::torus(5, 1, 5), 2));
}

TEST_CASE("topology::torus: rejects a shape that does not match n") {
  CHECK(graph_error_of([] { topo::torus(16, 3, 5); }) == "shape: 3x5 is 15 nodes, but the graph has 16");
  CHECK(graph_error_of([] { topo::torus(16, 0, 16); }).starts_with("shape: "));
  CHECK(graph_error_of([] { topo::parse_torus_shape("4by4"); }).starts_with("shape: expected ROWSxCOLS"));
  CHECK(graph_error_of([] { topo::parse_torus_shape("0x4"); }).starts_with("shape: "));
  CHECK(graph_error_of([] { topo::parse_torus_shape("4x"); }).starts_with("shape: "));
  CHECK(topo::parse_torus_shape("24x42") == std::pair(24, 42));
}

TEST_CASE("topology::hypercube: rejects n that is not a power of two") {
  CHECK(graph_error_of([] { topo::hypercube(1008); }) == "nodes: a hypercube needs a power of two, got 1008");
  const auto g = topo::hypercube(64);
  CHECK(regular(g, 6));
  CHECK(g.weight(5, 5 ^ 16) > 0.0);
  CHECK(g.weight(5, 6) == 0.0);
}

TEST_CASE("topology::complete and star: the edges they promise") {
  CHECK(undirected_edges(topo::complete(9)).size() == 36);
  const auto star = undirected_edges(topo::star(9));
  CHECK(star.size() == 8);
  for (const auto& [u, v] : star) {
    CHECK(u == 0);
  }
}

TEST_CASE("topology::exponential: row i holds i and i - 2^k for k < ceil(log2 n)") {
  for (const int n : {2, 3, 5, 16, 1008, 1024}) {
    CAPTURE(n);
    const auto g = topo::exponential(n);
    int tau = 0;
    while ((1 << tau) < n) {
      ++tau;
    }
    for (const int i : {0, 1, n - 1}) {
      const auto row = g.row(i);
      CHECK(static_cast<int>(row.size()) == tau + 1);
      CHECK(g.weight(i, i) == dbench::testing::approx(1.0 / (tau + 1)));
      for (int k = 0; k < tau; ++k) {
        CHECK(g.weight(i, ((i - (1 << k)) % n + n) % n) == dbench::testing::approx(1.0 / (tau + 1)));
      }
    }
  }
}

TEST_CASE("topology::one-peer-exponential: round m pairs i with i - 2^m, weight 1/2") {
  const auto s = topo::one_peer_exponential(1008);
  REQUIRE(s.period() == 10);
  for (int m = 0; m < 10; ++m) {
    const auto& g = s.at(m + 10);  // iteration t uses round t mod period
    CHECK(g.weight(3, 3) == 0.5);
    CHECK(g.weight(3, ((3 - (1 << m)) % 1008 + 1008) % 1008) == 0.5);
    CHECK(g.row(3).size() == 2);
  }
}

TEST_CASE("topology::random-regular: d-regular, connected, reproducible from its seed") {
  for (const auto& [n, d] :
       std::vector<std::pair<int, int>>{{10, 3}, {1008, 2}, {1008, 4}, {101, 60}, {12, 11}}) {
    CAPTURE(n);
    CAPTURE(d);
    const auto a = topo::random_regular(n, d, 7);
    const auto b = topo::random_regular(n, d, 7);
    const auto c = topo::random_regular(n, d, 8);
    CHECK(regular(a, d));
    CHECK(undirected_edges(a) == undirected_edges(b));
    if (d < n - 1) {
      CHECK(undirected_edges(a) != undirected_edges(c));
    }
  }
}

TEST_CASE("topology::random-regular: rejects degree >= n, odd n*d and a matching") {
  CHECK(graph_error_of([] { topo::random_regular(10, 10, 1); }) ==
        "degree: a random regular graph on 10 nodes needs a degree d in [1, 9], got 10");
  CHECK(graph_error_of([] { topo::random_regular(9, 3, 1); }) ==
        "degree: a d-regular graph needs n*d even, got 9*3");
  CHECK(graph_error_of([] { topo::random_regular(10, 1, 1); }).starts_with("degree: a 1-regular graph"));
  CHECK(graph_error_of([] { topo::random_regular(10, 0, 1); }).starts_with("degree: "));
}

TEST_CASE("topology::erdos-renyi: seeded, connected, about p n(n-1)/2 edges") {
  const auto a = topo::erdos_renyi(400, 0.05, 3);
  const auto b = topo::erdos_renyi(400, 0.05, 3);
  CHECK(undirected_edges(a) == undirected_edges(b));
  const double expected = 0.05 * 400 * 399 / 2;  // 3990, standard deviation ~61
  CHECK(std::abs(static_cast<double>(undirected_edges(a).size()) - expected) < 5 * 61);
  CHECK(undirected_edges(topo::erdos_renyi(30, 1.0, 1)).size() == 435);
}

TEST_CASE("topology::erdos-renyi: rejects p <= 0 and p > 1, and gives up on disconnected draws") {
  CHECK(graph_error_of([] { topo::erdos_renyi(10, 0.0, 1); }).starts_with("probability: "));
  CHECK(graph_error_of([] { topo::erdos_renyi(10, 1.5, 1); }).starts_with("probability: "));
  CHECK(graph_error_of([] {
          topo::erdos_renyi(1000, 0.0005, 1);
        }).starts_with("probability: G(1000, 0.0005) came out disconnected in 100 draws"));
}

TEST_CASE("topology::make_graph: graphs too large to hold are refused before allocating") {
  CHECK(
      graph_error_of([] { topo::complete(100000); }).starts_with("nodes: a complete graph on 100000 nodes"));
}
