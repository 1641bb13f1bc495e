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

/// `text` as one CSV field of a file that people open in spreadsheets: quoted where it holds a comma, quote
/// or line break, and, when it would start a formula (=, +, -, @, a tab or a carriage return first, and not
/// a plain number), kept as text by a leading single quote inside quotes ("'=1+1"); a text that starts with a
/// single quote gets one more, so that read_text_field gives back every text as it was.
std::string text_field(std::string_view text);

/// The text that text_field wrote as `field` (after CSV unquoting): one leading single quote removed where
/// text_field added it.
std::string read_text_field(std::string_view field);

/// Parses CSV text; `source` names the file in errors (e.g. a row with more fields than the header). Throws
/// CsvError.
CsvTable parse_csv(std::string_view text, std::string_view source);

}  // namespace dbench::results
