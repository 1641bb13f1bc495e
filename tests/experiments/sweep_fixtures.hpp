// What the sweep tests share: the `dbench sweep` command line, and the error a sweep file is refused with.
#pragma once

#include <fmt/core.h>

#include <filesystem>
#include <string>

#include "experiments/config.hpp"
#include "experiments/sweep.hpp"

namespace dbench::experiments::testing {

/// `dbench sweep SWEEP --out OUT` and further arguments, the paths quoted.
inline std::string sweep_command(const std::filesystem::path& sweep, const std::filesystem::path& out,
                                 const std::string& arguments) {
  return fmt::format("sweep \"{}\" --out \"{}\" {}", sweep.string(), out.string(), arguments);
}

/// The message of the ConfigError that parsing and expanding a sweep file named `bad.toml` in `folder`, with
/// the contents `text`, throws; empty when the file is accepted.
inline std::string sweep_error(const std::string& text, const std::filesystem::path& folder) {
  try {
    expand_sweep(parse_sweep(text, "bad.toml", folder));
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

}  // namespace dbench::experiments::testing
