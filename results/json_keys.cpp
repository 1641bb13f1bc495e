#include "results/json_keys.hpp"

#include <fmt/core.h>

#include <cmath>

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

}  // namespace

const nlohmann::json& JsonKeys::required(std::string_view key) const {
  const auto it = object_.find(std::string(key));
  if (it == object_.end()) {
    throw JsonKeyError(fmt::format("{}: no key '{}'", source_, key));
  }
  return *it;
}

std::string JsonKeys::text(std::string_view key) const {
  const auto& value = required(key);
  if (!value.is_string()) {
    throw wrong(key, value, "a string");
  }
  return value.get<std::string>();
}

std::int64_t JsonKeys::whole(std::string_view key, std::int64_t minimum) const {
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

double JsonKeys::finite(std::string_view key) const {
  const auto& value = required(key);
  if (!value.is_number() || !std::isfinite(value.get<double>())) {
    throw wrong(key, value, "a finite number");
  }
  return value.get<double>();
}

double JsonKeys::fraction(std::string_view key) const {
  const double value = finite(key);
  if (!(value >= 0.0 && value <= 1.0)) {
    throw wrong(key, required(key), "a fraction in [0, 1]");
  }
  return value;
}

std::optional<double> JsonKeys::number_or_null(std::string_view key) const {
  const auto& value = required(key);
  if (value.is_null()) {
    return std::nullopt;
  }
  if (!value.is_number()) {
    throw wrong(key, value, "a number or null");
  }
  return value.get<double>();
}

bool JsonKeys::flag(std::string_view key) const {
  const auto it = object_.find(std::string(key));
  if (it == object_.end()) {
    return false;
  }
  if (!it->is_boolean()) {
    throw wrong(key, *it, "true or false");
  }
  return it->get<bool>();
}

void JsonKeys::null_or_absent(std::string_view key, std::string_view why) const {
  const auto it = object_.find(std::string(key));
  if (it != object_.end() && !it->is_null()) {
    throw wrong(key, *it, fmt::format("null ({})", why));
  }
}

std::map<std::string, std::string> JsonKeys::text_map(std::string_view key) const {
  const auto& value = required(key);
  if (!value.is_object()) {
    throw wrong(key, value, "an object");
  }
  std::map<std::string, std::string> out;
  for (const auto& [name, entry] : value.items()) {
    if (!entry.is_string()) {
      throw wrong(key, value, "an object of strings");
    }
    out.emplace(name, entry.get<std::string>());
  }
  return out;
}

std::vector<std::int64_t> JsonKeys::whole_list(std::string_view key) const {
  const auto& value = required(key);
  if (!value.is_array()) {
    throw wrong(key, value, "an array");
  }
  std::vector<std::int64_t> out;
  for (const auto& entry : value) {
    if (!entry.is_number_integer()) {
      throw wrong(key, value, "an array of whole numbers");
    }
    out.push_back(entry.get<std::int64_t>());
  }
  return out;
}

JsonKeyError JsonKeys::wrong(std::string_view key, const nlohmann::json& value,
                             std::string_view expected) const {
  return JsonKeyError(fmt::format("{}: key '{}' is {}, not {}", source_, key, type_words(value), expected));
}

nlohmann::json parse_json_object(std::string_view text, std::string_view source) {
  nlohmann::json object;
  try {
    object = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw JsonKeyError(fmt::format("{}: not valid JSON: {}", source, e.what()));
  }
  if (!object.is_object()) {
    throw JsonKeyError(fmt::format("{}: not a JSON object but {}", source, type_words(object)));
  }
  return object;
}

}  // namespace dbench::results
