// DOT and GraphML export.
#include <doctest/doctest.h>

#include <sstream>
#include <string>

#include "topology/export.hpp"
#include "topology/generators.hpp"

namespace topo = dbench::topology;

namespace {

int count(const std::string& text, const std::string& what) {
  int n = 0;
  for (auto pos = text.find(what); pos != std::string::npos; pos = text.find(what, pos + 1)) {
    ++n;
  }
  return n;
}

}  // namespace

TEST_CASE("topology::export: an undirected graph lists each edge once") {
  std::ostringstream dot;
  topo::write_dot(dot, topo::GraphSequence(topo::ring(5)));
  CHECK(dot.str().find("graph \"ring\" {") != std::string::npos);
  CHECK(count(dot.str(), " -- ") == 5);
  CHECK(count(dot.str(), "self_weight=") == 5);
  std::ostringstream graphml;
  topo::write_graphml(graphml, topo::GraphSequence(topo::ring(5)));
  CHECK(count(graphml.str(), "<edge ") == 5);
  CHECK(graphml.str().find("edgedefault=\"undirected\"") != std::string::npos);
}

TEST_CASE("topology::export: a directed graph lists arcs, a time-varying family tags every round") {
  std::ostringstream dot;
  topo::write_dot(dot, topo::GraphSequence(topo::exponential(8)));
  CHECK(dot.str().find("digraph") != std::string::npos);
  CHECK(count(dot.str(), " -> ") == 8 * 3);
  std::ostringstream graphml;
  topo::write_graphml(graphml, topo::one_peer_exponential(8));
  CHECK(count(graphml.str(), "<edge ") == 8 * 3);
  CHECK(graphml.str().find("<data key=\"round\">2</data>") != std::string::npos);
  CHECK(graphml.str().find("edgedefault=\"directed\"") != std::string::npos);
}
