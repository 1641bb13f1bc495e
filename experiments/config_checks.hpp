// Internal to the config loader: checks of one key's value, the list of problems found (with file:line:column
// or the --set that caused each) and the visitor that runs every key's check on a config built in code.
#pragma once

#include <toml++/toml.h>

#include <cstdint>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace dbench::experiments {

/// A check returns the reason a value is invalid, or an empty string when it is fine.
template <class T>
using Check = std::function<std::string(const T&)>;

/// The TOML type a key's value must have.
enum class Kind { kString, kInteger, kFloat, kBoolean, kIntegerArray, kFloatArray };

/// "a, b, c".
std::string join(std::span<const std::string_view> words);

/// "integer 5", "string \"abc\"": what a user wrote, for type errors.
std::string describe(const toml::node& node);

/// "section.key", or "key" for a top-level key (empty section).
std::string full_key(std::string_view section, std::string_view key);

/// v >= min.
Check<int> at_least(int min);
/// v >= min.
Check<double> at_least(double min);
/// min <= v <= max; `why` (may be empty) says where max comes from.
Check<int> between(int min, int max, std::string_view why);
/// v > min.
Check<double> above(double min);
/// [min, max) or (min, max] intervals, spelled the way the message shows them.
Check<double> within(double min, bool min_open, double max, bool max_open);
/// 0 (the preset's value) or a factor in [min, max].
Check<double> zero_or_within(double min, double max);
/// One of `allowed`, suggesting the closest on a typo; `allowed` views names with static storage.
Check<std::string> one_of(std::span<const std::string_view> allowed);
/// Any non-empty string.
Check<std::string> non_empty();
/// Any string.
Check<std::string> any_string();
/// Any boolean.
Check<bool> any_bool();
/// A name that can name a result directory.
Check<std::string> run_name();
/// A seed that TOML (signed 64-bit integers) can hold.
Check<std::uint64_t> seed_range();
/// Every entry >= min and, when `increasing`, strictly increasing.
Check<std::vector<int>> each_at_least(int min, bool increasing);
/// Every entry > min, strictly increasing.
Check<std::vector<double>> each_above(double min);
/// Hidden widths of the mlp: a few layers of a size the simulator's replicas can hold.
Check<std::vector<int>> mlp_widths();
/// Empty (keep the preset's value) or one of `allowed`.
Check<std::string> empty_or_one_of(std::span<const std::string_view> allowed);
/// A simulator preset, "custom", or a calibration file path (.toml or .json).
Check<std::string> preset_or_file();
/// platform.timing_model: a built-in model's name, or a model profile file (.toml or .json).
Check<std::string> timing_model_or_file();

/// Collects every problem so that one run reports all of them, each prefixed with where it came from.
class Problems {
 public:
  explicit Problems(std::string_view source_name) : source_name_(source_name) {}

  /// Remembers that `key` (and the sections above it) came from the command-line override `text`.
  void note_override(const std::string& key, const std::string& text);

  /// Records `reason` against `key`; `node` (may be null) gives the position in the file.
  void add(const std::string& key, const toml::node* node, std::string_view reason);

  /// Whether no problem was recorded.
  bool empty() const { return lines_.empty(); }

  /// Throws ConfigError with one line per problem, if there is any.
  void throw_if_any() const;

 private:
  std::string source_name_;
  std::map<std::string, std::string> overrides_;
  std::vector<std::string> lines_;
};

/// Runs each field's check on a config built in code.
class Validator {
 public:
  /// Problems found are added to `problems`.
  explicit Validator(Problems& problems) : problems_(problems) {}

  /// Called by visit_fields for every key.
  template <class T>
  void field(std::string_view section, std::string_view key, const T& value, const Check<T>& check,
             std::string_view) {
    if (const std::string reason = check(value); !reason.empty()) {
      problems_.add(full_key(section, key), nullptr, reason);
    }
  }

 private:
  Problems& problems_;
};

}  // namespace dbench::experiments
