// summary.json, the last file a run writes: one reader that checks it, so that a sweep deciding whether a run
// is done and a report showing it agree on what a complete summary is.
#pragma once

#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

namespace dbench::results {

/// A summary.json that is missing, unreadable, not JSON or incomplete; the message names the file and key.
class SummaryJsonError : public std::runtime_error {
 public:
  /// Wraps a complete, user-facing message.
  explicit SummaryJsonError(const std::string& message) : std::runtime_error(message) {}
};

/// A finished run's summary.json, checked: the keys both engines write, with their types. A timing-only run
/// (`dbench simulate --timing-only`, `"timing_only": true`) trains nothing: its accuracy and loss are null.
struct SummaryJson {
  std::string name;       ///< the run's name
  std::string engine;     ///< "sim" (dbench simulate) or "runtime" (dbench train)
  std::string algorithm;  ///< algorithm.kind
  std::string graph;      ///< the policy's name
  std::int64_t workers = 0;
  std::int64_t iterations = 0;
  bool timing_only = false;                   ///< no training: the accuracy and loss below are empty
  std::optional<double> final_test_accuracy;  ///< in [0, 1]; present unless timing_only
  std::optional<double> best_test_accuracy;   ///< in [0, 1]; present unless timing_only
  std::optional<double> final_test_loss;  ///< empty where the loss was not finite (JSON writes it as null)
  double seconds_per_iteration = 0.0;
  double samples_per_second = 0.0;
  double wall_seconds = 0.0;
  std::optional<double> scaling_efficiency;             ///< simulated runs only
  std::optional<double> bytes_per_gpu_per_iteration;    ///< simulated runs only
  std::optional<double> simulated_seconds;              ///< simulated runs only
  std::optional<std::string> platform;                  ///< simulated runs only: the platform's name
  std::optional<std::string> timing_model;              ///< simulated runs only: platform.timing_model
  std::optional<std::int64_t> timing_model_parameters;  ///< simulated runs only: the timed model's size
  nlohmann::json fields;                                ///< the whole object as written, for tables
};

/// Checks summary.json text; `source` names the file in errors ("<source>: no key 'final_test_accuracy'").
/// Throws SummaryJsonError.
SummaryJson parse_summary_json(std::string_view text, std::string_view source);

/// Reads and checks the file at `path`; throws SummaryJsonError naming it (missing, unreadable, malformed).
SummaryJson read_summary_json(const std::filesystem::path& path);

}  // namespace dbench::results
