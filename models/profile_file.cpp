#include "models/profile_file.hpp"

#include <fmt/format.h>
#include <toml++/toml.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "models/errors.hpp"
#include "models/input_file.hpp"

namespace dbench::models {
namespace {

using Json = nlohmann::json;

/// The file's fields, TOML or JSON alike, as JSON values: one reader checks both.
Json to_json(const toml::node& node) {
  if (const auto* table = node.as_table()) {
    Json object = Json::object();
    for (const auto& [key, value] : *table) {
      object[std::string(key.str())] = to_json(value);
    }
    return object;
  }
  if (const auto* array = node.as_array()) {
    Json list = Json::array();
    for (const auto& value : *array) {
      list.push_back(to_json(value));
    }
    return list;
  }
  if (const auto* integer = node.as_integer()) {
    return integer->get();
  }
  if (const auto* number = node.as_floating_point()) {
    return number->get();
  }
  if (const auto* text = node.as_string()) {
    return text->get();
  }
  if (const auto* flag = node.as_boolean()) {
    return flag->get();
  }
  return "<a date or time>";  // no field takes one; the field's type check names it
}

/// Reads fields of one JSON object and refuses those it was not asked for.
class Fields {
 public:
  Fields(const Json& object, std::string where) : object_(object), where_(std::move(where)) {
    if (!object_.is_object()) {
      fail("", "expected a table of fields");
    }
  }

  [[noreturn]] void fail(const std::string& field, const std::string& reason) const {
    throw ModelError(fmt::format("{}{}{}: {}", where_, field.empty() ? "" : ": ", field, reason));
  }

  const Json* find(const std::string& field) {
    seen_.insert(field);
    const auto it = object_.find(field);
    return it == object_.end() ? nullptr : &*it;
  }

  const Json& required(const std::string& field) {
    const Json* value = find(field);
    if (value == nullptr) {
      fail(field, "missing");
    }
    return *value;
  }

  std::string text(const std::string& field, const Json& value) const {
    if (!value.is_string() || value.get<std::string>().empty()) {
      fail(field, "expected a non-empty string");
    }
    return value.get<std::string>();
  }

  /// A number in [min, max]: finite, > 0, and within what any real model could have.
  double positive_number(const std::string& field, const Json& value, double min, double max) const {
    if (!value.is_number()) {
      fail(field, "expected a number");
    }
    const double number = value.get<double>();
    if (!std::isfinite(number) || number <= 0.0) {
      fail(field, fmt::format("must be finite and > 0, got {}", number));
    }
    if (number < min || number > max) {
      fail(field, fmt::format("must be in [{:g}, {:g}], got {:g}", min, max, number));
    }
    return number;
  }

  std::int64_t positive_integer(const std::string& field, const Json& value) const {
    if (!value.is_number_integer() || value.get<std::int64_t>() <= 0) {
      fail(field, fmt::format("expected an integer > 0, got {}", value.dump()));
    }
    return value.get<std::int64_t>();
  }

  Precision precision(const std::string& field, const Json& value) const {
    const std::string name = text(field, value);
    const auto names = precision_names();
    const auto it = std::find(names.begin(), names.end(), name);
    if (it == names.end()) {
      fail(field, fmt::format("expected one of fp32, bf16, fp16, got \"{}\"", name));
    }
    return static_cast<Precision>(it - names.begin());
  }

  /// Refuses every field no find() asked for: a misspelt key is an error, not a default.
  void no_others(std::string_view what) const {
    for (const auto& [key, value] : object_.items()) {
      if (!seen_.contains(key)) {
        fail(key, fmt::format("unknown field ({})", what));
      }
    }
  }

