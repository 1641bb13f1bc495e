#include "models/torchscript_profile.hpp"

#include <ATen/record_function.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <torch/csrc/jit/runtime/graph_executor.h>
#include <torch/script.h>

#include <algorithm>
#include <array>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <utility>

#include "models/errors.hpp"

namespace dbench::models {

namespace {

/// How the multiply-accumulates of one call follow from its inputs and its output: `fixed` from the inputs
/// alone, plus `per_output` for each element of its first output (one dot product of that length each).
struct MacRule {
  double fixed = 0.0;
  double per_output = 0.0;
};

constexpr std::array<std::string_view, 6> kConvolutions = {"aten::conv1d",       "aten::conv2d",
                                                           "aten::conv3d",       "aten::convolution",
                                                           "aten::_convolution", "aten::_convolution_mode"};
constexpr std::array<std::string_view, 3> kTransposedConvolutions = {
    "aten::conv_transpose1d", "aten::conv_transpose2d", "aten::conv_transpose3d"};
// Products whose inner dimension is the last one of the input at the given index.
constexpr std::array<std::pair<std::string_view, std::size_t>, 13> kProducts = {
    {{"aten::linear", 1},
     {"aten::addmm", 1},
     {"aten::addmm_", 1},
     {"aten::_addmm_activation", 1},
     {"aten::mm", 0},
     {"aten::matmul", 0},
     {"aten::bmm", 0},
     {"aten::baddbmm", 1},
     {"aten::baddbmm_", 1},
     {"aten::mv", 0},
     {"aten::addmv", 1},
     {"aten::addmv_", 1},
     {"aten::dot", 0}}};
// Attention and the index of its is_causal flag (1.13's private op also has need_attn_weights before it).
constexpr std::array<std::pair<std::string_view, std::size_t>, 2> kAttention = {
    {{"aten::_scaled_dot_product_attention", 6}, {"aten::scaled_dot_product_attention", 5}}};

bool is_one_of(std::span<const std::string_view> names, std::string_view name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

/// The index that goes with `name` in `table`, if it is there.
std::optional<std::size_t> index_for(std::span<const std::pair<std::string_view, std::size_t>> table,
                                     std::string_view name) {
  const auto entry = std::find_if(table.begin(), table.end(), [&](const auto& e) { return e.first == name; });
  return entry == table.end() ? std::nullopt : std::optional(entry->second);
}

std::optional<at::Tensor> tensor_input(c10::ArrayRef<const c10::IValue> inputs, std::size_t index) {
  if (index < inputs.size() && inputs[index].isTensor()) {
    return inputs[index].toTensor();
  }
  return std::nullopt;
}

double dim(const at::Tensor& t, std::int64_t index) {
  return static_cast<double>(t.size(index));
}

// A convolution's weight is (out, in / groups, kernel...): each output element is one
// (in / groups) x kernel-long dot product. A transposed one's weight is (in, out / groups, kernel...): each
// input element is spread over (out / groups) x kernel outputs.
std::optional<MacRule> convolution_rule(c10::ArrayRef<const c10::IValue> inputs, bool transposed) {
  const auto input = tensor_input(inputs, 0);
  const auto weight = tensor_input(inputs, 1);
  if (!input || !weight || weight->dim() < 2 || weight->size(0) == 0) {
    return std::nullopt;
  }
  const double per_filter = static_cast<double>(weight->numel()) / dim(*weight, 0);
  if (transposed) {
    return MacRule{static_cast<double>(input->numel()) * per_filter, 0.0};
  }
  return MacRule{0.0, per_filter};
}

// Both products of attention, Q K^T and the weighted sum of V, over (batch..., L, E) queries and (batch...,
// S, E) keys; a causal mask leaves L (L + 1) / 2 pairs, as ProfileBuilder::attention counts them.
std::optional<MacRule> attention_rule(c10::ArrayRef<const c10::IValue> inputs, std::size_t causal_index) {
  const auto q = tensor_input(inputs, 0);
  const auto k = tensor_input(inputs, 1);
  const auto v = tensor_input(inputs, 2);
  if (!q || !k || !v || q->dim() < 2 || k->dim() < 2 || v->dim() < 2 || q->numel() == 0) {
    return std::nullopt;
  }
  const double queries = dim(*q, -2);
  const double keys = dim(*k, -2);
  const double batch = static_cast<double>(q->numel()) / (queries * dim(*q, -1));
  const bool causal = causal_index < inputs.size() && inputs[causal_index].isBool() &&
                      inputs[causal_index].toBool() && queries == keys;
  const double pairs = causal ? queries * (queries + 1) / 2 : queries * keys;
  return MacRule{batch * pairs * (dim(*q, -1) + dim(*v, -1)), 0.0};
}

/// Whether `name` is one of the counted operators; its rule when the inputs are as expected.
std::optional<std::optional<MacRule>> counted_rule(std::string_view name,
                                                   c10::ArrayRef<const c10::IValue> inputs) {
  if (is_one_of(kConvolutions, name)) {
    // convolution and _convolution take `transposed` after input, weight, bias, stride, padding, dilation.
    const bool transposed = inputs.size() > 6 && inputs[6].isBool() && inputs[6].toBool();
    return convolution_rule(inputs, transposed);
  }
  if (is_one_of(kTransposedConvolutions, name)) {
    return convolution_rule(inputs, true);
  }
  if (const auto index = index_for(kProducts, name)) {
    const auto operand = tensor_input(inputs, *index);
    if (!operand || operand->dim() == 0) {
      return std::optional<MacRule>();
    }
    return std::optional<MacRule>(MacRule{0.0, dim(*operand, -1)});
  }
  if (const auto causal_index = index_for(kAttention, name)) {
    return attention_rule(inputs, *causal_index);
  }
  return std::nullopt;
}

/// Operators that usually carry FLOPs: another convolution or matrix product ("aten::mkldnn_convolution",
/// "aten::addbmm"), or one outside ATen (a custom or quantized operator).
bool likely_carries_flops(std::string_view name) {
  const auto separator = name.find("::");
  const auto space = name.substr(0, separator);
  if (separator == std::string_view::npos || (space != "aten" && space != "prim" && space != "profiler")) {
    return true;
  }
  // Word by word, so that "aten::cummax" is not a matrix product.
  for (auto rest = name.substr(separator + 2); !rest.empty();) {
    const auto end = std::min(rest.find('_'), rest.size());
    const auto word = rest.substr(0, end);
    if (word.starts_with("conv") || word.ends_with("mm") || word.find("matmul") != std::string_view::npos) {
      return true;
    }
    rest.remove_prefix(std::min(end + 1, rest.size()));
  }
  return false;
}

/// One call in progress, from its start callback to its end callback.
struct Call : at::ObserverContext {
  /// A counted operator: nothing it calls is counted again.
  bool counted_family = false;
  /// How many values it returns, the last ones of RecordFunction's outputs.
  std::size_t returns = 1;
  std::string label;
  std::optional<MacRule> rule;
  /// For an operator that usually carries FLOPs but has no rule: how many calls had been counted when it
  /// started. It is listed as not counted only if none of the operators it ran could be counted.
  std::optional<std::int64_t> counted_before;
};

/// Counts the operators of one forward pass as RecordFunction reports them, outermost counted call only.
class FlopCounter {
 public:
  std::unique_ptr<at::ObserverContext> enter(const at::RecordFunction& fn) {
    const std::string_view name = fn.name();
    auto call = std::make_unique<Call>();
    if (depth_++ == 0) {
      outermost_ = name;
    }
    if (counted_depth_ > 0) {
      return call;
    }
    const auto schema = fn.operator_schema();
    // A call from the TorchScript interpreter sees the interpreter's whole stack; its arguments are on top.
    auto inputs = fn.inputs();
    if (schema && schema->arguments().size() <= inputs.size()) {
      inputs = inputs.slice(inputs.size() - schema->arguments().size());
    }
    if (auto rule = counted_rule(name, inputs)) {
      call->counted_family = true;
      call->returns = schema ? schema->returns().size() : 1;
      call->rule = *rule;
      call->label = name == outermost_ ? std::string(name) : fmt::format("{} in {}", name, outermost_);
      ++counted_depth_;
    } else if (likely_carries_flops(name)) {
      call->counted_before = counted_calls_;
    }
    return call;
  }

  void leave(const at::RecordFunction& fn, at::ObserverContext* context) {
    --depth_;
    auto* call = static_cast<Call*>(context);
    if (call != nullptr && call->counted_before == counted_calls_) {
      ++uncounted_[std::string(fn.name())];
    }
    if (call == nullptr || !call->counted_family) {
      return;
    }
    --counted_depth_;
    const auto& outputs = fn.outputs();
    const auto first = outputs.size() >= call->returns ? outputs.size() - call->returns : 0;
    const bool has_output = first < outputs.size() && outputs[first].isTensor();
    if (!call->rule || (call->rule->per_output > 0.0 && !has_output)) {
      ++uncounted_[call->label];
      return;
    }
    const double elements = has_output ? static_cast<double>(outputs[first].toTensor().numel()) : 0.0;
    auto& count = counted_[call->label];
    count.calls += 1;
    ++counted_calls_;
    count.flops += 2.0 * (call->rule->fixed + call->rule->per_output * elements);
  }

  std::vector<OpCount> counted() const {
    std::vector<OpCount> ops;
    for (const auto& [name, count] : counted_) {
      ops.push_back({name, count.calls, count.flops});
    }
    std::stable_sort(ops.begin(), ops.end(),
                     [](const OpCount& a, const OpCount& b) { return a.flops > b.flops; });
    return ops;
  }

  std::vector<OpCount> uncounted() const {
    std::vector<OpCount> ops;
    for (const auto& [name, calls] : uncounted_) {
      ops.push_back({name, calls, 0.0});
    }
    return ops;
  }

 private:
  struct Count {
    std::int64_t calls = 0;
    double flops = 0.0;
  };
  int depth_ = 0;
  int counted_depth_ = 0;
  std::int64_t counted_calls_ = 0;
  std::string outermost_;
  std::map<std::string, Count> counted_;
  std::map<std::string, std::int64_t> uncounted_;
};

// RecordFunction takes plain function pointers: they reach the counter of the pass running on this thread
// through this pointer, which Observation sets for that pass only.
thread_local FlopCounter* active_counter = nullptr;

std::unique_ptr<at::ObserverContext> on_enter(const at::RecordFunction& fn) {
  return active_counter == nullptr ? nullptr : active_counter->enter(fn);
}

void on_leave(const at::RecordFunction& fn, at::ObserverContext* context) {
  if (active_counter != nullptr) {
    active_counter->leave(fn, context);
  }
}

/// Observes every operator this thread runs while it lives.
class Observation {
 public:
  explicit Observation(FlopCounter& counter)
      : previous_(std::exchange(active_counter, &counter)),
        handle_(at::addThreadLocalCallback(at::RecordFunctionCallback(on_enter, on_leave)
                                               .needsInputs(true)
                                               .needsOutputs(true)
                                               .scopes({at::RecordScope::FUNCTION}))) {}
  Observation(const Observation&) = delete;
  Observation& operator=(const Observation&) = delete;
  ~Observation() {
    at::removeCallback(handle_);
    active_counter = previous_;
  }

 private:
  FlopCounter* previous_;
  at::CallbackHandle handle_;
};

// Torch's own errors can carry a C++ backtrace; the message without it.
std::string_view reason(const std::exception& e) {
  const auto* error = dynamic_cast<const c10::Error*>(&e);
  return error != nullptr ? error->what_without_backtrace() : e.what();
}

// A load error's reason: the first line of torch's message that says something, without torch's request for
// better messages, and in words a user can act on where torch's are its own internals.
std::string load_reason(std::string_view message) {
  constexpr std::string_view kRequest = "(Could this error message be improved?";
  while (!message.empty()) {
    const auto end = message.find('\n');
    std::string_view line = message.substr(0, end);
    message = end == std::string_view::npos ? std::string_view() : message.substr(end + 1);
    if (const auto request = line.find(kRequest); request != std::string_view::npos) {
      line = line.substr(0, request);
    }
    while (!line.empty() && (line.back() == ' ' || line.back() == '\r')) {
      line.remove_suffix(1);
    }
    while (!line.empty() && line.front() == ' ') {
      line.remove_prefix(1);
    }
    if (line.find("hasRecord(\"version\")") != std::string_view::npos) {
      return "a ZIP archive without TorchScript's version record, not a module saved by torch.jit.save";
    }
    if (!line.empty()) {
      return std::string(line);
    }
  }
  return "not a module saved by torch.jit.save (torch gave no reason)";
}

// The TorchScript interpreter's messages end in the reason, after the script's call stack.
std::string last_line(std::string_view message) {
  while (!message.empty() && message.back() == '\n') {
    message.remove_suffix(1);
  }
  const auto start = message.rfind('\n');
  return std::string(start == std::string_view::npos ? message : message.substr(start + 1));
}

torch::jit::Module load(const std::filesystem::path& file) {
  std::error_code error;
  const auto status = std::filesystem::status(file, error);
  if (!std::filesystem::is_regular_file(status)) {
    throw ModelError(fmt::format("cannot read TorchScript module '{}': {}", file.string(),
                                 std::filesystem::exists(status) ? "not a regular file" : "no such file"));
  }
  if (std::filesystem::file_size(file, error) == 0 && !error) {
    throw ModelError(fmt::format("cannot load TorchScript module '{}': the file is empty", file.string()));
  }
  try {
    return torch::jit::load(file.string(), torch::kCPU);
  } catch (const std::exception& e) {
    throw ModelError(
        fmt::format("cannot load TorchScript module '{}': {}", file.string(), load_reason(reason(e))));
  }
}

std::vector<TensorInfo> trainable_tensors(const torch::jit::Module& module, Precision precision) {
  std::vector<TensorInfo> tensors;
  for (const auto& parameter : module.named_parameters(/*recurse=*/true)) {
    if (parameter.value.requires_grad()) {
      const auto sizes = parameter.value.sizes();
      tensors.push_back(TensorInfo{parameter.name, std::vector<std::int64_t>(sizes.begin(), sizes.end()),
                                   parameter.value.numel(), precision});
    }
  }
  return tensors;
}

}  // namespace

TorchScriptProfile torchscript_profile(const std::filesystem::path& module,
                                       const std::vector<std::int64_t>& input_shape,
                                       const TorchScriptOptions& options) {
  if (input_shape.empty() ||
      std::any_of(input_shape.begin(), input_shape.end(), [](std::int64_t d) { return d < 1; })) {
    throw ModelError(fmt::format("input shape [{}] of '{}' must have positive dimensions",
                                 fmt::join(input_shape, ", "), module.string()));
  }
  auto script = load(module);
  TorchScriptProfile result;
  result.profile.name = options.name;
  result.profile.tensors = trainable_tensors(script, options.precision);
  result.profile.compute_precision = options.precision;

  std::vector<std::int64_t> shape = {1};
  shape.insert(shape.end(), input_shape.begin(), input_shape.end());
  const bool is_long = options.input_type == InputType::kLong;
  FlopCounter counter;
  try {
    script.eval();
    const torch::NoGradGuard no_grad;
    // The operators as written: the graph executor's fusions would hide convolutions and products.
    const torch::jit::GraphOptimizerEnabledGuard unoptimized(false);
    const auto input = torch::zeros(shape, is_long ? torch::kLong : torch::kFloat);
    const Observation observation(counter);
    script.forward({input});
  } catch (const std::exception& e) {
    throw ModelError(fmt::format("'{}': the forward pass on a {} {} input failed: {}", module.string(),
                                 fmt::join(shape, "x"), is_long ? "long" : "float", last_line(reason(e))));
  }
  result.counted = counter.counted();
  result.uncounted = counter.uncounted();
  for (const auto& op : result.counted) {
    result.profile.forward_flops_per_sample += op.flops;
  }
  if (result.profile.forward_flops_per_sample <= 0.0) {
    std::vector<std::string> names;
    for (const auto& op : result.uncounted) {
      names.push_back(op.name);
    }
    throw ModelError(fmt::format(
        "'{}': no convolution, linear layer or matrix product ran in the forward pass, so there are no FLOPs "
        "to time{}",
        module.string(), names.empty() ? "" : fmt::format(" (not counted: {})", fmt::join(names, ", "))));
  }
  result.profile.backward_flops_per_sample = 2.0 * result.profile.forward_flops_per_sample;
  return result;
}

}  // namespace dbench::models
