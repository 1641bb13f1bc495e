// Base-(k+1) and hyper-hypercube graphs: exact consensus in their period with at most k peers per round.
#include <doctest/doctest.h>

#include "support/approx.hpp"
#include "tests/topology/helpers.hpp"
#include "topology/base_graph.hpp"
#include "topology/graph_analysis.hpp"

namespace topo = dbench::topology;
using topo::testing::consensus_error_after_period;
using topo::testing::graph_error_of;
using topo::testing::max_round_degree;

TEST_CASE("topology::base: exact consensus at n = 1008 for k = 1, 2, 3 with at most k peers per round") {
  for (int k = 1; k <= 4; ++k) {
    CAPTURE(k);
    const auto s = topo::base_graph(1008, k);
    MESSAGE("Base-" << k + 1 << " graph, n = 1008: " << s.period() << " rounds to exact consensus");
    CHECK(max_round_degree(s) <= k);
    for (std::uint64_t seed = 1; seed <= 3; ++seed) {
      CHECK(consensus_error_after_period(s, seed) < 1e-12);
    }
    const auto checks = topo::check_mixing(s);
    CHECK(checks.symmetric);
    CHECK(checks.row_stochastic);
    CHECK(checks.column_stochastic);
    const auto stats = topo::analyze(s);
    CHECK(stats.exact_consensus);
    CHECK(stats.spectral_gap == 1.0);
    CHECK(stats.in_degree.max <= k);
  }
}

TEST_CASE("topology::base: the period at n = 1008 (16 blocks of 63 nodes, then hypercubes of 16)") {
  // 63 = 32 + 16 + 8 + 4 + 2 + 1: a simple Base-2 graph on 63 nodes takes 5 (hypercube on 32) + 1 (first
  // pairing) + 5 (re-averaging the 32) = 11 rounds, then the 16-node hypercubes 4 more. The simple graph on
  // all 1008 = 512 + 256 + ... + 16 nodes would take 9 + 1 + 9 = 19.
  CHECK(topo::base_graph(1008, 1).period() == 15);
  CHECK(topo::simple_base_graph(1008, 1).period() == 19);
  CHECK(topo::base_graph(1024, 1).period() == 10);
}

TEST_CASE("topology::base: exact for every n up to 130 and k up to 4") {
  for (int k = 1; k <= 4; ++k) {
    for (int n = k + 1; n <= 130; ++n) {
      CAPTURE(k);
      CAPTURE(n);
      for (const auto& s : {topo::base_graph(n, k), topo::simple_base_graph(n, k)}) {
        CHECK(max_round_degree(s) <= k);
        CHECK(consensus_error_after_period(s, static_cast<std::uint64_t>(n)) < 1e-12);
        CHECK(topo::check_mixing(s).column_stochastic);
      }
      CHECK(topo::base_graph(n, k).period() <= topo::simple_base_graph(n, k).period());
    }
  }
}

TEST_CASE("topology::simple-base: n = 5, k = 1 is two hypercube rounds, one pairing, two hypercube rounds") {
  const auto s = topo::simple_base_graph(5, 1);
  REQUIRE(s.period() == 5);
  const auto& pairing = s.rounds()[2];
  CHECK(pairing.weight(4, 0) == dbench::testing::approx(4.0 / 5));
  CHECK(pairing.weight(4, 4) == dbench::testing::approx(1.0 / 5));
  CHECK(pairing.weight(0, 0) == dbench::testing::approx(1.0 / 5));
  CHECK(pairing.weight(1, 1) == 1.0);
}

TEST_CASE("topology::hyper-hypercube: exact in as many rounds as factors, rejects large prime factors") {
  const auto s = topo::hyper_hypercube(6, 2);
  REQUIRE(s.period() == 2);
  CHECK(s.rounds()[0].weight(0, 1) == dbench::testing::approx(1.0 / 3));
  CHECK(consensus_error_after_period(s, 1) < 1e-12);
  CHECK(topo::hyper_hypercube(1296, 5).period() == 4);  // 6^4
  CHECK(topo::hyper_hypercube(1024, 1).period() == 10);
  CHECK(consensus_error_after_period(topo::hyper_hypercube(1296, 2), 4) < 1e-12);
  CHECK(graph_error_of([] { topo::hyper_hypercube(1008, 2); })
            .starts_with("nodes: a 2-peer hyper-hypercube needs n without prime factors above 3, got 1008 "
                         "(factor 7)"));
  CHECK(graph_error_of([] { topo::base_graph(10, 10); }).starts_with("degree: "));
  CHECK(graph_error_of([] { topo::base_graph(10, 0); }).starts_with("degree: "));
  CHECK(graph_error_of([] { topo::base_graph(1, 1); }).starts_with("nodes: "));
}
