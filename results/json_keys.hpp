// One key table per JSON record drives its file both ways, as columns.hpp does for a CSV file: the object a
// writer dumps (exactly the keys a record sets), the typed reader with its checks (each error naming the file
// and the key) and the documented keys all come from it, so adding a key is one line of its table.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace dbench::results {

/// A JSON results file that is not JSON, not an object or misses or mistypes a key; the message names the
/// file and the key.
class JsonKeyError : public std::runtime_error {
 public:
  /// Wraps a complete, user-facing message.
  explicit JsonKeyError(const std::string& message) : std::runtime_error(message) {}
};

/// The keys of one JSON object, read with checks; every error names `source` and the key
/// ("<source>: key 'workers' is 0, not a whole number >= 1").
class JsonKeys {
 public:
  JsonKeys(const nlohmann::json& object, std::string_view source) : object_(object), source_(source) {}

  /// Whether the key is there (null included).
  bool has(std::string_view key) const { return object_.contains(key); }
  /// The key's value; throws when it is absent.
  const nlohmann::json& required(std::string_view key) const;
  std::string text(std::string_view key) const;
  std::int64_t whole(std::string_view key, std::int64_t minimum) const;
  double finite(std::string_view key) const;
  /// A finite number in [0, 1].
  double fraction(std::string_view key) const;
  /// A number, or null for a value that was not finite (nlohmann::json writes NaN and infinities as null).
  std::optional<double> number_or_null(std::string_view key) const;
  /// Whether the key is true; false when it is absent. Anything but a boolean is an error.
  bool flag(std::string_view key) const;
  /// Checks that the key is absent or null: a value `why` says the record cannot have.
  void null_or_absent(std::string_view key, std::string_view why) const;
  /// An object whose every value is a string.
  std::map<std::string, std::string> text_map(std::string_view key) const;
  /// An array of whole numbers.
  std::vector<std::int64_t> whole_list(std::string_view key) const;

  /// The error "<source>: key '<key>' is <value>, not <expected>".
  JsonKeyError wrong(std::string_view key, const nlohmann::json& value, std::string_view expected) const;

 private:
  const nlohmann::json& object_;
  std::string_view source_;
};

/// One key of the JSON file of records R.
template <class R>
struct JsonKey {
  std::string_view name;
  std::string_view doc;
  std::string_view type;  ///< the JSON type in words, for the documentation ("a string", "a number or null")
  std::function<std::optional<nlohmann::json>(const R&)> write;  ///< the value; empty: the key is left out
  std::function<void(R&, const JsonKeys&)> read;                 ///< checks the key and sets the member
};

/// The key table of one JSON file of records R, in the order the reader checks its keys.
template <class R>
using JsonKeyTable = std::vector<JsonKey<R>>;

/// A key of a table and what it holds, as the README documents it.
struct KeyDoc {
  std::string name;
  std::string doc;
  std::string type;
};

/// A string every record has.
template <class R>
JsonKey<R> text_key(std::string_view name, std::string_view doc, std::string R::*member) {
  return {name, doc, "a string", [member](const R& r) { return std::optional<nlohmann::json>(r.*member); },
          [member, name](R& r, const JsonKeys& keys) { r.*member = keys.text(name); }};
}

/// A string only some records have (absent: empty).
template <class R>
JsonKey<R> optional_text_key(std::string_view name, std::string_view doc,
                             std::optional<std::string> R::*member) {
  return {
      name, doc, "a string, where written",
      [member](const R& r) { return r.*member ? std::optional<nlohmann::json>(*(r.*member)) : std::nullopt; },
      [member, name](R& r, const JsonKeys& keys) {
        r.*member = keys.has(name) ? std::optional(keys.text(name)) : std::nullopt;
      }};
}

/// A whole number >= `minimum` every record has.
template <class R>
JsonKey<R> whole_key(std::string_view name, std::string_view doc, std::int64_t R::*member,
                     std::int64_t minimum) {
  return {name, doc, "a whole number",
          [member](const R& r) { return std::optional<nlohmann::json>(r.*member); },
          [member, name, minimum](R& r, const JsonKeys& keys) { r.*member = keys.whole(name, minimum); }};
}

