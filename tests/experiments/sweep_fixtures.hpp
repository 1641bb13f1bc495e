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

/// A small sweep file named "mine": 4 workers of the MLP for 4 iterations, timed as the MLP, over one axis of
/// algorithms (`algorithms` is the TOML list's inside, e.g. "\"ring\", \"centralized\"").
inline std::string small_sweep(const std::string& algorithms) {
  return "name = \"mine\"\n[set]\n\"train.iterations\" = 4\n\"train.eval_every\" = 2\n"
         "\"train.eval_samples\" = 200\n\"train.replica_eval_samples\" = 32\n\"train.workers\" = 4\n"
         "\"platform.timing_model\" = \"mlp\"\n[grid]\nalgorithm = [" +
         algorithms + "]\n";
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
