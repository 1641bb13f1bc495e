// Parsing CSV text (RFC 4180 quoting); malformed input throws CsvError naming the file and the line.
#include "results/csv.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <utility>

namespace dbench::results {

int CsvTable::column(std::string_view name) const {
  const auto it = std::find(header.begin(), header.end(), name);
  return it == header.end() ? -1 : static_cast<int>(it - header.begin());
}

CsvTable parse_csv(std::string_view text, std::string_view source) {
  std::vector<std::vector<std::string>> records;
  std::vector<std::string> record;
  std::string field;
  bool quoted = false;
  bool any = false;  // whether the current record has begun
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char ch = text[i];
    if (quoted) {
      if (ch == '"' && i + 1 < text.size() && text[i + 1] == '"') {
        field.push_back('"');
        ++i;
      } else if (ch == '"') {
        quoted = false;
      } else {
        field.push_back(ch);
      }
      continue;
    }
    if (ch == '"') {
      quoted = true;
      any = true;
    } else if (ch == ',') {
      record.push_back(std::move(field));
      field.clear();
      any = true;
    } else if (ch == '\n' || ch == '\r') {
      if (ch == '\r' && i + 1 < text.size() && text[i + 1] == '\n') {
        ++i;
      }
      if (any || !field.empty()) {
        record.push_back(std::move(field));
        records.push_back(std::move(record));
      }
      field.clear();
      record.clear();
      any = false;
    } else {
      field.push_back(ch);
      any = true;
    }
  }
  if (quoted) {
    throw CsvError(fmt::format("{}: a quoted field is not closed", source));
  }
  if (any || !field.empty()) {
    record.push_back(std::move(field));
    records.push_back(std::move(record));
  }
  if (records.empty()) {
    throw CsvError(fmt::format("{} is empty (no header line)", source));
  }
  CsvTable table;
  table.header = std::move(records.front());
  for (std::size_t r = 1; r < records.size(); ++r) {
    if (records[r].size() > table.header.size()) {
      throw CsvError(fmt::format("{}: line {} has {} fields, the header {}", source, r + 1, records[r].size(),
                                 table.header.size()));
    }
    records[r].resize(table.header.size());
    table.rows.push_back(std::move(records[r]));
  }
  return table;
}

}  // namespace dbench::results