/// A whole number >= `minimum` only some records have (absent: empty).
template <class R>
JsonKey<R> optional_whole_key(std::string_view name, std::string_view doc,
                              std::optional<std::int64_t> R::*member, std::int64_t minimum) {
  return {
      name, doc, "a whole number, where written",
      [member](const R& r) { return r.*member ? std::optional<nlohmann::json>(*(r.*member)) : std::nullopt; },
      [member, name, minimum](R& r, const JsonKeys& keys) {
        r.*member = keys.has(name) ? std::optional(keys.whole(name, minimum)) : std::nullopt;
      }};
}

/// A finite number every record has, written as a double even where it is whole.
template <class R>
JsonKey<R> finite_key(std::string_view name, std::string_view doc, double R::*member) {
  return {name, doc, "a number", [member](const R& r) { return std::optional<nlohmann::json>(r.*member); },
          [member, name](R& r, const JsonKeys& keys) { r.*member = keys.finite(name); }};
}

/// A number only some records have (absent: empty); a value that was not finite is written and read as null.
template <class R>
JsonKey<R> optional_number_key(std::string_view name, std::string_view doc,
                               std::optional<double> R::*member) {
  return {
      name, doc, "a number or null, where written",
      [member](const R& r) { return r.*member ? std::optional<nlohmann::json>(*(r.*member)) : std::nullopt; },
      [member, name](R& r, const JsonKeys& keys) {
        r.*member = keys.has(name) ? keys.number_or_null(name) : std::nullopt;
      }};
}

/// true or false, only some records have (absent: empty).
template <class R>
JsonKey<R> optional_flag_key(std::string_view name, std::string_view doc, std::optional<bool> R::*member) {
  return {
      name, doc, "true or false, where written",
      [member](const R& r) { return r.*member ? std::optional<nlohmann::json>(*(r.*member)) : std::nullopt; },
      [member, name](R& r, const JsonKeys& keys) {
        r.*member = keys.has(name) ? std::optional(keys.flag(name)) : std::nullopt;
      }};
}

/// The object a writer dumps for `record`: exactly the keys the record sets.
template <class R>
nlohmann::json json_object(const JsonKeyTable<R>& table, const R& record) {
  nlohmann::json object = nlohmann::json::object();
  for (const JsonKey<R>& key : table) {
    if (auto value = key.write(record)) {
      object[std::string(key.name)] = std::move(*value);
    }
  }
  return object;
}

/// The whole file for `record`: the object indented by 2, keys in sorted order, and a final newline.
template <class R>
std::string write_json(const JsonKeyTable<R>& table, const R& record) {
  return json_object(table, record).dump(2) + "\n";
}

/// Reads the keys of `object` into a record; keys the table does not name are accepted and ignored.
template <class R>
R read_json_object(const JsonKeyTable<R>& table, const nlohmann::json& object, std::string_view source) {
  const JsonKeys keys(object, source);
  R record{};
  for (const JsonKey<R>& key : table) {
    key.read(record, keys);
  }
  return record;
}

/// Parses `text` as one JSON object; throws JsonKeyError naming `source` for anything else.
nlohmann::json parse_json_object(std::string_view text, std::string_view source);

/// Reads JSON text written for `table`; `source` names the file in errors. Throws JsonKeyError.
template <class R>
R read_json(const JsonKeyTable<R>& table, std::string_view text, std::string_view source) {
  return read_json_object(table, parse_json_object(text, source), source);
}

/// The keys of `table`, what they hold and their JSON types.
template <class R>
std::vector<KeyDoc> documented_keys(const JsonKeyTable<R>& table) {
  std::vector<KeyDoc> docs;
  for (const JsonKey<R>& key : table) {
    docs.push_back({std::string(key.name), std::string(key.doc), std::string(key.type)});
  }
  return docs;
}

}  // namespace dbench::results
