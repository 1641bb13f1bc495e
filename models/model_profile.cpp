#include "models/model_profile.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <functional>
#include <numeric>
#include <utility>

#include "models/errors.hpp"

namespace dbench::models {

namespace {

constexpr std::array<std::string_view, 4> kKnownModels = {"mlp", "lenet", "resnet20", "resnet50"};
constexpr std::array<std::string_view, 3> kPrecisionNames = {"fp32", "bf16", "fp16"};

/// Activation shape of one sample as it flows through the network.
struct Shape {
  std::int64_t channels = 0;
  std::int64_t height = 0;
  std::int64_t width = 0;
};

/// Mirrors a module's construction: each call appends the tensors LibTorch registers, in the same order, and
/// accumulates multiply-accumulates.
class ProfileBuilder {
 public:
  ProfileBuilder(ModelProfile& profile, const ModelSpec& spec) : profile_(profile), spec_(spec) {}

  Shape conv(const std::string& name, Shape in, std::int64_t out_channels, std::int64_t kernel,
             std::int64_t stride, std::int64_t padding, bool bias) {
    const Shape out{out_channels, (in.height + 2 * padding - kernel) / stride + 1,
                    (in.width + 2 * padding - kernel) / stride + 1};
    require_positive(out, name);
    add(name + ".weight", {out_channels, in.channels, kernel, kernel});
    if (bias) {
      add(name + ".bias", {out_channels});
    }
    macs_ += static_cast<double>(out.channels * out.height * out.width) *
             static_cast<double>(in.channels * kernel * kernel);
    return out;
  }

  void batch_norm(const std::string& name, std::int64_t channels) {
    add(name + ".weight", {channels});
    add(name + ".bias", {channels});
  }

  void linear(const std::string& name, std::int64_t in_features, std::int64_t out_features) {
    add(name + ".weight", {out_features, in_features});
    add(name + ".bias", {out_features});
    macs_ += static_cast<double>(in_features) * static_cast<double>(out_features);
  }

  Shape pool(const std::string& after, Shape in, std::int64_t kernel, std::int64_t stride,
             std::int64_t padding) const {
    const Shape out{in.channels, (in.height + 2 * padding - kernel) / stride + 1,
                    (in.width + 2 * padding - kernel) / stride + 1};
    require_positive(out, "pooling after " + after);
    return out;
  }

  double macs() const { return macs_; }

 private:
  void add(std::string name, std::vector<std::int64_t> shape) {
    const std::int64_t elements =
        std::accumulate(shape.begin(), shape.end(), std::int64_t{1}, std::multiplies<>());
    profile_.tensors.push_back(TensorInfo{std::move(name), std::move(shape), elements});
  }

  void require_positive(Shape s, const std::string& where) const {
    if (s.height < 1 || s.width < 1) {
      throw ModelError(
          fmt::format("model '{}': a {}x{} input is too small, the feature map vanishes at {}; "
                      "use larger images or a model with less downsampling",
                      spec_.name, spec_.input_height, spec_.input_width, where));
    }
  }

  ModelProfile& profile_;
  const ModelSpec& spec_;
  double macs_ = 0.0;
};

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
  constexpr std::int64_t kExpansion = 4;
  Shape s{spec.input_channels, spec.input_height, spec.input_width};
  s = b.conv("conv1", s, 64, 7, 2, 3, false);
  b.batch_norm("bn1", 64);
  s = b.pool("conv1", s, 3, 2, 1);
  const std::array<std::int64_t, 4> planes = {64, 128, 256, 512};
  const std::array<int, 4> blocks = {3, 4, 6, 3};
  for (std::size_t stage = 0; stage < planes.size(); ++stage) {
    for (int block = 0; block < blocks[stage]; ++block) {
      const std::string prefix = fmt::format("layer{}.{}.", stage + 1, block);
      // torchvision's v1.5 layout: the stride sits on the 3x3 convolution.
      const std::int64_t stride = (stage > 0 && block == 0) ? 2 : 1;
      const Shape in = s;
      s = b.conv(prefix + "conv1", s, planes[stage], 1, 1, 0, false);
      b.batch_norm(prefix + "bn1", planes[stage]);
      s = b.conv(prefix + "conv2", s, planes[stage], 3, stride, 1, false);
      b.batch_norm(prefix + "bn2", planes[stage]);
      s = b.conv(prefix + "conv3", s, planes[stage] * kExpansion, 1, 1, 0, false);
      b.batch_norm(prefix + "bn3", planes[stage] * kExpansion);
      if (block == 0) {
        b.conv(prefix + "downsample.0", in, planes[stage] * kExpansion, 1, stride, 0, false);
        b.batch_norm(prefix + "downsample.1", planes[stage] * kExpansion);
      }
    }
  }
  b.linear("fc", 512 * kExpansion, spec.classes);
}

void validate(const ModelSpec& spec) {
  if (std::find(kKnownModels.begin(), kKnownModels.end(), spec.name) == kKnownModels.end()) {
    throw ModelError(
        fmt::format("unknown model '{}': known models are {}", spec.name, fmt::join(kKnownModels, ", ")));
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
  return kKnownModels;
}

ModelProfile model_profile(const ModelSpec& spec) {
  validate(spec);
  ModelProfile profile;
  profile.name = spec.name;
  ProfileBuilder builder(profile, spec);
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
