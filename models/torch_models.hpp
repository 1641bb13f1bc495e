#pragma once

// LibTorch model definitions. This header includes <torch/torch.h>: include it only from the few
// translation units that train or run a model.

#include <torch/torch.h>

#include <memory>
#include <vector>

#include "models/model_profile.hpp"

namespace dbench::models {

/// Common base of every DBench model: a module mapping a batch of N x C x H x W images to N x classes logits.
class Classifier : public torch::nn::Module {
 public:
  /// Logits for a batch; the input is N x C x H x W (the MLP flattens it).
  virtual torch::Tensor forward(torch::Tensor images) = 0;
};

/// Builds the LibTorch module for spec, with the tensor names model_profile(spec) lists. Weights come from
/// LibTorch's default generator: call torch::manual_seed first for reproducible initialisation.
/// ResNet-20 uses option-A (parameter-free) shortcuts; ResNet-50 is torchvision's layout.
/// Throws ModelError like model_profile().
std::shared_ptr<Classifier> make_torch_model(const ModelSpec& spec);

/// The module's trainable tensors as TensorInfo, in named_parameters() order.
std::vector<TensorInfo> parameter_tensors(const torch::nn::Module& module);

/// A module's parameters and their gradients, each in one flat buffer (named_parameters() order).
struct FlatParameters {
  torch::Tensor values;
  torch::Tensor grads;  ///< zeros until a backward pass
};

/// Moves the module's parameters into one flat buffer and gives each a gradient that is a view of another:
/// the optimizer, autograd and a communicator then work on the same memory, and an all-reduce of every
/// gradient is one call on `grads` with no gathering or scattering (on a GPU, one launch instead of two per
/// tensor). Values are kept. Clear the gradients with grads.zero_(), never by resetting them (LibTorch 2's
/// Optimizer::zero_grad does by default): backward would then allocate fresh ones outside the buffer.
/// Throws std::invalid_argument unless every parameter is float32 on one device.
FlatParameters flatten_parameters(torch::nn::Module& module);

}  // namespace dbench::models
