#include "models/model_profile.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <utility>

#include "models/errors.hpp"
#include "models/profile_builder.hpp"

namespace dbench::models {

namespace {

constexpr std::array<std::string_view, 3> kPrecisionNames = {"fp32", "bf16", "fp16"};

using detail::ProfileBuilder;
using detail::Shape;

void profile_mlp(const ModelSpec& spec, ProfileBuilder& b) {
  std::int64_t in = std::int64_t{spec.input_channels} * spec.input_height * spec.input_width;
  int index = 1;
  for (int width : spec.mlp_hidden) {
    b.linear(fmt::format("fc{}", index++), in, width);
    in = width;
  }
  b.linear(fmt::format("fc{}", index), in, spec.classes);
}

void profile_lenet(const ModelSpec& spec, ProfileBuilder& b) {
  // Padding 2 on 28x28 inputs reproduces LeNet-5's 32x32 geometry (5x5x16 maps before fc1).
  const std::int64_t pad = std::min(spec.input_height, spec.input_width) < 32 ? 2 : 0;
  Shape s{spec.input_channels, spec.input_height, spec.input_width};
  s = b.conv("conv1", s, 6, 5, 1, pad, true);
  s = b.pool("conv1", s, 2, 2, 0);
  s = b.conv("conv2", s, 16, 5, 1, 0, true);
  s = b.pool("conv2", s, 2, 2, 0);
  b.linear("fc1", s.channels * s.height * s.width, 120);
  b.linear("fc2", 120, 84);
  b.linear("fc3", 84, spec.classes);
}

void profile_resnet20(const ModelSpec& spec, ProfileBuilder& b) {
  Shape s{spec.input_channels, spec.input_height, spec.input_width};
  s = b.conv("conv1", s, 16, 3, 1, 1, false);
  b.batch_norm("bn1", 16);
  const std::array<std::int64_t, 3> widths = {16, 32, 64};
  for (std::size_t stage = 0; stage < widths.size(); ++stage) {
    for (int block = 0; block < 3; ++block) {
      const std::string prefix = fmt::format("layer{}.{}.", stage + 1, block);
      const std::int64_t stride = (stage > 0 && block == 0) ? 2 : 1;
      // Option-A shortcuts (subsample and zero-pad channels) have no parameters.
      s = b.conv(prefix + "conv1", s, widths[stage], 3, stride, 1, false);
      b.batch_norm(prefix + "bn1", widths[stage]);
      s = b.conv(prefix + "conv2", s, widths[stage], 3, 1, 1, false);
      b.batch_norm(prefix + "bn2", widths[stage]);
    }
  }
  b.linear("fc", 64, spec.classes);
}

void profile_resnet50(const ModelSpec& spec, ProfileBuilder& b) {
  constexpr std::array<int, 4> kBlocks = {3, 4, 6, 3};
  detail::resnet_imagenet(b, detail::ResNetBlock::kBottleneck, kBlocks, spec.classes);
}

void validate(const ModelSpec& spec) {
  const auto known = known_models();
  if (std::find(known.begin(), known.end(), spec.name) == known.end()) {
    throw ModelError(
        fmt::format("unknown model '{}': known models are {}", spec.name, fmt::join(known, ", ")));
  }
  if (spec.input_channels < 1 || spec.input_height < 1 || spec.input_width < 1) {
    throw ModelError(
        fmt::format("model '{}': input shape {}x{}x{} (channels x height x width) must be positive",
                    spec.name, spec.input_channels, spec.input_height, spec.input_width));
  }
  if (spec.classes < 1) {
    throw ModelError(fmt::format("model '{}': classes = {} must be at least 1", spec.name, spec.classes));
  }
  if (spec.name == "mlp") {
    for (int width : spec.mlp_hidden) {
      if (width < 1) {
        throw ModelError(fmt::format("model 'mlp': hidden widths [{}] must all be positive",
                                     fmt::join(spec.mlp_hidden, ", ")));
      }
    }
  }
}

}  // namespace

std::int64_t ModelProfile::parameter_count() const {
  std::int64_t total = 0;
  for (const auto& t : tensors) {
    total += t.elements;
  }
  return total;
}

std::int64_t ModelProfile::parameter_bytes() const {
  std::int64_t total = 0;
  for (const auto& t : tensors) {
    total += t.elements * precision_bytes(t.precision);
  }
  return total;
}

std::string_view precision_name(Precision precision) {
  return kPrecisionNames[static_cast<std::size_t>(precision)];
}

int precision_bytes(Precision precision) {
  return precision == Precision::fp32 ? 4 : 2;
}

std::span<const std::string_view> precision_names() {
  return kPrecisionNames;
}

std::span<const std::string_view> known_models() {
  return std::span(detail::kTimingModels).first(detail::kBuiltInModelCount);
}

ModelProfile model_profile(const ModelSpec& spec) {
  validate(spec);
  ModelProfile profile;
  profile.name = spec.name;
  ProfileBuilder builder(profile, Shape{spec.input_channels, spec.input_height, spec.input_width});
  if (spec.name == "mlp") {
    profile_mlp(spec, builder);
  } else if (spec.name == "lenet") {
    profile_lenet(spec, builder);
  } else if (spec.name == "resnet20") {
    profile_resnet20(spec, builder);
  } else {
    profile_resnet50(spec, builder);
  }
  profile.forward_flops_per_sample = 2.0 * builder.macs();
  profile.backward_flops_per_sample = 2.0 * profile.forward_flops_per_sample;
  return profile;
}

ModelSpec timing_spec(std::string_view name, std::vector<int> mlp_hidden) {
  ModelSpec spec;
  spec.name = std::string(name);
  if (name == "resnet50") {
    spec.input_channels = 3;
    spec.input_height = 224;
    spec.input_width = 224;
    spec.classes = 1000;
  } else if (name == "resnet20") {
    spec.input_channels = 3;
    spec.input_height = 32;
    spec.input_width = 32;
    spec.classes = 10;
  } else {
    spec.mlp_hidden = std::move(mlp_hidden);
  }
  return spec;
}

}  // namespace dbench::models
