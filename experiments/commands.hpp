#pragma once

#include <fmt/core.h>

#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <string>

namespace dbench::experiments {

/// Refuses nan, inf and -inf for a floating-point option ("--peer-timeout: must be a finite number, got
/// nan"); other text is left to the option's own conversion, which names what it expected.
inline CLI::Validator finite_number() {
  return CLI::Validator(
      [](std::string& text) {
        char* end = nullptr;
        const double value = std::strtod(text.c_str(), &end);
        const bool parsed = !text.empty() && end == text.c_str() + text.size();
        return parsed && !std::isfinite(value) ? "must be a finite number, got " + text : std::string();
      },
      "FINITE");
}

/// A number option's range check whose message prints the bounds as they are written ("--peer-timeout: must
/// be >= 0, got -1"), never as CLI11's fixed-point expansion of the largest double. Text that is not a number
/// is left to the option's own conversion.
inline CLI::Validator number_in(double min, double max) {
  const auto shown = [](double bound) { return fmt::format("{}", bound); };
  std::string rule = max == std::numeric_limits<double>::max()
                         ? ">= " + shown(min)
                         : "in [" + shown(min) + ", " + shown(max) + "]";
  return CLI::Validator(
      [min, max, rule](std::string& text) {
        char* end = nullptr;
        const double value = std::strtod(text.c_str(), &end);
        const bool parsed = !text.empty() && end == text.c_str() + text.size();
        return parsed && !(value >= min && value <= max) ? "must be " + rule + ", got " + text
                                                         : std::string();
      },
      rule);
}

/// number_in(min, no upper bound).
inline CLI::Validator number_at_least(double min) {
  return number_in(min, std::numeric_limits<double>::max());
}

/// Refuses an empty path for an option that names a file or folder (`--out ""`), which would otherwise
/// silently mean the option's default.
inline CLI::Validator non_empty_path() {
  return CLI::Validator(
      [](std::string& text) { return text.empty() ? std::string("must name a path, got an empty one") : ""; },
      "PATH");
}

/// Adds `dbench graph`: one graph's statistics as text or JSON, exported as DOT or GraphML.
void add_graph_command(CLI::App& app);

/// Adds `dbench graphs`: the standard graphs side by side at one scale, optionally written to a results dir.
void add_graphs_command(CLI::App& app);

/// Adds `dbench simulate`: the simulator's numerics on virtual replicas, written to a results directory.
void add_simulate_command(CLI::App& app);

/// Adds `dbench train`: the runtime engine on real workers (MPI ranks, or --local N through mpirun).
void add_train_command(CLI::App& app);

/// Adds `dbench config`: validates a config with its overrides and prints or writes the resolved TOML.
void add_config_command(CLI::App& app);

/// Adds `dbench sweep`: a grid of simulator runs, in parallel and resumable, then the analysis and report.
void add_sweep_command(CLI::App& app);

/// Adds `dbench report`: report.html and report.md with plots for a sweep or a single run's directory.
void add_report_command(CLI::App& app);

/// Adds `dbench calibrate`: micro-benchmarks on real workers, fitted into calibration files for the
/// simulator.
void add_calibrate_command(CLI::App& app);

/// Adds `dbench validate`: a config run by the runtime and by the calibrated simulator, compared per case.
void add_validate_command(CLI::App& app);

/// Adds `dbench profile`: a TorchScript module's parameters and counted forward FLOPs as a profile file.
void add_profile_command(CLI::App& app);

}  // namespace dbench::experiments
