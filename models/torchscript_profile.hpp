// Profiles of a user's own TorchScript module (`dbench profile MODEL.pt`): its parameters as saved, and its
// forward FLOPs counted from the operators one forward pass runs. Built with LibTorch only; this header does
// not include Torch, so the command line can name these types without compiling Torch's headers.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "models/model_profile.hpp"

namespace dbench::models {

/// The element type of the input the module is run on: images and features are float, token ids long.
enum class InputType { kFloat, kLong };

/// One operator of the forward pass, as RecordFunction names it ("aten::conv2d").
struct OpCount {
  /// The operator's name; an op counted inside another that is not counted reads "aten::bmm in aten::einsum".
  std::string name;
  /// How many times it ran in one forward pass.
  std::int64_t calls = 0;
  /// Forward FLOPs it contributed for one sample (0 for uncounted operators).
  double flops = 0.0;
};

/// What torchscript_profile found: the profile, and which operators its FLOPs come from.
struct TorchScriptProfile {
  /// Parameters from named_parameters(), forward FLOPs per sample from the counted operators.
  ModelProfile profile;
  /// The operators whose multiply-accumulates were counted, most FLOPs first.
  std::vector<OpCount> counted;
  /// Operators that usually carry FLOPs but were not counted (another convolution or matrix product, a
  /// custom operator), by name.
  std::vector<OpCount> uncounted;
};

/// How to run the module and label its profile.
struct TorchScriptOptions {
  /// The profile's name.
  std::string name;
  /// Float inputs are zeros, long inputs token id 0.
  InputType input_type = InputType::kFloat;
  /// Given to every tensor and to the compute.
  Precision precision = Precision::fp32;
};

/// Loads the TorchScript module saved at `module` (torch.jit.save), lists its trainable parameters in
/// named_parameters() order and runs it once on a batch of one sample of `input_shape` (without the batch
/// dimension: {3, 224, 224} for an image, {128} for tokens) to count its forward FLOPs: 2 x the
/// multiply-accumulates of convolutions, linear layers, matrix products and scaled dot-product attention,
/// each counted once at the outermost of these (linear's inner addmm is not counted again). Throws ModelError
/// naming the file for a file that cannot be loaded, a forward pass that fails on the input, or a module in
/// which no operator could be counted.
TorchScriptProfile torchscript_profile(const std::filesystem::path& module,
                                       const std::vector<std::int64_t>& input_shape,
                                       const TorchScriptOptions& options);

}  // namespace dbench::models
