// The one way text reaches gnuplot: as escaped string literals in a script it runs with no shell.
#pragma once

#include <filesystem>
#include <stdexcept>
#include <string>
#include <string_view>

namespace dbench::report {

/// gnuplot is missing or failed; the message names the script and gnuplot's own words.
class GnuplotError : public std::runtime_error {
 public:
  /// Wraps a complete, user-facing message.
  explicit GnuplotError(const std::string& message) : std::runtime_error(message) {}
};

/// `text` as a gnuplot double-quoted string that reads back byte for byte (paths: a newline in a file name
/// stays a newline). Every byte outside letters, digits and ` _.,:/+-=%()#` is written as an octal escape, so
/// no newline, quote, backquote (command substitution) or `@` (macro) is ever seen by gnuplot's parser.
std::string gnuplot_string(std::string_view text);

/// A label (title, axis, key entry) as a gnuplot string: control characters shown as spaces (an SVG may not
/// hold them), everything else exact.
std::string gnuplot_label(std::string_view text);

/// `text` as one field of a gnuplot data file, double-quoted: control characters and double quotes become
/// spaces and single quotes (a data file has no escapes), so a field never splits a row.
std::string gnuplot_data_field(std::string_view text);

/// Runs `gnuplot SCRIPT` (no shell) with its output in `log`; throws GnuplotError when gnuplot is not
/// installed, cannot be started or fails (with the start of its log).
void run_gnuplot(const std::filesystem::path& script, const std::filesystem::path& log);

}  // namespace dbench::report
