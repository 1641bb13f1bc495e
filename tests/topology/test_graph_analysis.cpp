// Statistics: edge counts, degrees and diameters against closed forms.
#include <doctest/doctest.h>

#include "support/approx.hpp"
#include "tests/topology/helpers.hpp"
#include "topology/generators.hpp"
#include "topology/graph_analysis.hpp"

namespace topo = dbench::topology;

TEST_CASE("topology::analyze: ring edges, degrees and diameter") {
  const auto s = topo::analyze(topo::GraphSequence(topo::ring(11)));
  CHECK(s.nodes == 11);
  CHECK(s.period == 1);
  CHECK(s.directed_edges == 22);
  CHECK(s.undirected_edges == 11);
  CHECK_FALSE(s.directed);
  CHECK(s.in_degree.min == 2);
  CHECK(s.in_degree.max == 2);
  CHECK(s.out_degree.mean == dbench::testing::approx(2.0));
  CHECK(s.diameter == 5);
  CHECK(s.diameter_exact);
  CHECK(s.connected);
  CHECK(s.second_eigenvalue_modulus.has_value());
  CHECK_FALSE(s.contraction.has_value());
}

TEST_CASE("topology::analyze: diameters of torus, hypercube, complete, star and exponential") {
  CHECK(topo::analyze(topo::GraphSequence(topo::torus(1008))).diameter == 14 + 18);
  CHECK(topo::analyze(topo::GraphSequence(topo::hypercube(256))).diameter == 8);
  CHECK(topo::analyze(topo::GraphSequence(topo::complete(30))).diameter == 1);
  const auto star = topo::analyze(topo::GraphSequence(topo::star(30)));
  CHECK(star.diameter == 2);
  CHECK(star.in_degree.min == 1);
  CHECK(star.in_degree.max == 29);
  CHECK(star.undirected_edges == 29);
  // n - 1 = 1023 needs all ten hops 2^0..2^9.
  const auto exponential = topo::analyze(topo::GraphSequence(topo::exponential(1024)));
  CHECK(exponential.diameter == 10);
  CHECK(exponential.directed);
  CHECK(exponential.directed_edges == 1024 * 10);
  CHECK(exponential.in_degree.max == 10);
  CHECK(exponential.out_degree.min == 10);
}

TEST_CASE("topology::analyze: time-varying families report per-round edges and the union's diameter") {
  const auto s = topo::analyze(topo::one_peer_exponential(1024));
  CHECK(s.period == 10);
  CHECK(s.directed_edges == 1024);
  CHECK(s.in_degree.max == 1);
  CHECK(s.diameter == 10);
  CHECK(s.connected);
  CHECK_FALSE(s.second_eigenvalue_modulus.has_value());
}

TEST_CASE("topology::analyze: a large graph that is not vertex-transitive gets a diameter lower bound") {
  const auto g = topo::GraphSequence(topo::erdos_renyi(600, 0.02, 4));
  const auto exact = topo::analyze(g);
  topo::AnalyzeOptions cheap;
  cheap.exact_diameter_work = 1000;
  const auto bound = topo::analyze(g, cheap);
  CHECK(exact.diameter_exact);
  CHECK_FALSE(bound.diameter_exact);
  REQUIRE(bound.diameter.has_value());
  CHECK(*bound.diameter <= *exact.diameter);
  CHECK(*bound.diameter >= *exact.diameter - 1);
}

TEST_CASE("topology::analyze: a disconnected graph has no diameter and a zero gap") {
  const std::vector<topo::Edge> two_pairs = {{0, 1}, {2, 3}};
  const auto s = topo::analyze(topo::GraphSequence(
      topo::weighted_graph("two pairs", 4, two_pairs, topo::WeightScheme::metropolis_hastings)));
  CHECK_FALSE(s.diameter.has_value());
  CHECK_FALSE(s.connected);
  CHECK(s.spectral_gap == doctest::Approx(0.0).epsilon(1e-9));
}

TEST_CASE("topology::weighted_graph: loops and repeated edges are rejected") {
  const std::vector<topo::Edge> loop = {{1, 1}};
  CHECK_THROWS_AS(topo::weighted_graph("g", 3, loop, topo::WeightScheme::uniform), topo::GraphError);
  const std::vector<topo::Edge> twice = {{0, 1}, {1, 0}};
  CHECK_THROWS_AS(topo::weighted_graph("g", 3, twice, topo::WeightScheme::uniform), topo::GraphError);
}
