#include "results/summary_json.hpp"

#include <fmt/core.h>

#include <cmath>
#include <system_error>

#include "results/results_tree.hpp"

namespace dbench::results {
namespace {

// The JSON type of `value` in words, for "key 'x' is a string, not a number".
std::string type_words(const nlohmann::json& value) {
  if (value.is_null()) {
    return "null";
  }
  if (value.is_number() || value.is_boolean()) {
    return value.dump();
  }
  return fmt::format("{} {}", value.is_object() || value.is_array() ? "an" : "a", value.type_name());
}

// Reads the keys of one summary object, each error naming the file and the key.
class Keys {
 public:
  Keys(const nlohmann::json& object, std::string_view source) : object_(object), source_(source) {}

  const nlohmann::json& required(const char* key) const {
    const auto it = object_.find(key);
    if (it == object_.end()) {
      throw SummaryJsonError(fmt::format("{}: no key '{}'", source_, key));
    }
    return *it;
  }

  std::string text(const char* key) const {
    const auto& value = required(key);
    if (!value.is_string()) {
      throw wrong(key, value, "a string");
    }
    return value.get<std::string>();
  }

  std::int64_t whole(const char* key, std::int64_t minimum) const {
    const auto& value = required(key);
    if (!value.is_number_integer()) {
      throw wrong(key, value, "a whole number");
    }
    const auto number = value.get<std::int64_t>();
    if (number < minimum) {
      throw wrong(key, value, fmt::format("a whole number >= {}", minimum));
    }
    return number;
  }

  double finite(const char* key) const {
    const auto& value = required(key);
    if (!value.is_number() || !std::isfinite(value.get<double>())) {
      throw wrong(key, value, "a finite number");
    }
    return value.get<double>();
  }

  double fraction(const char* key) const {
    const double value = finite(key);
    if (!(value >= 0.0 && value <= 1.0)) {
      throw wrong(key, required(key), "a fraction in [0, 1]");
    }
    return value;
  }

  /// A number, or null for a value that was not finite (nlohmann::json writes NaN and infinities as null).
  std::optional<double> number_or_null(const char* key) const {
    const auto& value = required(key);
    return optional_number(key, value);
  }

  /// A string, or empty when the key is absent: a key only one engine writes.
  std::optional<std::string> optional_text(const char* key) const {
    return object_.contains(key) ? std::optional(text(key)) : std::nullopt;
  }

  /// A whole number >= `minimum`, or empty when the key is absent: a key only one engine writes.
  std::optional<std::int64_t> optional_whole(const char* key, std::int64_t minimum) const {
    return object_.contains(key) ? std::optional(whole(key, minimum)) : std::nullopt;
  }

  /// Whether the key is true; false when it is absent. Anything but a boolean is an error.
  bool flag(const char* key) const {
    const auto it = object_.find(key);
    if (it == object_.end()) {
      return false;
    }
    if (!it->is_boolean()) {
      throw wrong(key, *it, "true or false");
    }
    return it->get<bool>();
  }

  /// Checks that the key is absent or null: a value a timing-only run cannot have measured.
  void null_or_absent(const char* key, std::string_view why) const {
    const auto it = object_.find(key);
    if (it != object_.end() && !it->is_null()) {
      throw wrong(key, *it, fmt::format("null ({})", why));
    }
  }

  /// As number_or_null, and empty when the key is absent: a key only one engine writes.
  std::optional<double> optional(const char* key) const {
    const auto it = object_.find(key);
    return it == object_.end() ? std::nullopt : optional_number(key, *it);
  }

 private:
  std::optional<double> optional_number(const char* key, const nlohmann::json& value) const {
    if (value.is_null()) {
      return std::nullopt;
    }
    if (!value.is_number()) {
      throw wrong(key, value, "a number or null");
    }
    return value.get<double>();
  }

  SummaryJsonError wrong(const char* key, const nlohmann::json& value, std::string_view expected) const {
    return SummaryJsonError(
        fmt::format("{}: key '{}' is {}, not {}", source_, key, type_words(value), expected));
  }

  const nlohmann::json& object_;
  std::string_view source_;
};

}  // namespace

SummaryJson parse_summary_json(std::string_view text, std::string_view source) {
  SummaryJson s;
  try {
    s.fields = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw SummaryJsonError(fmt::format("{}: not valid JSON: {}", source, e.what()));
  }
  if (!s.fields.is_object()) {
    throw SummaryJsonError(fmt::format("{}: not a JSON object but {}", source, type_words(s.fields)));
  }
  const Keys keys(s.fields, source);
  s.name = keys.text("name");
  s.engine = keys.text("engine");
  s.algorithm = keys.text("algorithm");
  s.graph = keys.text("graph");
  s.workers = keys.whole("workers", 1);
  s.iterations = keys.whole("iterations", 0);
  s.timing_only = keys.flag("timing_only");
  if (s.timing_only) {
    // A timing-only run trains nothing: an accuracy here would be a file from another kind of run.
    for (const char* key : {"final_test_accuracy", "best_test_accuracy", "final_test_loss"}) {
      keys.null_or_absent(key, "a timing-only run measures no accuracy");
    }
  } else {
    s.final_test_accuracy = keys.fraction("final_test_accuracy");
    s.best_test_accuracy = keys.fraction("best_test_accuracy");
    s.final_test_loss = keys.number_or_null("final_test_loss");
  }
  s.seconds_per_iteration = keys.finite("seconds_per_iteration");
  s.samples_per_second = keys.finite("samples_per_second");
  s.wall_seconds = keys.finite("wall_seconds");
  s.scaling_efficiency = keys.optional("scaling_efficiency");
  s.bytes_per_gpu_per_iteration = keys.optional("bytes_per_gpu_per_iteration");
  s.simulated_seconds = keys.optional("simulated_seconds");
  s.platform = keys.optional_text("platform");
  s.timing_model = keys.optional_text("timing_model");
  s.timing_model_parameters = keys.optional_whole("timing_model_parameters", 1);
  return s;
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
