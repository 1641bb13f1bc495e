#include "models/model_zoo.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <string>
#include <utility>

#include "models/errors.hpp"
#include "models/profile_builder.hpp"

namespace dbench::models {

namespace {

using detail::AttentionMask;
using detail::ProfileBuilder;
using detail::ResNetBlock;
using detail::Shape;

constexpr Shape kImageNetInput{3, 224, 224};
constexpr std::int64_t kImageNetClasses = 1000;

// Published figures below: torchvision's model pages (pytorch.org/vision/stable/models.html, "Params" and
// "GFLOPS" of the IMAGENET1K_V1 weights; the GFLOPS are multiply-accumulates, three decimals as `_ops` in
// torchvision/models/*.py), Hugging Face's checkpoints for BERT and GPT-2, and for transformer compute
// Kaplan et al. 2020, "Scaling Laws for Neural Language Models", Table 1:
// C_forward = 2N + 2 n_layer n_ctx d_attn FLOPs per token, N = 2 d_model n_layer (2 d_attn + d_ff).

// resnet18: 11,689,512 parameters, 1.81 GMACs (torchvision ResNet18_Weights.IMAGENET1K_V1, _ops 1.814).
void profile_resnet18(ProfileBuilder& b) {
  constexpr std::array<int, 4> kBlocks = {2, 2, 2, 2};
  detail::resnet_imagenet(b, ResNetBlock::kBasic, kBlocks, kImageNetClasses);
}

// resnet101: 44,549,160 parameters, 7.80 GMACs (torchvision ResNet101_Weights.IMAGENET1K_V1, _ops 7.801).
void profile_resnet101(ProfileBuilder& b) {
  constexpr std::array<int, 4> kBlocks = {3, 4, 23, 3};
  detail::resnet_imagenet(b, ResNetBlock::kBottleneck, kBlocks, kImageNetClasses);
}

// resnet152: 60,192,808 parameters, 11.51 GMACs (torchvision ResNet152_Weights.IMAGENET1K_V1, _ops 11.514).
void profile_resnet152(ProfileBuilder& b) {
  constexpr std::array<int, 4> kBlocks = {3, 8, 36, 3};
  detail::resnet_imagenet(b, ResNetBlock::kBottleneck, kBlocks, kImageNetClasses);
}

// vgg16 (configuration D, no batch norm): 138,357,544 parameters, 15.47 GMACs (torchvision
// VGG16_Weights.IMAGENET1K_V1, _ops 15.47).
void profile_vgg16(ProfileBuilder& b) {
  // Output channels of each 3x3 convolution, 0 for a 2x2 max pool; features.N numbers every module,
  // the ReLU after each convolution included.
  constexpr std::array<std::int64_t, 18> kFeatures = {64, 64,  0,   128, 128, 0,   256, 256, 256,
                                                      0,  512, 512, 512, 0,   512, 512, 512, 0};
  Shape s = b.input();
  int index = 0;
  for (std::int64_t channels : kFeatures) {
    const std::string name = fmt::format("features.{}", index);
    if (channels == 0) {
      s = b.pool(name, s, 2, 2, 0);
      index += 1;
    } else {
      s = b.conv(name, s, channels, 3, 1, 1, true);
      index += 2;
    }
  }
  // An adaptive average pool makes the map 7x7 whatever the input; classifier.N skips ReLU and dropout.
  b.linear("classifier.0", 512 * 7 * 7, 4096);
  b.linear("classifier.3", 4096, 4096);
  b.linear("classifier.6", 4096, kImageNetClasses);
}

/// torchvision's Conv2dNormActivation: a bias-free convolution (NAME.0) and its batch norm (NAME.1).
Shape conv_bn(ProfileBuilder& b, const std::string& name, Shape in, std::int64_t out_channels,
              std::int64_t kernel, std::int64_t stride, std::int64_t groups = 1) {
  const Shape out = b.conv(name + ".0", in, out_channels, kernel, stride, (kernel - 1) / 2, false, groups);
  b.batch_norm(name + ".1", out_channels);
  return out;
}

// mobilenet_v2 (width 1.0): 3,504,872 parameters, 0.30 GMACs (torchvision MobileNet_V2_Weights.IMAGENET1K_V1,
// _ops 0.301; Sandler et al. 2018 quote 300 M multiply-adds).
void profile_mobilenet_v2(ProfileBuilder& b) {
  // Inverted residual groups: expansion t, output channels c, repeats n, first stride s.
  struct Group {
    std::int64_t expansion, channels, repeats, stride;
  };
  constexpr std::array<Group, 7> kGroups = {{{1, 16, 1, 1},
                                             {6, 24, 2, 2},
                                             {6, 32, 3, 2},
                                             {6, 64, 4, 2},
                                             {6, 96, 3, 1},
                                             {6, 160, 3, 2},
                                             {6, 320, 1, 1}}};
  Shape s = conv_bn(b, "features.0", b.input(), 32, 3, 2);
  int index = 1;
  for (const Group& g : kGroups) {
    for (std::int64_t repeat = 0; repeat < g.repeats; ++repeat) {
      const std::string prefix = fmt::format("features.{}.conv.", index++);
      const std::int64_t hidden = s.channels * g.expansion;
      int layer = 0;
      // 1x1 expansion (absent when t = 1), 3x3 depthwise, then a linear 1x1 projection; the residual
      // connection has no parameters.
      if (g.expansion != 1) {
        s = conv_bn(b, prefix + std::to_string(layer++), s, hidden, 1, 1);
      }
      s = conv_bn(b, prefix + std::to_string(layer++), s, hidden, 3, repeat == 0 ? g.stride : 1, hidden);
      s = b.conv(prefix + std::to_string(layer++), s, g.channels, 1, 1, 0, false);
      b.batch_norm(prefix + std::to_string(layer), g.channels);
    }
  }
  conv_bn(b, fmt::format("features.{}", index), s, 1280, 1, 1);
  b.linear("classifier.1", 1280, kImageNetClasses);
}

// vit_b_16: 86,567,656 parameters, 17.56 GMACs (torchvision ViT_B_16_Weights.IMAGENET1K_V1, _ops 17.564).
void profile_vit_b_16(ProfileBuilder& b) {
  constexpr std::int64_t kPatch = 16;
  constexpr std::int64_t kWidth = 768;
  constexpr std::int64_t kLayers = 12;
  constexpr std::int64_t kMlp = 3072;
  b.parameter("class_token", {1, 1, kWidth});
  const Shape grid = b.conv("conv_proj", b.input(), kWidth, kPatch, kPatch, 0, true);
  const std::int64_t tokens = grid.height * grid.width + 1;  // the patches and the class token
  b.parameter("encoder.pos_embedding", {1, tokens, kWidth});
  for (std::int64_t layer = 0; layer < kLayers; ++layer) {
    const std::string prefix = fmt::format("encoder.layers.encoder_layer_{}.", layer);
    b.layer_norm(prefix + "ln_1", kWidth);
    // nn.MultiheadAttention keeps Q, K and V in one fused projection.
    b.parameter(prefix + "self_attention.in_proj_weight", {3 * kWidth, kWidth});
    b.parameter(prefix + "self_attention.in_proj_bias", {3 * kWidth});
    b.matmul(tokens, kWidth, 3 * kWidth);
    b.attention(tokens, kWidth, AttentionMask::kNone);
    b.linear(prefix + "self_attention.out_proj", kWidth, kWidth, tokens);
    b.layer_norm(prefix + "ln_2", kWidth);
    b.linear(prefix + "mlp.0", kWidth, kMlp, tokens);
    b.linear(prefix + "mlp.3", kMlp, kWidth, tokens);
  }
  b.layer_norm("encoder.ln", kWidth);
  b.linear("heads.head", kWidth, kImageNetClasses);  // on the class token only
}

// bert_base (uncased, Hugging Face BertModel with its pooler): 109,482,240 parameters. Compute, Kaplan's
// Table 1 at n_ctx = 128: N = 84,934,656, 128 x (2N + 2 x 12 x 128 x 768) = 22.05 GFLOPs = 11.02 GMACs per
// sequence. This profile counts 11.17 GMACs: unmasked attention (both products over all 128 x 128 pairs) is
// twice Kaplan's mask term, and the pooler is added.
void profile_bert_base(ProfileBuilder& b) {
  constexpr std::int64_t kVocab = 30522;
  constexpr std::int64_t kPositions = 512;
  constexpr std::int64_t kTokenTypes = 2;
  constexpr std::int64_t kLayers = 12;
  constexpr std::int64_t kWidth = 768;
  constexpr std::int64_t kFeedForward = 3072;
  constexpr std::int64_t kTokens = 128;  // the sequence length FLOPs are counted at
  b.embedding("embeddings.word_embeddings", kVocab, kWidth);
  b.embedding("embeddings.position_embeddings", kPositions, kWidth);
  b.embedding("embeddings.token_type_embeddings", kTokenTypes, kWidth);
  b.layer_norm("embeddings.LayerNorm", kWidth);
  for (std::int64_t layer = 0; layer < kLayers; ++layer) {
    const std::string prefix = fmt::format("encoder.layer.{}.", layer);
    b.linear(prefix + "attention.self.query", kWidth, kWidth, kTokens);
    b.linear(prefix + "attention.self.key", kWidth, kWidth, kTokens);
    b.linear(prefix + "attention.self.value", kWidth, kWidth, kTokens);
    b.attention(kTokens, kWidth, AttentionMask::kNone);
    b.linear(prefix + "attention.output.dense", kWidth, kWidth, kTokens);
    b.layer_norm(prefix + "attention.output.LayerNorm", kWidth);
    b.linear(prefix + "intermediate.dense", kWidth, kFeedForward, kTokens);
    b.linear(prefix + "output.dense", kFeedForward, kWidth, kTokens);
    b.layer_norm(prefix + "output.LayerNorm", kWidth);
  }
  b.linear("pooler.dense", kWidth, kWidth);  // on the [CLS] token only
}

/// Hugging Face's GPT-2 Conv1D: a linear layer whose weight is stored (in, out), applied to every token.
void gpt2_conv1d(ProfileBuilder& b, const std::string& name, std::int64_t tokens, std::int64_t in,
                 std::int64_t out) {
  b.parameter(name + ".weight", {in, out});
  b.parameter(name + ".bias", {out});
  b.matmul(tokens, in, out);
}

// gpt2_small (Hugging Face GPT2LMHeadModel "gpt2", LM head tied to the token embedding): 124,439,808
// parameters. Compute, Kaplan's Table 1 at n_ctx = 1024: N = 84,934,656, 1024 x (2N + 2 x 12 x 1024 x 768)
// = 193.27 GFLOPs = 96.64 GMACs per sequence, 136.16 GMACs with the table's de-embed row
// (2 d_model n_vocab per token: the LM head, which C_forward leaves out and this profile counts).
void profile_gpt2_small(ProfileBuilder& b) {
  constexpr std::int64_t kVocab = 50257;
  constexpr std::int64_t kPositions = 1024;
  constexpr std::int64_t kLayers = 12;
  constexpr std::int64_t kWidth = 768;
  constexpr std::int64_t kTokens = 1024;  // the sequence length FLOPs are counted at
  b.embedding("transformer.wte", kVocab, kWidth);
  b.embedding("transformer.wpe", kPositions, kWidth);
  for (std::int64_t layer = 0; layer < kLayers; ++layer) {
    const std::string prefix = fmt::format("transformer.h.{}.", layer);
    b.layer_norm(prefix + "ln_1", kWidth);
    gpt2_conv1d(b, prefix + "attn.c_attn", kTokens, kWidth, 3 * kWidth);
    b.attention(kTokens, kWidth, AttentionMask::kCausal);
    gpt2_conv1d(b, prefix + "attn.c_proj", kTokens, kWidth, kWidth);
    b.layer_norm(prefix + "ln_2", kWidth);
    gpt2_conv1d(b, prefix + "mlp.c_fc", kTokens, kWidth, 4 * kWidth);
    gpt2_conv1d(b, prefix + "mlp.c_proj", kTokens, 4 * kWidth, kWidth);
  }
  b.layer_norm("transformer.ln_f", kWidth);
  // lm_head.weight is transformer.wte.weight: named_parameters() lists it once, but its product is computed.
  b.matmul(kTokens, kWidth, kVocab);
}

/// Appends the tensors of zoo model `profile.name` to `profile` and returns its forward multiply-accumulates.
double build_zoo_model(ModelProfile& profile) {
  const std::string_view name = profile.name;
  if (name == "bert_base" || name == "gpt2_small") {
    ProfileBuilder b(profile);
    if (name == "bert_base") {
      profile_bert_base(b);
    } else {
      profile_gpt2_small(b);
    }
    return b.macs();
  }
  ProfileBuilder b(profile, kImageNetInput);
  if (name == "resnet18") {
    profile_resnet18(b);
  } else if (name == "resnet101") {
    profile_resnet101(b);
  } else if (name == "resnet152") {
    profile_resnet152(b);
  } else if (name == "vgg16") {
    profile_vgg16(b);
  } else if (name == "mobilenet_v2") {
    profile_mobilenet_v2(b);
  } else {
    profile_vit_b_16(b);
  }
  return b.macs();
}

bool contains(std::span<const std::string_view> names, std::string_view name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

}  // namespace

std::span<const std::string_view> zoo_models() {
  return std::span(detail::kTimingModels).subspan(detail::kBuiltInModelCount);
}

ModelProfile zoo_profile(std::string_view name) {
  if (!contains(zoo_models(), name)) {
    throw ModelError(
        fmt::format("unknown zoo model '{}': zoo models are {}", name, fmt::join(zoo_models(), ", ")));
  }
  ModelProfile profile;
  profile.name = std::string(name);
  profile.forward_flops_per_sample = 2.0 * build_zoo_model(profile);
  profile.backward_flops_per_sample = 2.0 * profile.forward_flops_per_sample;
  return profile;
}

std::span<const std::string_view> timing_models() {
  return detail::kTimingModels;
}

ModelProfile timing_profile(std::string_view name, std::vector<int> mlp_hidden) {
  if (contains(known_models(), name)) {
    return model_profile(timing_spec(name, std::move(mlp_hidden)));
  }
  if (contains(zoo_models(), name)) {
    return zoo_profile(name);
  }
  throw ModelError(
      fmt::format("unknown timing model '{}': timing models are {}", name, fmt::join(timing_models(), ", ")));
}

}  // namespace dbench::models
