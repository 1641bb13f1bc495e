#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace dbench::models {

/// What to build: a model name and the shape of its input and output.
struct ModelSpec {
  /// One of known_models(): "mlp", "lenet", "resnet20", "resnet50".
  std::string name = "mlp";
  /// Input image channels (1 for Fashion-MNIST, 3 for CIFAR-10 and ImageNet).
  int input_channels = 1;
  /// Input image height in pixels.
  int input_height = 28;
  /// Input image width in pixels.
  int input_width = 28;
  /// Number of output classes.
  int classes = 10;
  /// Hidden layer widths of the MLP (ignored by the other models); empty gives a linear classifier.
  std::vector<int> mlp_hidden = {64};
};

/// A number format of parameters and of compute: fp32, or one of the 16-bit formats of mixed precision.
enum class Precision { fp32, bf16, fp16 };

/// "fp32", "bf16" or "fp16".
std::string_view precision_name(Precision precision);
/// Bytes of one element: 4 for fp32, 2 for bf16 and fp16.
int precision_bytes(Precision precision);
/// The precisions by name, in enum order.
std::span<const std::string_view> precision_names();

/// One parameter tensor, named as the LibTorch module's named_parameters() names it.
struct TensorInfo {
  /// Dotted name, e.g. "layer1.0.conv1.weight".
  std::string name;
  /// Shape, outermost dimension first.
  std::vector<std::int64_t> shape;
  /// Product of the shape.
  std::int64_t elements = 0;
  /// How the tensor is stored and sent: a bf16 tensor moves half the bytes of an fp32 one.
  Precision precision = Precision::fp32;
};

/// A model's trainable tensors and compute cost, without building or running the model.
///
/// FLOP convention: a multiply-accumulate counts as 2 FLOPs; only convolutions, fully connected layers and
/// (in transformers) the attention products are counted (bias additions, normalization, embeddings,
/// activations, softmax and pooling are left out, as in the published "4.1 GMACs" figure for ResNet-50);
/// backward = 2 x forward (gradients with respect to inputs and to weights).
struct ModelProfile {
  /// The model name from ModelSpec, or the zoo model's name (model_zoo.hpp).
  std::string name;
  /// Trainable parameters in named_parameters() order; BatchNorm running statistics are buffers, not listed.
  std::vector<TensorInfo> tensors;
  /// Forward FLOPs for one sample (2 x multiply-accumulates).
  double forward_flops_per_sample = 0.0;
  /// Backward FLOPs for one sample (2 x forward by convention).
  double backward_flops_per_sample = 0.0;
  /// The precision the GPU computes in; it selects the platform's compute rate for it.
  Precision compute_precision = Precision::fp32;

  /// Total number of trainable scalars.
  std::int64_t parameter_count() const;
  /// Bytes of the trainable parameters, each tensor in its own precision (what one replica sends per full
  /// exchange).
  std::int64_t parameter_bytes() const;
};

/// The model names model_profile() and make_torch_model() accept.
std::span<const std::string_view> known_models();

/// Parameter tensors and FLOPs of the model spec describes; throws ModelError on an unknown name or an
/// input too small for the model.
ModelProfile model_profile(const ModelSpec& spec);

/// The spec a built-in model is timed at, as platform.timing_model names it: resnet50 on ImageNet's
/// 3 x 224 x 224 inputs and 1000 classes, resnet20 on CIFAR-10's 3 x 32 x 32 and 10, the others on
/// Fashion-MNIST's (ModelSpec's defaults); `mlp_hidden` for the MLP.
ModelSpec timing_spec(std::string_view name, std::vector<int> mlp_hidden = {});

}  // namespace dbench::models
