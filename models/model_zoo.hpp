#pragma once

#include <span>
#include <string_view>
#include <vector>

#include "models/model_profile.hpp"

namespace dbench::models {

/// Timing-only models (never trained, only timed), each at its standard input: "resnet18", "resnet101",
/// "resnet152", "vgg16", "mobilenet_v2", "vit_b_16" (torchvision, 3 x 224 x 224 images, 1000 classes),
/// "bert_base" (one 128-token sequence per sample) and "gpt2_small" (one 1024-token sequence per sample).
std::span<const std::string_view> zoo_models();

/// The profile of a zoo model (ModelProfile's FLOP convention; for transformers every matmul, attention's
/// included, and no embedding, norm or activation); throws ModelError naming the zoo models on an unknown
/// name.
ModelProfile zoo_profile(std::string_view name);

/// Every model platform.timing_model can name: known_models() followed by zoo_models().
std::span<const std::string_view> timing_models();

/// The profile a model is timed with: model_profile(timing_spec(name, mlp_hidden)) for a built-in model,
/// zoo_profile(name) for a zoo model; throws ModelError naming every timing model on an unknown name.
ModelProfile timing_profile(std::string_view name, std::vector<int> mlp_hidden = {});

}  // namespace dbench::models
