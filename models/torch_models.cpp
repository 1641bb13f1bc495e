#include "models/torch_models.hpp"

#include <fmt/format.h>

#include <array>
#include <stdexcept>
#include <string>

namespace dbench::models {

namespace {

namespace nn = torch::nn;

nn::Conv2d conv(std::int64_t in, std::int64_t out, std::int64_t kernel, std::int64_t stride,
                std::int64_t padding, bool bias) {
  return nn::Conv2d(nn::Conv2dOptions(in, out, kernel).stride(stride).padding(padding).bias(bias));
}

/// torchvision's ResNet initialisation: He-normal convolutions (fan-out), BatchNorm as the identity.
void init_resnet(nn::Module& root) {
  for (auto& module : root.modules(/*include_self=*/false)) {
    if (auto* c = module->as<nn::Conv2d>()) {
      nn::init::kaiming_normal_(c->weight, 0.0, torch::kFanOut, torch::kReLU);
    } else if (auto* bn = module->as<nn::BatchNorm2d>()) {
      nn::init::ones_(bn->weight);
      nn::init::zeros_(bn->bias);
    }
  }
}

/// Fully connected layers with ReLU between them: fc1 ... fcN.
class MlpImpl : public Classifier {
 public:
  explicit MlpImpl(const ModelSpec& spec) {
    std::int64_t in = std::int64_t{spec.input_channels} * spec.input_height * spec.input_width;
    std::vector<std::int64_t> widths(spec.mlp_hidden.begin(), spec.mlp_hidden.end());
    widths.push_back(spec.classes);
    for (std::size_t i = 0; i < widths.size(); ++i) {
      layers_.push_back(register_module(fmt::format("fc{}", i + 1), nn::Linear(in, widths[i])));
      in = widths[i];
    }
  }

  torch::Tensor forward(torch::Tensor images) override {
    auto x = images.flatten(1);
    for (std::size_t i = 0; i < layers_.size(); ++i) {
      x = layers_[i]->forward(x);
      if (i + 1 < layers_.size()) {
        x = torch::relu(x);
      }
    }
    return x;
  }

 private:
  std::vector<nn::Linear> layers_;
};

/// LeNet-5 with ReLU and max pooling: conv5(6)-pool-conv5(16)-pool-fc120-fc84-fc(classes).
class LeNetImpl : public Classifier {
 public:
  explicit LeNetImpl(const ModelSpec& spec, std::int64_t flat_features) {
    // Same padding rule as model_profile(): 28x28 inputs are padded to LeNet-5's 32x32 geometry.
    const std::int64_t pad = std::min(spec.input_height, spec.input_width) < 32 ? 2 : 0;
    conv1_ = register_module("conv1", conv(spec.input_channels, 6, 5, 1, pad, true));
    conv2_ = register_module("conv2", conv(6, 16, 5, 1, 0, true));
    fc1_ = register_module("fc1", nn::Linear(flat_features, 120));
    fc2_ = register_module("fc2", nn::Linear(120, 84));
    fc3_ = register_module("fc3", nn::Linear(84, spec.classes));
  }

  torch::Tensor forward(torch::Tensor images) override {
    auto x = torch::max_pool2d(torch::relu(conv1_->forward(images)), 2);
    x = torch::max_pool2d(torch::relu(conv2_->forward(x)), 2);
    x = torch::relu(fc1_->forward(x.flatten(1)));
    x = torch::relu(fc2_->forward(x));
    return fc3_->forward(x);
  }

 private:
  nn::Conv2d conv1_{nullptr};
  nn::Conv2d conv2_{nullptr};
  nn::Linear fc1_{nullptr};
  nn::Linear fc2_{nullptr};
  nn::Linear fc3_{nullptr};
};

/// ResNet basic block for CIFAR; the shortcut is option A of He et al. (2016): subsample by the stride and
/// zero-pad the new channels, so the block has no projection parameters.
class BasicBlockImpl : public nn::Module {
 public:
  BasicBlockImpl(std::int64_t in, std::int64_t out, std::int64_t stride)
      : stride_(stride), pad_channels_(out - in) {
    conv1_ = register_module("conv1", conv(in, out, 3, stride, 1, false));
    bn1_ = register_module("bn1", nn::BatchNorm2d(out));
    conv2_ = register_module("conv2", conv(out, out, 3, 1, 1, false));
    bn2_ = register_module("bn2", nn::BatchNorm2d(out));
  }

