// Mixing weights: stochastic, symmetric where they should be, and the values each scheme promises.
#include <doctest/doctest.h>

#include <string_view>
#include <vector>

#include "support/approx.hpp"
#include "tests/topology/helpers.hpp"
#include "topology/generators.hpp"
#include "topology/graph_analysis.hpp"

namespace topo = dbench::topology;
using topo::testing::build;

namespace {

struct Case {
  std::string_view kind;
  std::vector<int> nodes;
  int degree = 0;
  double probability = 0.0;
  bool symmetric = true;
};

}  // namespace

TEST_CASE("topology::weights: every kind is doubly stochastic, symmetric where undirected, and connected") {
  const std::vector<Case> cases = {
      {"ring", {2, 3, 4, 17, 1008}},
      {"torus", {2, 4, 9, 12, 1008}},
      {"hypercube", {2, 8, 1024}},
      {"complete", {2, 5, 64}},
      {"star", {2, 3, 50}},
      {"exponential", {3, 5, 16, 1008}, 0, 0.0, false},
      {"one-peer-exponential", {3, 12, 1024}, 0, 0.0, false},
      {"random-regular", {8, 50, 1008}, 3},
      {"random-regular", {9, 100}, 4},
      {"erdos-renyi", {10, 100, 500}, 0, 0.3},
      {"hyper-hypercube", {3, 12, 1296}, 2},
      {"simple-base", {5, 7, 1008}, 1},
      {"base", {5, 12, 1008}, 3},
  };
  for (const auto& c : cases) {
    for (const int n : c.nodes) {
      CAPTURE(c.kind);
      CAPTURE(n);
      const auto s = build(c.kind, n, c.degree, c.probability);
      const auto checks = topo::check_mixing(s);
      CHECK(checks.nonnegative);
      CHECK(checks.row_stochastic);
      CHECK(checks.column_stochastic);
      CHECK(checks.max_row_error < 1e-12);
      CHECK(checks.max_column_error < 1e-12);
      if (c.symmetric) {
        CHECK(checks.symmetric);
      }
      CHECK(topo::analyze(s).connected);
    }
  }
}

TEST_CASE("topology::weights: the exponential family is not symmetric") {
  CHECK_FALSE(topo::check_mixing(topo::exponential(16)).symmetric);
  CHECK_FALSE(topo::check_mixing(topo::one_peer_exponential(16)).symmetric);
}

TEST_CASE("topology::weights: regular kinds get 1/(d+1)") {
  CHECK(topo::ring(10).weight(3, 4) == dbench::testing::approx(1.0 / 3));
  CHECK(topo::ring(10).weight(3, 3) == dbench::testing::approx(1.0 / 3));
  CHECK(topo::torus(36).weight(7, 7) == dbench::testing::approx(1.0 / 5));
  CHECK(topo::torus(36).weight(7, 8) == dbench::testing::approx(1.0 / 5));
  CHECK(topo::hypercube(32).weight(0, 16) == dbench::testing::approx(1.0 / 6));
  CHECK(topo::complete(7).weight(2, 5) == dbench::testing::approx(1.0 / 7));
  const auto rr = topo::random_regular(40, 5, 1);
  for (const auto& e : rr.row(0)) {
    CHECK(e.weight == dbench::testing::approx(1.0 / 6));
  }
}

TEST_CASE("topology::star: Metropolis-Hastings weights") {
  const int n = 11;
  const auto g = topo::star(n);
  // W_0i = 1 / (1 + max(d_0, d_i)) = 1 / (1 + (n - 1)) = 1/n.
  CHECK(g.weight(0, 0) == dbench::testing::approx(1.0 / n));  // the hub keeps 1 - (n - 1)/n
  for (int i = 1; i < n; ++i) {
    CHECK(g.weight(0, i) == dbench::testing::approx(1.0 / n));
    CHECK(g.weight(i, 0) == dbench::testing::approx(1.0 / n));
    CHECK(g.weight(i, i) == dbench::testing::approx(1.0 - 1.0 / n));
  }
  CHECK(topo::check_mixing(g).symmetric);
  CHECK(topo::check_mixing(g).column_stochastic);
}

TEST_CASE("topology::star: uniform weights are row- but not column-stochastic") {
  const auto g = topo::star(6, topo::WeightScheme::uniform);
  CHECK(g.weight(0, 0) == dbench::testing::approx(1.0 / 6));
  CHECK(g.weight(1, 0) == dbench::testing::approx(0.5));
  const auto checks = topo::check_mixing(g);
  CHECK(checks.row_stochastic);
  CHECK_FALSE(checks.column_stochastic);
  CHECK_FALSE(checks.symmetric);
}

TEST_CASE("topology::weights: Metropolis-Hastings on an irregular graph") {
  // Path 0 - 1 - 2: degrees 1, 2, 1.
  const std::vector<topo::Edge> path = {{0, 1}, {1, 2}};
  const auto g = topo::weighted_graph("path", 3, path, topo::WeightScheme::metropolis_hastings);
  CHECK(g.weight(0, 1) == dbench::testing::approx(1.0 / 3));
  CHECK(g.weight(0, 0) == dbench::testing::approx(2.0 / 3));
  CHECK(g.weight(1, 1) == dbench::testing::approx(1.0 / 3));
  CHECK(topo::check_mixing(g).column_stochastic);
}
