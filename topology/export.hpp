// Graph export for viewers and other tools: Graphviz DOT and GraphML.
#pragma once

#include <ostream>

#include "topology/graph.hpp"

namespace dbench::topology {

/// Writes Graphviz DOT: an undirected `graph` when every round is symmetric (each edge once), a `digraph`
/// with arcs sender -> receiver otherwise; each edge carries its weight W_ij, and for a time-varying family
/// every round's edges are written, tagged with their round. Static graphs also give each node its self
/// weight.
void write_dot(std::ostream& out, const GraphSequence& sequence);

/// Writes GraphML with the same content as write_dot: edge data "weight" and "round", node data "self_weight"
/// for static graphs.
void write_graphml(std::ostream& out, const GraphSequence& sequence);

}  // namespace dbench::topology
