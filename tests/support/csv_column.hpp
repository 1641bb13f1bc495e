// One column of a CSV text by header name, for tests that check a written file's cells: read with results'
// tokenizer and number parser (NaN for an empty or missing field). Throws std::invalid_argument naming a
// missing column or a cell that is not a number.
#pragma once

#include <limits>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "results/csv.hpp"
#include "results/number.hpp"

namespace dbench::testing {

inline std::vector<double> csv_column(std::string_view csv, std::string_view column) {
  results::CsvTable table;
  try {
    table = results::parse_csv(csv, "csv");
  } catch (const results::CsvError& e) {
    throw std::invalid_argument(e.what());
  }
  const int index = table.column(column);
  if (index < 0) {
    throw std::invalid_argument("csv: no column '" + std::string(column) + "'");
  }
  std::vector<double> values;
  for (const auto& row : table.rows) {
    const std::string& field = row[static_cast<std::size_t>(index)];
    if (field.empty()) {
      values.push_back(std::numeric_limits<double>::quiet_NaN());
    } else if (const auto value = results::parse_number(field)) {
      values.push_back(*value);
    } else {
      throw std::invalid_argument("csv: column '" + std::string(column) + "' holds '" + field + "'");
    }
  }
  return values;
}

}  // namespace dbench::testing
