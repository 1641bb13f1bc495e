// graphs.csv's column table: the graph statistics `dbench graphs` tabulates.
#include "results/graphs_csv.hpp"

#include <fmt/core.h>

namespace dbench::results {
namespace {

using R = GraphsRow;

Column<R> diameter_column() {
  return {"diameter", "longest shortest path along arcs; inf when not strongly connected",
          [](const R& r) { return r.diameter ? std::to_string(*r.diameter) : std::string("inf"); },
          [](R& r, std::string_view field, const CellPlace& at) {
            r.diameter =
                field == "inf" ? std::nullopt : std::optional<std::int64_t>(read_count_cell(field, at));
          }};
}

Column<R> gap_column() {
  return {"spectral_gap", "1 - |lambda_2|, or a family's per-iteration effective gap",
          [](const R& r) { return fmt::format("{:.10g}", r.spectral_gap); },
          [](R& r, std::string_view field, const CellPlace& at) {
            const auto value = read_number_cell(field, at);
            if (!value) {
              throw CsvError(fmt::format("{}: line {}: column '{}' is empty", at.source, at.line, at.column));
            }
            r.spectral_gap = *value;
          }};
}

Column<R> exact_column() {
  return {"exact_consensus", "true when one period of a time-varying family averages exactly",
          [](const R& r) { return std::string(r.exact_consensus ? "true" : "false"); },
          [](R& r, std::string_view field, const CellPlace& at) {
            if (field != "true" && field != "false") {
              throw CsvError(fmt::format("{}: line {}: column '{}' holds '{}', not true or false", at.source,
                                         at.line, at.column, field));
            }
            r.exact_consensus = field == "true";
          }};
}

}  // namespace

const ColumnTable<GraphsRow>& graphs_columns() {
  static const ColumnTable<R> kTable{{
      text_column<R>("kind", "the graph's label", &R::kind),
      count_column<R>("nodes", "nodes (workers)", &R::nodes),
      count_column<R>("period", "rounds per period (1: static)", &R::period),
      count_column<R>("edges", "directed edges: messages per round", &R::edges),
      count_column<R>("undirected_edges", "node pairs joined either way", &R::undirected_edges),
      count_column<R>("max_degree", "out-neighbours of the busiest node", &R::max_degree),
      diameter_column(),
      gap_column(),
      exact_column(),
  }};
  return kTable;
}

std::string graphs_csv(std::span<const GraphsRow> rows) {
  return write_csv(graphs_columns(), rows);
}

std::vector<GraphsRow> read_graphs_csv(std::string_view text, std::string_view source) {
  return read_csv(graphs_columns(), text, source).rows;
}

}  // namespace dbench::results
