// Spelling and TOML text helpers shared by experiment configs and sweep configs.
#pragma once

#include <algorithm>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace dbench::experiments {

/// Optimal-string-alignment distance: Levenshtein plus adjacent transpositions, the commonest typo.
std::size_t edit_distance(std::string_view a, std::string_view b);

/// The closest candidate within a typo's reach (a third of the word, at least one edit), if any; ties go to
/// the longer common prefix, since typos are rarer at the start of a word ("resnet" means "resnet20").
template <class Range>
std::optional<std::string> closest_name(std::string_view word, const Range& candidates) {
  const auto common_prefix = [word](std::string_view candidate) {
    std::size_t n = 0;
    while (n < word.size() && n < candidate.size() && word[n] == candidate[n]) {
      ++n;
    }
    return n;
  };
  const std::size_t limit = std::max<std::size_t>(1, word.size() / 3);
  std::optional<std::string> best;
  std::size_t best_distance = limit + 1;
  std::size_t best_prefix = 0;
  for (const auto& candidate : candidates) {
    const std::size_t distance = edit_distance(word, candidate);
    const std::size_t prefix = common_prefix(candidate);
    if (distance < best_distance || (distance == best_distance && prefix > best_prefix)) {
      best_distance = distance;
      best_prefix = prefix;
      best = std::string(candidate);
    }
  }
  return best;
}

/// A TOML basic string ("..."), the form users write and error messages quote.
std::string toml_string(std::string_view text);

/// Shortest text that reads back to the same double; TOML wants a '.' or an exponent in a float.
std::string toml_double(double value);

}  // namespace dbench::experiments
