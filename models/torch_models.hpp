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

}  // namespace dbench::models
