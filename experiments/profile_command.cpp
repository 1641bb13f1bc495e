// `dbench profile`: a TorchScript module's profile file (models/torchscript_profile.hpp), for
// platform.timing_model, with a report of which operators its FLOPs come from.
#include <fmt/core.h>

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "experiments/commands.hpp"
#include "experiments/config_checks.hpp"
#include "models/model_profile.hpp"

#if defined(DBENCH_HAVE_TORCH)
#include <cstdio>

#include "models/profile_file.hpp"
#include "models/torchscript_profile.hpp"
#include "results/atomic_file.hpp"
#endif

namespace dbench::experiments {
namespace {

struct ProfileOptions {
  std::string model;
  std::string input;
  std::string input_dtype = "float";
  std::string out;
  std::string name;
  std::string precision = "fp32";
};

/// "3x224x224" as {3, 224, 224}: positive integers separated by 'x'.
std::vector<std::int64_t> parse_input_shape(const std::string& text) {
  std::vector<std::int64_t> shape;
  for (std::size_t start = 0; start <= text.size();) {
    const std::size_t end = std::min(text.find('x', start), text.size());
    std::int64_t value = 0;
    const auto [stop, error] = std::from_chars(text.data() + start, text.data() + end, value);
    if (end == start || error != std::errc() || stop != text.data() + end || value < 1) {
      throw std::invalid_argument(
          fmt::format("--input: expected positive dimensions separated by 'x' (3x224x224, or 128 for a "
                      "sequence), got '{}'",
                      text));
    }
    shape.push_back(value);
    start = end + 1;
  }
  return shape;
}

#if defined(DBENCH_HAVE_TORCH)

// One of precision_names(), which --precision checked.
models::Precision parse_precision(const std::string& name) {
  const auto names = models::precision_names();
  return static_cast<models::Precision>(std::find(names.begin(), names.end(), name) - names.begin());
}

// The coverage of the count goes to stdout beside a written file, to stderr when stdout carries the profile.
void print_report(std::FILE* to, const models::TorchScriptProfile& result, const std::string& input) {
  const auto& profile = result.profile;
  fmt::print(to, "{:<16}{}\n", "model", profile.name);
  fmt::print(to, "{:<16}{} in {} tensors ({} bytes at {})\n", "parameters", profile.parameter_count(),
             profile.tensors.size(), profile.parameter_bytes(),
             models::precision_name(profile.compute_precision));
  fmt::print(to, "{:<16}{:.6g} per sample of {} (backward: 2 x forward)\n", "forward FLOPs",
             profile.forward_flops_per_sample, input);
  fmt::print(to, "counted:\n");
  for (const auto& op : result.counted) {
    fmt::print(to, "  {:<40}{:>6} calls {:>12.4g} FLOPs {:>6.1f} %\n", op.name, op.calls, op.flops,
               100.0 * op.flops / profile.forward_flops_per_sample);
  }
  fmt::print(to, "not counted:{}\n",
             result.uncounted.empty() ? " none (no other convolution, product or custom operator ran)" : "");
  for (const auto& op : result.uncounted) {
    fmt::print(to, "  {:<40}{:>6} calls\n", op.name, op.calls);
  }
  fmt::print(
      to,
      "Element-wise operations, normalization, activations, softmax, pooling and embedding lookups are "
      "not counted, by convention (as in the built-in models' profiles).\n");
}

void run(const ProfileOptions& o) {
  const auto shape = parse_input_shape(o.input);
  models::TorchScriptOptions options;
  options.name = o.name.empty() ? std::filesystem::path(o.model).stem().string() : o.name;
  options.input_type = o.input_dtype == "long" ? models::InputType::kLong : models::InputType::kFloat;
  options.precision = parse_precision(o.precision);
  const auto result = models::torchscript_profile(o.model, shape, options);
  const auto text = models::profile_file_text(result.profile);
  const auto input = fmt::format("{} {}", o.input, o.input_dtype);
  if (o.out.empty()) {
    print_report(stderr, result, input);
    fmt::print("{}", text);
    return;
  }
  try {
    results::write_user_file(o.out, text);
  } catch (const std::runtime_error& e) {
    throw std::runtime_error(fmt::format("--out: {}", e.what()));
  }
  if (o.out == "-") {
    print_report(stderr, result, input);  // standard output holds the profile
    return;
  }
  print_report(stdout, result, input);
  fmt::print("wrote {}\n", o.out);
}

#else

void run(const ProfileOptions& o) {
  parse_input_shape(o.input);
  throw std::runtime_error(
      "profile: this dbench was built without LibTorch, which loads and runs TorchScript modules; rebuild it "
      "with LibTorch installed (-DDBENCH_WITH_TORCH=ON)");
}

#endif

}  // namespace

void add_profile_command(CLI::App& app) {
  auto options = std::make_shared<ProfileOptions>();
  auto* cmd = app.add_subcommand(
      "profile",
      "Write the profile of your own TorchScript module (torch.jit.save) for platform.timing_model: its "
      "trainable parameters as named_parameters() lists them, and its forward FLOPs, counted while it runs "
      "once on a zero input of batch 1: 2 x the multiply-accumulates of convolutions, linear layers, matrix "
      "products and attention. It prints which operators were counted and which operators that usually carry "
      "FLOPs were not.");
  cmd->add_option("model", options->model, "the TorchScript module (.pt)")->required()->type_name("MODEL.pt");
  cmd->add_option("--input", options->input,
                  "one sample's input shape without the batch dimension, dimensions separated by 'x': "
                  "3x224x224 for an image, 128 for a sequence of token ids (with --input-dtype long)")
      ->required()
      ->type_name("DIMS");
  cmd->add_option("--input-dtype", options->input_dtype,
                  "the input's element type: float, or long for token ids")
      ->check(CLI::IsMember({"float", "long"}))
      ->capture_default_str();
  cmd->add_option("--out", options->out, "write the profile file to FILE (default: print it to stdout)")
      ->type_name("FILE")
      ->check(non_empty_path());
  cmd->add_option("--name", options->name, "the profile's name (default: the module file's stem)");
  cmd->add_option("--precision", options->precision,
                  "the precision of every tensor and of the compute: " + join(models::precision_names()))
      ->check(CLI::IsMember(
          std::vector<std::string>(models::precision_names().begin(), models::precision_names().end())))
      ->capture_default_str();
  cmd->callback([options] { run(*options); });
}

}  // namespace dbench::experiments
