// graphs.csv, which `dbench graphs` writes: one record and one column table (results/columns.hpp).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "results/columns.hpp"

namespace dbench::results {

/// One row of graphs.csv: one communication graph (or time-varying family) at a number of nodes.
struct GraphsRow {
  std::string kind;  ///< the graph's label
  std::int64_t nodes = 0;
  std::int64_t period = 1;               ///< rounds per period (1: static)
  std::int64_t edges = 0;                ///< directed edges: messages per round
  std::int64_t undirected_edges = 0;     ///< node pairs joined either way
  std::int64_t max_degree = 0;           ///< out-neighbours of the busiest node
  std::optional<std::int64_t> diameter;  ///< empty ("inf") when not strongly connected
  double spectral_gap = 0.0;             ///< written with 10 significant digits
  bool exact_consensus = false;          ///< time-varying: one period averages exactly
};

/// graphs.csv's columns.
const ColumnTable<GraphsRow>& graphs_columns();

/// graphs.csv of `rows`.
std::string graphs_csv(std::span<const GraphsRow> rows);

/// Reads graphs.csv (`source` names it in errors); throws CsvError.
std::vector<GraphsRow> read_graphs_csv(std::string_view text, std::string_view source);

}  // namespace dbench::results
