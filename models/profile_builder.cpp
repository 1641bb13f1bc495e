#include "models/profile_builder.hpp"

#include <fmt/format.h>

#include <functional>
#include <numeric>
#include <utility>

#include "models/errors.hpp"

namespace dbench::models::detail {

Shape ProfileBuilder::conv(const std::string& name, Shape in, std::int64_t out_channels, std::int64_t kernel,
                           std::int64_t stride, std::int64_t padding, bool bias, std::int64_t groups) {
  if (groups < 1 || in.channels % groups != 0 || out_channels % groups != 0) {
    throw ModelError(
        fmt::format("model '{}': {} has {} input and {} output channels, not divisible into {} groups",
                    profile_.name, name, in.channels, out_channels, groups));
  }
  const Shape out{out_channels, (in.height + 2 * padding - kernel) / stride + 1,
                  (in.width + 2 * padding - kernel) / stride + 1};
  require_positive(out, name);
  const std::int64_t group_inputs = in.channels / groups;
  parameter(name + ".weight", {out_channels, group_inputs, kernel, kernel});
  if (bias) {
    parameter(name + ".bias", {out_channels});
  }
  macs_ += static_cast<double>(out.channels * out.height * out.width) *
           static_cast<double>(group_inputs * kernel * kernel);
  return out;
}

void ProfileBuilder::batch_norm(const std::string& name, std::int64_t channels) {
  parameter(name + ".weight", {channels});
  parameter(name + ".bias", {channels});
}

void ProfileBuilder::layer_norm(const std::string& name, std::int64_t features) {
  parameter(name + ".weight", {features});
  parameter(name + ".bias", {features});
}

void ProfileBuilder::embedding(const std::string& name, std::int64_t count, std::int64_t dim) {
  parameter(name + ".weight", {count, dim});
}

void ProfileBuilder::linear(const std::string& name, std::int64_t in_features, std::int64_t out_features,
                            std::int64_t rows) {
  parameter(name + ".weight", {out_features, in_features});
  parameter(name + ".bias", {out_features});
  matmul(rows, in_features, out_features);
}

void ProfileBuilder::parameter(std::string name, std::vector<std::int64_t> shape) {
  const std::int64_t elements =
      std::accumulate(shape.begin(), shape.end(), std::int64_t{1}, std::multiplies<>());
  profile_.tensors.push_back(TensorInfo{std::move(name), std::move(shape), elements});
}

void ProfileBuilder::matmul(std::int64_t rows, std::int64_t inner, std::int64_t cols) {
  macs_ += static_cast<double>(rows) * static_cast<double>(inner) * static_cast<double>(cols);
}

void ProfileBuilder::attention(std::int64_t tokens, std::int64_t width, AttentionMask mask) {
  const std::int64_t pairs = mask == AttentionMask::kCausal ? tokens * (tokens + 1) / 2 : tokens * tokens;
  // Q K^T and then the scores times V: one width-long dot product per pair each.
  macs_ += 2.0 * static_cast<double>(pairs) * static_cast<double>(width);
}

Shape ProfileBuilder::pool(const std::string& after, Shape in, std::int64_t kernel, std::int64_t stride,
                           std::int64_t padding) const {
  const Shape out{in.channels, (in.height + 2 * padding - kernel) / stride + 1,
                  (in.width + 2 * padding - kernel) / stride + 1};
  require_positive(out, "pooling after " + after);
  return out;
}

void ProfileBuilder::require_positive(Shape s, const std::string& where) const {
  if (s.height < 1 || s.width < 1) {
    throw ModelError(
        fmt::format("model '{}': a {}x{} input is too small, the feature map vanishes at {}; "
                    "use larger images or a model with less downsampling",
                    profile_.name, input_.height, input_.width, where));
  }
}

void resnet_imagenet(ProfileBuilder& b, ResNetBlock block, std::span<const int, 4> blocks,
                     std::int64_t classes) {
  const std::int64_t expansion = block == ResNetBlock::kBottleneck ? 4 : 1;
  Shape s = b.input();
  s = b.conv("conv1", s, 64, 7, 2, 3, false);
  b.batch_norm("bn1", 64);
  s = b.pool("conv1", s, 3, 2, 1);
  const std::array<std::int64_t, 4> planes = {64, 128, 256, 512};
  for (std::size_t stage = 0; stage < planes.size(); ++stage) {
    for (int index = 0; index < blocks[stage]; ++index) {
      const std::string prefix = fmt::format("layer{}.{}.", stage + 1, index);
      const std::int64_t stride = (stage > 0 && index == 0) ? 2 : 1;
      const std::int64_t out_channels = planes[stage] * expansion;
      const Shape in = s;
      if (block == ResNetBlock::kBottleneck) {
        s = b.conv(prefix + "conv1", s, planes[stage], 1, 1, 0, false);
        b.batch_norm(prefix + "bn1", planes[stage]);
        s = b.conv(prefix + "conv2", s, planes[stage], 3, stride, 1, false);
        b.batch_norm(prefix + "bn2", planes[stage]);
        s = b.conv(prefix + "conv3", s, out_channels, 1, 1, 0, false);
        b.batch_norm(prefix + "bn3", out_channels);
      } else {
        s = b.conv(prefix + "conv1", s, planes[stage], 3, stride, 1, false);
        b.batch_norm(prefix + "bn1", planes[stage]);
        s = b.conv(prefix + "conv2", s, planes[stage], 3, 1, 1, false);
        b.batch_norm(prefix + "bn2", planes[stage]);
      }
      // A 1x1 projection where the identity does not fit: a stride or a change of width.
      if (stride != 1 || in.channels != out_channels) {
        b.conv(prefix + "downsample.0", in, out_channels, 1, stride, 0, false);
        b.batch_norm(prefix + "downsample.1", out_channels);
      }
    }
  }
  b.linear("fc", 512 * expansion, classes);
}

}  // namespace dbench::models::detail
