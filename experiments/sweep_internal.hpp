// Helpers the sweep's pieces (sweep_file.cpp, sweep.cpp, sweep_summary.cpp) share; internal, not part of
// sweep.hpp's interface.
#pragma once

#include <string>
#include <string_view>

#include "experiments/config.hpp"

namespace dbench::experiments {

/// The shorthand grid axis: "centralized", or any graph or policy name for D-PSGD.
inline constexpr std::string_view kAlgorithmAxis = "algorithm";

/// "file:line:col: " for a place in the sweep file, or "file: " where the place is unknown.
std::string where(std::string_view source, int line, int column);

/// The config with cost-aware Ada off: the same policy and checks, without the timing runs that pick rungs.
ExperimentConfig without_timing(ExperimentConfig config);

}  // namespace dbench::experiments
