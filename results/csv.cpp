// Parsing CSV text (RFC 4180 quoting); malformed input throws CsvError naming the file and the line.
#include "results/csv.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <charconv>
#include <system_error>
#include <utility>

namespace dbench::results {

int CsvTable::column(std::string_view name) const {
  const auto it = std::find(header.begin(), header.end(), name);
  return it == header.end() ? -1 : static_cast<int>(it - header.begin());
}

namespace {

// Spreadsheets evaluate a cell that starts with one of these as a formula.
bool starts_formula(std::string_view text) {
  return !text.empty() && std::string_view("=+-@\t\r").find(text.front()) != std::string_view::npos;
}

bool plain_number(std::string_view text) {
  double value = 0.0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  return error == std::errc() && end == text.data() + text.size();
}

}  // namespace

std::string text_field(std::string_view text) {
  const bool guard = (starts_formula(text) && !plain_number(text)) || text.starts_with('\'');
  if (!guard && text.find_first_of(",\"\n\r") == std::string_view::npos) {
    return std::string(text);
  }
  std::string out = guard ? "\"'" : "\"";
  for (const char c : text) {
    out += c;
    if (c == '"') {
      out += '"';
    }
  }
  return out + "\"";
}

std::string read_text_field(std::string_view field) {
  if (field.starts_with('\'') && (starts_formula(field.substr(1)) || field.substr(1).starts_with('\''))) {
    field.remove_prefix(1);
  }
  return std::string(field);
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
