#include "topology/export.hpp"

#include <fmt/format.h>
#include <fmt/ostream.h>

#include "topology/graph_analysis.hpp"

namespace dbench::topology {
namespace {

struct Arc {
  int from;
  int to;
  double weight;
  int round;
};

// Every edge once: for symmetric rounds only i < j, since W_ij = W_ji.
template <typename Visit>
void for_each_arc(const GraphSequence& sequence, bool undirected, Visit&& visit) {
  int round = 0;
  for (const auto& g : sequence.rounds()) {
    for (int i = 0; i < g.nodes(); ++i) {
      for (const auto& e : g.row(i)) {
        if (e.from == i || e.weight == 0.0 || (undirected && e.from > i)) {
          continue;
        }
        visit(Arc{e.from, i, e.weight, round});
      }
    }
    ++round;
  }
}

}  // namespace

void write_dot(std::ostream& out, const GraphSequence& sequence) {
  const bool undirected = check_mixing(sequence).symmetric;
  const bool tagged = sequence.time_varying();
  fmt::print(out, "// {}: {} nodes, period {}; edge weight = W[receiver][sender]\n", sequence.kind(),
             sequence.nodes(), sequence.period());
  fmt::print(out, "{} \"{}\" {{\n", undirected ? "graph" : "digraph", sequence.kind());
  const auto& first = sequence.rounds().front();
  for (int i = 0; i < sequence.nodes(); ++i) {
    if (tagged) {
      fmt::print(out, "  {};\n", i);
    } else {
      fmt::print(out, "  {} [self_weight={}];\n", i, first.weight(i, i));
    }
  }
  const auto* link = undirected ? "--" : "->";
  for_each_arc(sequence, undirected, [&](const Arc& a) {
    if (tagged) {
      fmt::print(out, "  {} {} {} [weight={}, round={}, label=\"{}\"];\n", a.from, link, a.to, a.weight,
                 a.round, a.round);
    } else {
      fmt::print(out, "  {} {} {} [weight={}];\n", a.from, link, a.to, a.weight);
    }
  });
  fmt::print(out, "}}\n");
}

void write_graphml(std::ostream& out, const GraphSequence& sequence) {
  const bool undirected = check_mixing(sequence).symmetric;
  const bool tagged = sequence.time_varying();
  fmt::print(out,
             "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
             "<graphml xmlns=\"http://graphml.graphdrawing.org/xmlns\">\n"
             "  <key id=\"self_weight\" for=\"node\" attr.name=\"self_weight\" attr.type=\"double\"/>\n"
             "  <key id=\"weight\" for=\"edge\" attr.name=\"weight\" attr.type=\"double\"/>\n"
             "  <key id=\"round\" for=\"edge\" attr.name=\"round\" attr.type=\"int\"/>\n"
             "  <graph id=\"{}\" edgedefault=\"{}\">\n",
             sequence.kind(), undirected ? "undirected" : "directed");
  const auto& first = sequence.rounds().front();
  for (int i = 0; i < sequence.nodes(); ++i) {
    if (tagged) {
      fmt::print(out, "    <node id=\"n{}\"/>\n", i);
    } else {
      fmt::print(out, "    <node id=\"n{}\"><data key=\"self_weight\">{}</data></node>\n", i,
                 first.weight(i, i));
    }
  }
  for_each_arc(sequence, undirected, [&](const Arc& a) {
    fmt::print(out,
               "    <edge source=\"n{}\" target=\"n{}\"><data key=\"weight\">{}</data><data "
               "key=\"round\">{}</data></edge>\n",
               a.from, a.to, a.weight, a.round);
  });
  fmt::print(out, "  </graph>\n</graphml>\n");
}

}  // namespace dbench::topology
