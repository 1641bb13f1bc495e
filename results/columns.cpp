// The header check and cell readers behind every column table.
#include "results/columns.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace dbench::results {

std::optional<double> read_number_cell(std::string_view field, const CellPlace& place) {
  if (field.empty()) {
    return std::nullopt;
  }
  if (const auto value = parse_number(field)) {
    return value;
  }
  throw CsvError(fmt::format("{}: line {}: column '{}' holds '{}', which is not a number", place.source,
                             place.line, place.column, field));
}

double read_measure_cell(std::string_view field, const CellPlace& place) {
  if (field == "inf") {
    return std::numeric_limits<double>::infinity();
  }
  if (field == "-inf") {
    return -std::numeric_limits<double>::infinity();
  }
  if (field == "nan") {
    return kEmpty;
  }
  const auto value = read_number_cell(field, place);
  if (!value) {
    throw CsvError(fmt::format("{}: line {}: column '{}' is empty", place.source, place.line, place.column));
  }
  return *value;
}

std::int64_t read_count_cell(std::string_view field, const CellPlace& place) {
  const auto value = parse_number(field);
  // Integers up to 2^53 are exact in a double, far beyond any iteration or worker count.
  if (!value || *value != std::floor(*value) || std::fabs(*value) > 9007199254740992.0) {
    throw CsvError(fmt::format("{}: line {}: column '{}' holds '{}', which is not a whole number",
                               place.source, place.line, place.column, field));
  }
  return static_cast<std::int64_t>(*value);
}

namespace detail {

HeaderPlan plan_header(const std::vector<std::string>& header, std::span<const std::string_view> fixed,
                       std::span<const char> required, std::span<const std::string_view> prefixes,
                       bool grouped, std::string_view source) {
  HeaderPlan plan;
  std::string unknown;  // a missing column says more about a renamed one than its new name does
  plan.fixed.assign(fixed.size(), -1);
  for (std::size_t h = 0; h < header.size(); ++h) {
    const std::string name = read_text_field(header[h]);
    const auto known = std::find(fixed.begin(), fixed.end(), name);
    if (known != fixed.end()) {
      int& at = plan.fixed[static_cast<std::size_t>(known - fixed.begin())];
      if (at >= 0) {
        throw CsvError(fmt::format("{}: the column '{}' appears twice", source, name));
      }
      at = static_cast<int>(h);
      continue;
    }
    // The longest prefix wins, so that an empty prefix (a column per key) takes only what no other does.
    std::size_t best = prefixes.size();
    for (std::size_t p = 0; grouped && p < prefixes.size(); ++p) {
      if (name.starts_with(prefixes[p]) && name.size() > prefixes[p].size() &&
          (best == prefixes.size() || prefixes[p].size() > prefixes[best].size())) {
        best = p;
      }
    }
    if (best == prefixes.size()) {
      unknown = unknown.empty() ? name : unknown;
      continue;
    }
    const std::string key = name.substr(prefixes[best].size());
    auto k = std::find(plan.keys.begin(), plan.keys.end(), key);
    if (k == plan.keys.end()) {
      plan.keys.push_back(key);
      plan.grouped.emplace_back(prefixes.size(), -1);
      k = plan.keys.end() - 1;
    }
    int& at = plan.grouped[static_cast<std::size_t>(k - plan.keys.begin())][best];
    if (at >= 0) {
      throw CsvError(fmt::format("{}: the column '{}' appears twice", source, name));
    }
    at = static_cast<int>(h);
  }
  for (std::size_t c = 0; c < fixed.size(); ++c) {
    if (plan.fixed[c] < 0 && required[c] != 0) {
      throw CsvError(fmt::format("{} lacks the column '{}'", source, fixed[c]));
    }
  }
  if (!unknown.empty()) {
    throw CsvError(fmt::format("{}: unknown column '{}'", source, unknown));
  }
  for (std::size_t k = 0; k < plan.keys.size(); ++k) {
    for (std::size_t p = 0; p < prefixes.size(); ++p) {
      if (plan.grouped[k][p] < 0) {
        throw CsvError(fmt::format("{} lacks the column '{}{}'", source, prefixes[p], plan.keys[k]));
      }
    }
  }
  return plan;
}

}  // namespace detail
}  // namespace dbench::results
