// summary.json, the last file a run writes: one record and one key table, from which its writer, its checked
// reader and its documented keys all come, so that a run writing it, a sweep deciding whether a run is done
// and a report showing it agree on what a complete summary is.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "results/json_keys.hpp"

namespace dbench::results {

/// A summary.json that is missing, unreadable, not JSON or incomplete; the message names the file and key.
using SummaryJsonError = JsonKeyError;

/// A finished run's summary.json: the keys every run writes, then those only some runs write (empty where a
/// run does not). A timing-only run (`dbench simulate --timing-only`, `"timing_only": true`) trains nothing:
/// its accuracy is null and its loss absent.
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

  // Training runs (both engines).
  std::optional<std::string> model;           ///< train.model
  std::optional<std::string> dataset;         ///< train.dataset
  std::optional<std::int64_t> train_samples;  ///< every view of every training image, where the set is known
  std::optional<std::int64_t> augment_copies;
  std::optional<std::int64_t> parameters_per_worker;
  std::optional<std::int64_t> gossip_messages;  ///< messages sent, summed over the iterations

  // dbench train only.
  std::optional<std::int64_t> resumed_from_iteration;
  std::optional<bool> overlap;
  std::optional<std::string> device;  ///< the device option, "cpu-worker" without one

  // dbench simulate only.
  std::optional<double> scaling_efficiency;
  std::optional<double> single_gpu_seconds_per_iteration;
  std::optional<double> bytes_per_gpu_per_iteration;
  std::optional<double> simulated_seconds;
  std::optional<std::string> platform;  ///< the platform's name
  std::optional<std::string> fabric;
  std::optional<std::string> timing_model;              ///< platform.timing_model
  std::optional<std::int64_t> timing_model_parameters;  ///< the timed model's size
  std::optional<std::int64_t> timing_batch_per_gpu;
  std::optional<std::string> allreduce;  ///< platform.allreduce
  /// Per all-reduce size (bytes per GPU, in decimal): "algorithm/protocol" as it ran.
  std::optional<std::map<std::string, std::string>> allreduce_algorithms;
  std::optional<std::vector<std::int64_t>> straggler_gpus;  ///< the GPUs platform.stragglers slowed
  std::optional<std::string> fidelity;
  std::optional<std::int64_t> timing_simulations;  ///< SimGrid runs the timing took
  std::optional<double> timing_wall_seconds;
  std::optional<double> numerics_wall_seconds_per_iteration;  ///< trained runs only
};

/// The key table of summary.json, in the order the reader checks its keys.
const JsonKeyTable<SummaryJson>& summary_json_keys();

/// The object summary.json holds for `summary`: exactly the keys it sets.
nlohmann::json summary_json_object(const SummaryJson& summary);

/// summary.json's text for `summary` (the object indented by 2, keys sorted, a final newline).
std::string write_summary_json(const SummaryJson& summary);

/// Checks summary.json text; `source` names the file in errors ("<source>: no key 'final_test_accuracy'").
/// Keys it does not know are accepted. Throws SummaryJsonError.
SummaryJson parse_summary_json(std::string_view text, std::string_view source);

/// Reads and checks the file at `path`; throws SummaryJsonError naming it (missing, unreadable, malformed).
SummaryJson read_summary_json(const std::filesystem::path& path);

}  // namespace dbench::results
