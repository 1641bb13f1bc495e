#include "topology/graph.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <utility>

namespace dbench::topology {

std::string_view graph_input_name(GraphInput input) noexcept {
  switch (input) {
    case GraphInput::nodes:
      return "nodes";
    case GraphInput::kind:
      return "kind";
    case GraphInput::shape:
      return "shape";
    case GraphInput::degree:
      return "degree";
    case GraphInput::probability:
      return "probability";
    case GraphInput::weights:
      return "weights";
    case GraphInput::graph:
      return "graph";
    case GraphInput::period:
      return "period";
    case GraphInput::stage_starts:
      return "stage starts";
    case GraphInput::ladder:
      return "ladder";
    case GraphInput::band:
      return "band";
    case GraphInput::ada_timing:
      return "ada timing";
    case GraphInput::start_rung:
      return "start rung";
  }
  return "graph";
}

GraphError::GraphError(GraphInput input, const std::string& reason)
    : std::invalid_argument(fmt::format("{}: {}", graph_input_name(input), reason)),
      input_(input),
      reason_(reason) {}

Graph::Graph(std::string name, std::vector<std::vector<MixingEntry>> rows, bool vertex_transitive)
    : name_(std::move(name)), vertex_transitive_(vertex_transitive) {
  const auto n = rows.size();
  if (n == 0) {
    throw GraphError(GraphInput::nodes, "a graph needs at least one node");
  }
  std::size_t total = 0;
  for (const auto& r : rows) {
    total += r.size();
  }
  offsets_.reserve(n + 1);
  entries_.reserve(total);
  offsets_.push_back(0);
  for (std::size_t i = 0; i < n; ++i) {
    auto& r = rows[i];
    std::sort(r.begin(), r.end(), [](const MixingEntry& a, const MixingEntry& b) { return a.from < b.from; });
    for (std::size_t k = 0; k < r.size(); ++k) {
      const auto& e = r[k];
      if (e.from < 0 || static_cast<std::size_t>(e.from) >= n) {
        throw GraphError(GraphInput::graph,
                         fmt::format("{}: row {} names node {}, outside [0, {})", name_, i, e.from, n));
      }
      if (k > 0 && r[k - 1].from == e.from) {
        throw GraphError(GraphInput::graph, fmt::format("{}: row {} lists node {} twice", name_, i, e.from));
      }
      if (!std::isfinite(e.weight)) {
        throw GraphError(GraphInput::graph, fmt::format("{}: W[{}][{}] is not finite", name_, i, e.from));
      }
      entries_.push_back(e);
    }
    offsets_.push_back(static_cast<std::int64_t>(entries_.size()));
    // Rows can be large (complete graphs): free each one as soon as it is copied.
    std::vector<MixingEntry>().swap(r);
  }
}

double Graph::weight(int i, int j) const noexcept {
  const auto r = row(i);
  const auto it =
      std::lower_bound(r.begin(), r.end(), j, [](const MixingEntry& e, int from) { return e.from < from; });
  return it != r.end() && it->from == j ? it->weight : 0.0;
}

namespace {

void check_sizes(const Graph& g, std::size_t x, std::size_t y) {
  if (x != static_cast<std::size_t>(g.nodes()) || y != x) {
    throw GraphError(GraphInput::graph, fmt::format("{}: mixing needs vectors of {} values, got {} and {}",
                                                    g.name(), g.nodes(), x, y));
  }
}

}  // namespace

void Graph::mix(std::span<const double> x, std::span<double> y) const {
  check_sizes(*this, x.size(), y.size());
  const int n = nodes();
  for (int i = 0; i < n; ++i) {
    double sum = 0.0;
    for (const auto& e : row(i)) {
      sum += e.weight * x[static_cast<std::size_t>(e.from)];
    }
    y[static_cast<std::size_t>(i)] = sum;
  }
}

void Graph::mix_transposed(std::span<const double> x, std::span<double> y) const {
  check_sizes(*this, x.size(), y.size());
  std::fill(y.begin(), y.end(), 0.0);
  const int n = nodes();
  for (int i = 0; i < n; ++i) {
    const double xi = x[static_cast<std::size_t>(i)];
    for (const auto& e : row(i)) {
      y[static_cast<std::size_t>(e.from)] += e.weight * xi;
    }
  }
}

GraphSequence::GraphSequence(Graph graph)
    : kind_(graph.name()), union_vertex_transitive_(graph.vertex_transitive()) {
  rounds_.push_back(std::move(graph));
}

GraphSequence::GraphSequence(std::string kind, std::vector<Graph> rounds, bool union_vertex_transitive)
    : kind_(std::move(kind)), rounds_(std::move(rounds)), union_vertex_transitive_(union_vertex_transitive) {
  if (rounds_.empty()) {
    throw GraphError(GraphInput::graph, fmt::format("{}: a graph sequence needs at least one round", kind_));
  }
  for (const auto& g : rounds_) {
    if (g.nodes() != rounds_.front().nodes()) {
      throw GraphError(GraphInput::graph,
                       fmt::format("{}: rounds on {} and {} nodes cannot form one sequence", kind_,
                                   rounds_.front().nodes(), g.nodes()));
    }
  }
}

void GraphSequence::mix_period(std::span<double> x) const {
  std::vector<double> scratch(x.size());
  for (const auto& g : rounds_) {
    g.mix(x, scratch);
    std::copy(scratch.begin(), scratch.end(), x.begin());
  }
}

}  // namespace dbench::topology