  torch::Tensor forward(torch::Tensor x) {
    auto y = torch::relu(bn1_->forward(conv1_->forward(x)));
    y = bn2_->forward(conv2_->forward(y));
    auto shortcut = x;
    if (stride_ != 1) {
      using torch::indexing::None;
      using torch::indexing::Slice;
      shortcut = shortcut.index({Slice(), Slice(), Slice(None, None, stride_), Slice(None, None, stride_)});
    }
    if (pad_channels_ > 0) {
      // Split the new channels evenly before and after, as the reference CIFAR implementations do.
      const std::int64_t before = pad_channels_ / 2;
      shortcut = torch::constant_pad_nd(shortcut, {0, 0, 0, 0, before, pad_channels_ - before});
    }
    return torch::relu(y + shortcut);
  }

 private:
  std::int64_t stride_;
  std::int64_t pad_channels_;
  nn::Conv2d conv1_{nullptr};
  nn::BatchNorm2d bn1_{nullptr};
  nn::Conv2d conv2_{nullptr};
  nn::BatchNorm2d bn2_{nullptr};
};

/// ResNet-20 for 32x32 inputs (He et al. 2016, section 4.2): 3 stages x 3 basic blocks, 16/32/64 channels.
class ResNet20Impl : public Classifier {
 public:
  explicit ResNet20Impl(const ModelSpec& spec) {
    conv1_ = register_module("conv1", conv(spec.input_channels, 16, 3, 1, 1, false));
    bn1_ = register_module("bn1", nn::BatchNorm2d(16));
    const std::array<std::int64_t, 3> widths = {16, 32, 64};
    std::int64_t in = 16;
    for (std::size_t stage = 0; stage < widths.size(); ++stage) {
      nn::Sequential layer;
      for (int block = 0; block < 3; ++block) {
        const std::int64_t stride = (stage > 0 && block == 0) ? 2 : 1;
        layer->push_back(std::make_shared<BasicBlockImpl>(in, widths[stage], stride));
        in = widths[stage];
      }
      layers_.push_back(register_module(fmt::format("layer{}", stage + 1), layer));
    }
    fc_ = register_module("fc", nn::Linear(64, spec.classes));
    init_resnet(*this);
  }

  torch::Tensor forward(torch::Tensor images) override {
    auto x = torch::relu(bn1_->forward(conv1_->forward(images)));
    for (auto& layer : layers_) {
      x = layer->forward(x);
    }
    x = torch::adaptive_avg_pool2d(x, {1, 1}).flatten(1);
    return fc_->forward(x);
  }

 private:
  nn::Conv2d conv1_{nullptr};
  nn::BatchNorm2d bn1_{nullptr};
  std::vector<nn::Sequential> layers_;
  nn::Linear fc_{nullptr};
};

/// torchvision's Bottleneck (ResNet v1.5: the stride is on the 3x3 convolution), expansion 4.
class BottleneckImpl : public nn::Module {
 public:
  static constexpr std::int64_t kExpansion = 4;

  BottleneckImpl(std::int64_t in, std::int64_t planes, std::int64_t stride) {
    const std::int64_t out = planes * kExpansion;
    conv1_ = register_module("conv1", conv(in, planes, 1, 1, 0, false));
    bn1_ = register_module("bn1", nn::BatchNorm2d(planes));
    conv2_ = register_module("conv2", conv(planes, planes, 3, stride, 1, false));
    bn2_ = register_module("bn2", nn::BatchNorm2d(planes));
    conv3_ = register_module("conv3", conv(planes, out, 1, 1, 0, false));
    bn3_ = register_module("bn3", nn::BatchNorm2d(out));
    if (stride != 1 || in != out) {
      downsample_ = register_module("downsample",
                                    nn::Sequential(conv(in, out, 1, stride, 0, false), nn::BatchNorm2d(out)));
    }
  }

  torch::Tensor forward(torch::Tensor x) {
    auto y = torch::relu(bn1_->forward(conv1_->forward(x)));
    y = torch::relu(bn2_->forward(conv2_->forward(y)));
    y = bn3_->forward(conv3_->forward(y));
    auto shortcut = downsample_ ? downsample_->forward(x) : x;
    return torch::relu(y + shortcut);
  }

