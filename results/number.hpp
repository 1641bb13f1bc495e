// The one number format of results files, both directions: every CSV cell and summary value is written by
// format_number and read back by parse_number.
#pragma once

#include <limits>
#include <optional>
#include <string>
#include <string_view>

namespace dbench::results {

/// Quiet NaN, the value of a number that a results file leaves empty (a pending run, a target never reached).
inline constexpr double kEmpty = std::numeric_limits<double>::quiet_NaN();

/// The whole of `text` as a finite number ("7", "-2.5", "1e-3"); nullopt for anything else: an empty text,
/// trailing or leading garbage ("1.5x", " 1"), "nan", "inf", hexadecimal.
std::optional<double> parse_number(std::string_view text);

/// The shortest text that reads back to the same double, so that equal runs give byte-identical files; empty
/// for NaN (an unknown value).
std::string format_number(double value);

/// format_number's text for a finite value, and "inf", "-inf" or "nan" for the others (a relative error
/// against zero).
std::string format_measure(double value);

}  // namespace dbench::results
