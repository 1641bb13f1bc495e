#include "results/summary_json.hpp"

#include <fmt/core.h>

#include <system_error>

#include "results/results_tree.hpp"

namespace dbench::results {
namespace {

using R = SummaryJson;
using Json = std::optional<nlohmann::json>;

constexpr std::string_view kNoAccuracy = "a timing-only run measures no accuracy";

// The accuracy and loss keys: checked unless the run is timing-only, where they must be null or absent.
// `written_when_timing_only`: the key is written as null by a timing-only run (rather than left out).
JsonKey<R> accuracy_key(std::string_view name, std::string_view doc, std::optional<double> R::*member,
                        bool fraction, bool written_when_timing_only) {
  return {name, doc, fraction ? "a fraction in [0, 1] (null when timing_only)" : "a number or null",
          [member, written_when_timing_only](const R& r) -> Json {
            if (r.timing_only) {
              return written_when_timing_only ? Json(nullptr) : std::nullopt;
            }
            return r.*member ? Json(*(r.*member)) : Json(nullptr);
          },
          [name, member, fraction](R& r, const JsonKeys& keys) {
            if (r.timing_only) {
              // A timing-only run trains nothing: an accuracy here would be a file from another kind of run.
              keys.null_or_absent(name, kNoAccuracy);
            } else {
              r.*member = fraction ? std::optional(keys.fraction(name)) : keys.number_or_null(name);
            }
          }};
}

JsonKeyTable<R> make_table() {
  JsonKeyTable<R> table = {
      text_key<R>("name", "the run's name", &R::name),
      text_key<R>("engine", "sim (dbench simulate) or runtime (dbench train)", &R::engine),
      text_key<R>("algorithm", "algorithm.kind", &R::algorithm),
      text_key<R>("graph", "the graph policy's name", &R::graph),
      whole_key<R>("workers", "workers (simulated GPUs or processes)", &R::workers, 1),
      whole_key<R>("iterations", "iterations run", &R::iterations, 0),
      {"timing_only", "true for dbench simulate --timing-only (no training); absent otherwise",
       "true, where written", [](const R& r) { return r.timing_only ? Json(true) : std::nullopt; },
       [](R& r, const JsonKeys& keys) { r.timing_only = keys.flag("timing_only"); }},
      accuracy_key("final_test_accuracy", "the averaged model's test accuracy at the end",
                   &R::final_test_accuracy, true, true),
      accuracy_key("best_test_accuracy", "the best test accuracy of any evaluation", &R::best_test_accuracy,
                   true, false),
      accuracy_key("final_test_loss", "the averaged model's test loss at the end (null: not finite)",
                   &R::final_test_loss, false, false),
      finite_key<R>("seconds_per_iteration", "seconds per iteration (simulated, or measured)",
                    &R::seconds_per_iteration),
      finite_key<R>("samples_per_second", "training samples per second over all workers",
                    &R::samples_per_second),
      finite_key<R>("wall_seconds", "how long the run took", &R::wall_seconds),
      optional_number_key<R>("scaling_efficiency", "samples_per_second / (workers x one GPU's)",
                             &R::scaling_efficiency),
      optional_number_key<R>("bytes_per_gpu_per_iteration", "bytes each GPU sends per iteration",
                             &R::bytes_per_gpu_per_iteration),
      optional_number_key<R>("simulated_seconds", "simulated seconds of the whole schedule",
                             &R::simulated_seconds),
      optional_text_key<R>("platform", "the simulated platform's name", &R::platform),
      optional_text_key<R>("timing_model", "platform.timing_model", &R::timing_model),
      optional_whole_key<R>("timing_model_parameters", "parameters of the timed model",
                            &R::timing_model_parameters, 1),
      optional_text_key<R>("model", "train.model", &R::model),
      optional_text_key<R>("dataset", "train.dataset", &R::dataset),
      optional_whole_key<R>("train_samples", "every view of every training image", &R::train_samples, 0),
      optional_whole_key<R>("augment_copies", "train.augment_copies", &R::augment_copies, 0),
      optional_whole_key<R>("parameters_per_worker", "parameters of one replica", &R::parameters_per_worker,
                            0),
      optional_whole_key<R>("gossip_messages", "messages sent, summed over the iterations",
                            &R::gossip_messages, 0),
      optional_whole_key<R>("resumed_from_iteration",
                            "the checkpoint's iteration a run resumed from (0: none)",
                            &R::resumed_from_iteration, 0),
      optional_flag_key<R>("overlap", "whether gossip overlapped the next step", &R::overlap),
      optional_text_key<R>("device", "the workers' device (cpu-worker: none)", &R::device),
      optional_number_key<R>("single_gpu_seconds_per_iteration", "one GPU's compute per iteration",
                             &R::single_gpu_seconds_per_iteration),
      optional_text_key<R>("fabric", "the platform's fabric", &R::fabric),
      optional_whole_key<R>("timing_batch_per_gpu", "platform.timing_batch_per_gpu", &R::timing_batch_per_gpu,
                            0),
      optional_text_key<R>("allreduce", "platform.allreduce", &R::allreduce),
      {"allreduce_algorithms", "per all-reduce size in bytes per GPU: the algorithm/protocol it ran",
       "an object of strings, where written",
       [](const R& r) -> Json {
         if (!r.allreduce_algorithms) {
           return std::nullopt;
         }
         nlohmann::json object = nlohmann::json::object();
         for (const auto& [bytes, choice] : *r.allreduce_algorithms) {
           object[bytes] = choice;
         }
         return object;
       },
       [](R& r, const JsonKeys& keys) {
         if (keys.has("allreduce_algorithms")) {
           r.allreduce_algorithms = keys.text_map("allreduce_algorithms");
         }
       }},
      {"straggler_gpus", "the GPUs platform.stragglers slowed", "an array of whole numbers, where written",
       [](const R& r) -> Json {
         if (!r.straggler_gpus) {
           return std::nullopt;
         }
         nlohmann::json array = nlohmann::json::array();
         for (const std::int64_t gpu : *r.straggler_gpus) {
           array.push_back(gpu);
         }
         return array;
       },
       [](R& r, const JsonKeys& keys) {
         if (keys.has("straggler_gpus")) {
           r.straggler_gpus = keys.whole_list("straggler_gpus");
         }
       }},
      optional_text_key<R>("fidelity", "the timing fidelity", &R::fidelity),
      optional_whole_key<R>("timing_simulations", "SimGrid runs the timing took", &R::timing_simulations, 0),
      optional_number_key<R>("timing_wall_seconds", "how long the timing took", &R::timing_wall_seconds),
      optional_number_key<R>("numerics_wall_seconds_per_iteration",
                             "wall seconds of the numerics per iteration",
                             &R::numerics_wall_seconds_per_iteration),
  };
  return table;
}

}  // namespace

const JsonKeyTable<SummaryJson>& summary_json_keys() {
  static const JsonKeyTable<SummaryJson> table = make_table();
  return table;
}

nlohmann::json summary_json_object(const SummaryJson& summary) {
  return json_object(summary_json_keys(), summary);
}

std::string write_summary_json(const SummaryJson& summary) {
  return write_json(summary_json_keys(), summary);
}

SummaryJson parse_summary_json(std::string_view text, std::string_view source) {
  return read_json(summary_json_keys(), text, source);
}

SummaryJson read_summary_json(const std::filesystem::path& path) {
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (!std::filesystem::exists(status)) {
    throw SummaryJsonError(fmt::format("{}: no such file", path.string()));
  }
  if (!std::filesystem::is_regular_file(status)) {
    throw SummaryJsonError(fmt::format("{}: not a regular file", path.string()));
  }
  std::string text;
  try {
    text = read_results_file(path, path);
  } catch (const ResultsTreeError& e) {
    throw SummaryJsonError(e.what());
  }
  return parse_summary_json(text, path.string());
}

}  // namespace dbench::results