 private:
  nn::Conv2d conv1_{nullptr};
  nn::BatchNorm2d bn1_{nullptr};
  nn::Conv2d conv2_{nullptr};
  nn::BatchNorm2d bn2_{nullptr};
  nn::Conv2d conv3_{nullptr};
  nn::BatchNorm2d bn3_{nullptr};
  nn::Sequential downsample_{nullptr};
};

/// ResNet-50 with torchvision's layer names: conv1-bn1-maxpool, layer1..4 of [3, 4, 6, 3] bottlenecks, fc.
class ResNet50Impl : public Classifier {
 public:
  explicit ResNet50Impl(const ModelSpec& spec) {
    conv1_ = register_module("conv1", conv(spec.input_channels, 64, 7, 2, 3, false));
    bn1_ = register_module("bn1", nn::BatchNorm2d(64));
    const std::array<std::int64_t, 4> planes = {64, 128, 256, 512};
    const std::array<int, 4> blocks = {3, 4, 6, 3};
    std::int64_t in = 64;
    for (std::size_t stage = 0; stage < planes.size(); ++stage) {
      nn::Sequential layer;
      for (int block = 0; block < blocks[stage]; ++block) {
        const std::int64_t stride = (stage > 0 && block == 0) ? 2 : 1;
        layer->push_back(std::make_shared<BottleneckImpl>(in, planes[stage], stride));
        in = planes[stage] * BottleneckImpl::kExpansion;
      }
      layers_.push_back(register_module(fmt::format("layer{}", stage + 1), layer));
    }
    fc_ = register_module("fc", nn::Linear(in, spec.classes));
    init_resnet(*this);
  }

  torch::Tensor forward(torch::Tensor images) override {
    auto x = torch::relu(bn1_->forward(conv1_->forward(images)));
    x = torch::max_pool2d(x, 3, 2, 1);
    for (auto& layer : layers_) {
      x = layer->forward(x);
    }
    x = torch::adaptive_avg_pool2d(x, {1, 1}).flatten(1);
    return fc_->forward(x);
  }

 private:
  nn::Conv2d conv1_{nullptr};
  nn::BatchNorm2d bn1_{nullptr};
  std::vector<nn::Sequential> layers_;
  nn::Linear fc_{nullptr};
};

}  // namespace

std::shared_ptr<Classifier> make_torch_model(const ModelSpec& spec) {
  // The profile validates the spec and knows LeNet's flattened size, so both sides share one geometry.
  const ModelProfile profile = model_profile(spec);
  if (spec.name == "mlp") {
    return std::make_shared<MlpImpl>(spec);
  }
  if (spec.name == "lenet") {
    const auto& fc1 = profile.tensors.at(4);  // conv1.{weight,bias}, conv2.{weight,bias}, fc1.weight
    return std::make_shared<LeNetImpl>(spec, fc1.shape.at(1));
  }
  if (spec.name == "resnet20") {
    return std::make_shared<ResNet20Impl>(spec);
  }
  return std::make_shared<ResNet50Impl>(spec);
}

std::vector<TensorInfo> parameter_tensors(const torch::nn::Module& module) {
  std::vector<TensorInfo> tensors;
  for (const auto& item : module.named_parameters(/*recurse=*/true)) {
    const auto sizes = item.value().sizes();
    tensors.push_back(
        TensorInfo{item.key(), std::vector<std::int64_t>(sizes.begin(), sizes.end()), item.value().numel()});
  }
  return tensors;
}

FlatParameters flatten_parameters(torch::nn::Module& module) {
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> params = module.parameters(/*recurse=*/true);
  if (params.empty()) {
    throw std::invalid_argument("flatten_parameters: the module has no parameters");
  }
  std::int64_t count = 0;
  for (const auto& p : params) {
    if (p.scalar_type() != torch::kFloat32 || p.device() != params.front().device()) {
      throw std::invalid_argument(fmt::format(
          "flatten_parameters: every parameter must be float32 on {}; one is {} on {}",
          params.front().device().str(), std::string(c10::toString(p.scalar_type())), p.device().str()));
    }
    count += p.numel();
  }
  const auto options = torch::TensorOptions(params.front().device()).dtype(torch::kFloat32);
  FlatParameters flat{torch::empty({count}, options), torch::zeros({count}, options)};
  std::int64_t offset = 0;
  for (auto& p : params) {
    const auto n = p.numel();
    torch::Tensor value = flat.values.slice(0, offset, offset + n).view(p.sizes());
    value.copy_(p);
    p.set_data(value);
    p.mutable_grad() = flat.grads.slice(0, offset, offset + n).view(p.sizes());
    offset += n;
  }
  return flat;
}

}  // namespace dbench::models