 private:
  const Json& object_;
  std::string where_;
  std::set<std::string> seen_;
};

// Sane ranges: far beyond any real model on either side, so that a unit slip or a typo (1e-300, 1e308) is
// refused at load instead of timing a model to 0 or infinite seconds. GPT-3's forward pass is ~7e14 FLOPs for
// a 2,048-token sample; 2^48 elements (2.8e14) is a thousand times the largest published models.
constexpr double kMinFlopsPerSample = 1.0;
constexpr double kMaxFlopsPerSample = 1e18;
constexpr double kMinBackwardRatio = 0.01;
constexpr double kMaxBackwardRatio = 100.0;
constexpr std::int64_t kMaxElements = std::int64_t{1} << 48;

constexpr std::string_view kTopFields =
    "a profile has name, forward_flops_per_sample, backward_forward_ratio, compute_precision and [[tensors]]";
constexpr std::string_view kTensorFields = "a tensor has name, shape or elements, and precision";

TensorInfo read_tensor(const Json& object, const std::string& where) {
  Fields f(object, where);
  TensorInfo tensor;
  tensor.name = f.text("name", f.required("name"));
  const Json* shape = f.find("shape");
  const Json* elements = f.find("elements");
  if (shape == nullptr && elements == nullptr) {
    f.fail("shape", "missing (give shape, elements or both)");
  }
  if (shape != nullptr) {
    if (!shape->is_array() || shape->empty()) {
      f.fail("shape", "expected a non-empty list of sizes, outermost first");
    }
    // The product is checked at every factor: [2^32, 2^32, 2^32] would wrap to 0 in 64 bits.
    tensor.elements = 1;
    for (std::size_t i = 0; i < shape->size(); ++i) {
      const std::int64_t size = f.positive_integer(fmt::format("shape[{}]", i), (*shape)[i]);
      tensor.shape.push_back(size);
      if (size > kMaxElements / tensor.elements) {
        f.fail("shape",
               fmt::format("tensor \"{}\" has more than the 2^48 elements a tensor may hold", tensor.name));
      }
      tensor.elements *= size;
    }
  }
  if (elements != nullptr) {
    const std::int64_t count = f.positive_integer("elements", *elements);
    if (count > kMaxElements) {
      f.fail("elements", fmt::format("tensor \"{}\" has {} elements, more than the 2^48 a tensor may hold",
                                     tensor.name, count));
    }
    if (shape != nullptr && count != tensor.elements) {
      f.fail("elements", fmt::format("{} disagrees with the shape's {}", count, tensor.elements));
    }
    tensor.elements = count;
  }
  if (const Json* precision = f.find("precision")) {
    tensor.precision = f.precision("precision", *precision);
  }
  f.no_others(kTensorFields);
  return tensor;
}

std::string read_text(const std::filesystem::path& path) {
  try {
    return read_input_file(path, "profile file");
  } catch (const InputFileError& e) {
    throw ModelError(e.what());
  }
}

Json parse(const std::filesystem::path& path) {
  const std::string text = read_text(path);
  if (path.extension() == ".json") {
    try {
      return Json::parse(text);
    } catch (const Json::parse_error& e) {
      throw ModelError(fmt::format("{}: JSON syntax error: {}", path.string(), e.what()));
    } catch (const Json::exception& e) {
      // A number beyond a double (1e400) is the library's out_of_range, not a parse_error.
      throw ModelError(fmt::format("{}: invalid JSON: {}", path.string(), e.what()));
    }
  }
  try {
    return to_json(toml::parse(text, path.string()));
  } catch (const toml::parse_error& e) {
    throw ModelError(fmt::format("{}:{}:{}: TOML syntax error: {}", path.string(), e.source().begin.line,
                                 e.source().begin.column, e.description()));
  }
}

}  // namespace

bool names_file(std::string_view value) {
  return value.ends_with(".toml") || value.ends_with(".json");
}

ModelProfile read_profile_file(const std::filesystem::path& path) {
  const Json root = parse(path);
  Fields f(root, path.string());
  ModelProfile profile;
  profile.name = f.text("name", f.required("name"));
  profile.forward_flops_per_sample =
      f.positive_number("forward_flops_per_sample", f.required("forward_flops_per_sample"),
                        kMinFlopsPerSample, kMaxFlopsPerSample);
  double ratio = 2.0;
  if (const Json* value = f.find("backward_forward_ratio")) {
    ratio = f.positive_number("backward_forward_ratio", *value, kMinBackwardRatio, kMaxBackwardRatio);
  }
  profile.backward_flops_per_sample = ratio * profile.forward_flops_per_sample;
  if (const Json* value = f.find("compute_precision")) {
    profile.compute_precision = f.precision("compute_precision", *value);
  }
  const Json& tensors = f.required("tensors");
  if (!tensors.is_array() || tensors.empty()) {
    f.fail("tensors", "expected a non-empty list of tensors ([[tensors]] tables)");
  }
  // The file lists tensors as backward produces their gradients, last layer first; the profile keeps
  // named_parameters() order, first layer first.
  std::set<std::string> names;
  std::int64_t total = 0;
  for (std::size_t i = tensors.size(); i-- > 0;) {
    TensorInfo tensor = read_tensor(tensors[i], fmt::format("{}: tensors[{}]", path.string(), i));
    if (!names.insert(tensor.name).second) {
      f.fail(fmt::format("tensors[{}].name", i), fmt::format("\"{}\" is listed twice", tensor.name));
    }
    // Each tensor is below 2^48, so the sum cannot wrap before it is refused; bytes stay below 2^50.
    total += tensor.elements;
    if (total > kMaxElements) {
      f.fail(fmt::format("tensors[{}]", i),
             fmt::format("with tensor \"{}\" the profile has more than the 2^48 elements a model may hold",
                         tensor.name));
    }
    profile.tensors.push_back(std::move(tensor));
  }
  f.no_others(kTopFields);
  return profile;
}

std::string profile_file_text(const ModelProfile& profile) {
  toml::table root;
  root.insert("name", profile.name);
  root.insert("forward_flops_per_sample", profile.forward_flops_per_sample);
  root.insert("backward_forward_ratio", profile.backward_flops_per_sample / profile.forward_flops_per_sample);
  root.insert("compute_precision", std::string(precision_name(profile.compute_precision)));
  toml::array tensors;
  for (auto it = profile.tensors.rbegin(); it != profile.tensors.rend(); ++it) {
    toml::table tensor;
    tensor.insert("name", it->name);
    if (!it->shape.empty()) {
      toml::array shape;
      for (const std::int64_t size : it->shape) {
        shape.push_back(size);
      }
      tensor.insert("shape", std::move(shape));
    } else {
      tensor.insert("elements", it->elements);
    }
    tensor.insert("precision", std::string(precision_name(it->precision)));
    tensors.push_back(std::move(tensor));
  }
  root.insert("tensors", std::move(tensors));
  std::ostringstream out;
  out << "# A DBench model profile: platform.timing_model = \"<this file>\" times this model.\n"
      << "# forward_flops_per_sample counts a multiply-accumulate as 2 FLOPs; tensors are listed as "
         "backward\n"
      << "# produces their gradients (last layer first).\n"
      << root << '\n';
  return out.str();
}

}  // namespace dbench::models
