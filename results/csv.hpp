// The one CSV reader of results files (RFC 4180): summary.csv, metrics.csv, trace.csv and the others are all
// parsed here into a header and rows of text fields.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace dbench::results {

/// CSV input (summary.csv, a run's metrics.csv, ...) that is malformed, lacks a column or holds a field that
/// is not what its column needs; the message names the file, and the line and column where there is one.
class CsvError : public std::runtime_error {
 public:
  /// Wraps a complete, user-facing message.
  explicit CsvError(const std::string& message) : std::runtime_error(message) {}
};

/// A parsed CSV file: a header and rows of fields (RFC 4180 quoting; a trailing newline is optional).
struct CsvTable {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;  ///< each as wide as the header: missing trailing fields empty
  /// Index of the column `name`, or -1.
  int column(std::string_view name) const;
};

/// Parses CSV text; `source` names the file in errors (e.g. a row with more fields than the header). Throws
/// CsvError.
CsvTable parse_csv(std::string_view text, std::string_view source);

}  // namespace dbench::results
