// Internal to models/: what model_profile.cpp and model_zoo.cpp share to describe a network's tensors and
// multiply-accumulates. Not installed, not included outside models/.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "models/model_profile.hpp"

namespace dbench::models::detail {

/// Every model that can be timed, one list: the built-in models (known_models(), which also train) and then
/// the timing-only zoo (zoo_models()).
inline constexpr std::array<std::string_view, 12> kTimingModels = {
    "mlp",       "lenet", "resnet20",     "resnet50", "resnet18",  "resnet101",
    "resnet152", "vgg16", "mobilenet_v2", "vit_b_16", "bert_base", "gpt2_small"};
/// How many of kTimingModels, from the front, are built-in models.
inline constexpr std::size_t kBuiltInModelCount = 4;

/// Activation shape of one image sample as it flows through a convolutional network.
struct Shape {
  std::int64_t channels = 0;
  std::int64_t height = 0;
  std::int64_t width = 0;
};

/// Whether each token attends to every token or only to itself and those before it.
enum class AttentionMask { kNone, kCausal };

/// Mirrors a module's construction: each call appends the tensors the module registers, in named_parameters()
/// order, and accumulates the multiply-accumulates of one sample's forward pass.
class ProfileBuilder {
 public:
  /// Appends to `profile`, whose name is already set; `input` is the image the model takes (named in errors
  /// about inputs too small; empty for sequence models).
  explicit ProfileBuilder(ModelProfile& profile, Shape input = {}) : profile_(profile), input_(input) {}

  /// The input image shape given at construction.
  Shape input() const { return input_; }

  /// nn.Conv2d with a square kernel; `groups` = channels makes it depthwise (each output channel sees
  /// in_channels / groups inputs).
  Shape conv(const std::string& name, Shape in, std::int64_t out_channels, std::int64_t kernel,
             std::int64_t stride, std::int64_t padding, bool bias, std::int64_t groups = 1);

  /// nn.BatchNorm2d's affine weight and bias (running statistics are buffers); not counted as compute.
  void batch_norm(const std::string& name, std::int64_t channels);

  /// nn.LayerNorm's weight and bias; not counted as compute.
  void layer_norm(const std::string& name, std::int64_t features);

  /// nn.Embedding's table; a lookup, not counted as compute.
  void embedding(const std::string& name, std::int64_t count, std::int64_t dim);

  /// nn.Linear (weight (out, in) and bias) applied to `rows` vectors: one for a classifier, the sequence
  /// length for a per-token layer.
  void linear(const std::string& name, std::int64_t in_features, std::int64_t out_features,
              std::int64_t rows = 1);

  /// A tensor registered directly (a class token, a position table, a fused projection); no compute.
  void parameter(std::string name, std::vector<std::int64_t> shape);

  /// The multiply-accumulates of a (rows x inner) by (inner x cols) product that has no tensor of its own
  /// (the other half of a fused projection, a head tied to an embedding).
  void matmul(std::int64_t rows, std::int64_t inner, std::int64_t cols);

  /// Attention scores Q K^T and the weighted values over `tokens` tokens, summed over heads of total width
  /// `width`: each is one width-long dot product per (query, key) pair. A causal mask leaves
  /// tokens (tokens + 1) / 2 pairs: fused causal kernels skip the masked ones, and the count then matches
  /// Kaplan et al.'s 2 n_ctx d_attn FLOPs per token and layer.
  void attention(std::int64_t tokens, std::int64_t width, AttentionMask mask);

  /// Pooling's output shape (no parameters, not counted as compute); `after` names the layer it follows.
  Shape pool(const std::string& after, Shape in, std::int64_t kernel, std::int64_t stride,
             std::int64_t padding) const;

  /// Multiply-accumulates of one sample's forward pass so far.
  double macs() const { return macs_; }

 private:
  void require_positive(Shape s, const std::string& where) const;

  ModelProfile& profile_;
  Shape input_;
  double macs_ = 0.0;
};

/// The residual block torchvision's ResNets are built from.
enum class ResNetBlock { kBasic, kBottleneck };

/// torchvision's ImageNet ResNet (v1.5: a bottleneck's stride sits on its 3x3 convolution): a 7x7/2 stem
/// and 3x3/2 max pool, four stages of `blocks` blocks with 64, 128, 256, 512 planes, then the classifier.
void resnet_imagenet(ProfileBuilder& b, ResNetBlock block, std::span<const int, 4> blocks,
                     std::int64_t classes);

}  // namespace dbench::models::detail
