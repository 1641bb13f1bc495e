// The one number parser and formatter of results files.
#include "results/number.hpp"

#include <fmt/core.h>

#include <charconv>
#include <cmath>
#include <system_error>

namespace dbench::results {

std::optional<double> parse_number(std::string_view text) {
  double value = 0.0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || error != std::errc() || end != text.data() + text.size() || !std::isfinite(value)) {
    return std::nullopt;
  }
  return value;
}

std::string format_number(double value) {
  return std::isnan(value) ? std::string() : fmt::format("{}", value);
}

std::string format_measure(double value) {
  return fmt::format("{}", value);
}

}  // namespace dbench::results
