#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "models/errors.hpp"
#include "models/model_profile.hpp"
#include "models/model_zoo.hpp"
#include "support/approx.hpp"

namespace dm = dbench::models;

namespace {

/// A model's published size and forward cost.
struct Published {
  std::string_view name;
  std::int64_t parameters;
  double gmacs;
};

/// torchvision's model documentation, IMAGENET1K_V1 weights: "Params" and "GFLOPS" (multiply-accumulates).
constexpr std::array<Published, 6> kTorchvision = {{{"resnet18", 11689512, 1.81},
                                                    {"resnet101", 44549160, 7.80},
                                                    {"resnet152", 60192808, 11.51},
                                                    {"vgg16", 138357544, 15.47},
                                                    {"mobilenet_v2", 3504872, 0.30},
                                                    {"vit_b_16", 86567656, 17.56}}};

/// Kaplan et al. 2020, "Scaling Laws for Neural Language Models", Table 1: forward FLOPs per token,
/// C_forward = 2N + 2 n_layer n_ctx d_attn, with N = 2 d_model n_layer (2 d_attn + d_ff) the
/// non-embedding parameters.
double kaplan_forward_flops_per_token(double n_layer, double d_model, double d_attn, double d_ff,
                                      double n_ctx) {
  const double n = 2.0 * d_model * n_layer * (2.0 * d_attn + d_ff);
  return 2.0 * n + 2.0 * n_layer * n_ctx * d_attn;
}

double forward_macs(const dm::ModelProfile& p) {
  return p.forward_flops_per_sample / 2.0;
}

const dm::TensorInfo* find_tensor(const dm::ModelProfile& p, std::string_view name) {
  const auto it =
      std::find_if(p.tensors.begin(), p.tensors.end(), [&](const auto& t) { return t.name == name; });
  return it == p.tensors.end() ? nullptr : &*it;
}

}  // namespace

TEST_CASE("models::zoo: torchvision models have the published parameters and GMACs within 5 %") {
  for (const auto& published : kTorchvision) {
    CAPTURE(published.name);
    const auto p = dm::zoo_profile(published.name);
    CHECK(p.name == published.name);
    CHECK(p.parameter_count() == published.parameters);
    CHECK(forward_macs(p) == dbench::testing::approx(published.gmacs * 1e9).epsilon(0.05));
    CHECK(p.backward_flops_per_sample == dbench::testing::approx(2.0 * p.forward_flops_per_sample));
  }
}

TEST_CASE("models::zoo: bert_base has 109,482,240 parameters and Kaplan's compute at 128 tokens") {
  const auto p = dm::zoo_profile("bert_base");
  CHECK(p.parameter_count() == 109482240);  // Hugging Face bert-base-uncased, pooler included
  const double n_layer = 12, d_model = 768, d_ff = 3072, n_ctx = 128;
  const double kaplan_macs =
      n_ctx * kaplan_forward_flops_per_token(n_layer, d_model, d_model, d_ff, n_ctx) / 2.0;
  CHECK(forward_macs(p) == dbench::testing::approx(kaplan_macs).epsilon(0.05));
  CHECK(p.tensors.front().name == "embeddings.word_embeddings.weight");
  CHECK(p.tensors.front().shape == std::vector<std::int64_t>{30522, 768});
  CHECK(p.tensors.back().name == "pooler.dense.bias");
  // Embeddings (3 tables, LayerNorm), 12 layers x 16 tensors, pooler weight and bias.
  CHECK(p.tensors.size() == 5 + 12 * 16 + 2);
}

TEST_CASE("models::zoo: gpt2_small has 124,439,808 parameters, the tied head counted once") {
  const auto p = dm::zoo_profile("gpt2_small");
  CHECK(p.parameter_count() == 124439808);  // Hugging Face gpt2
  CHECK(find_tensor(p, "lm_head.weight") == nullptr);
  const auto* c_attn = find_tensor(p, "transformer.h.0.attn.c_attn.weight");
  REQUIRE(c_attn != nullptr);
  CHECK(c_attn->shape == std::vector<std::int64_t>{768, 2304});  // Conv1D stores (in, out)
  // Kaplan's C_forward leaves out the de-embedding (2 d_model n_vocab per token, Table 1); the profile
  // counts the tied LM head's product, so it is added here.
  const double n_layer = 12, d_model = 768, d_ff = 3072, n_ctx = 1024, n_vocab = 50257;
  const double per_token =
      kaplan_forward_flops_per_token(n_layer, d_model, d_model, d_ff, n_ctx) + 2.0 * d_model * n_vocab;
  CHECK(forward_macs(p) == dbench::testing::approx(n_ctx * per_token / 2.0).epsilon(0.05));
}

TEST_CASE("models::zoo: resnet18 and mobilenet_v2 tensors follow torchvision's named_parameters()") {
  const auto resnet18 = dm::zoo_profile("resnet18");
  CHECK(resnet18.tensors.front().name == "conv1.weight");
  CHECK(resnet18.tensors.front().shape == std::vector<std::int64_t>{64, 3, 7, 7});
  CHECK(find_tensor(resnet18, "layer1.0.downsample.0.weight") == nullptr);  // 64 -> 64, identity shortcut
  const auto* projection = find_tensor(resnet18, "layer2.0.downsample.0.weight");
  REQUIRE(projection != nullptr);
  CHECK(projection->shape == std::vector<std::int64_t>{128, 64, 1, 1});
  CHECK(resnet18.tensors.back().name == "fc.bias");

  const auto mobilenet = dm::zoo_profile("mobilenet_v2");
  // features.1 has no expansion, so its depthwise 3x3 comes first; features.2 expands 16 to 96.
  const auto* first_depthwise = find_tensor(mobilenet, "features.1.conv.0.0.weight");
  REQUIRE(first_depthwise != nullptr);
  CHECK(first_depthwise->shape == std::vector<std::int64_t>{32, 1, 3, 3});
  const auto* depthwise = find_tensor(mobilenet, "features.2.conv.1.0.weight");
  REQUIRE(depthwise != nullptr);
  CHECK(depthwise->shape == std::vector<std::int64_t>{96, 1, 3, 3});
  CHECK(mobilenet.tensors.back().name == "classifier.1.bias");

  const auto vit = dm::zoo_profile("vit_b_16");
  CHECK(vit.tensors.front().name == "class_token");
  const auto* positions = find_tensor(vit, "encoder.pos_embedding");
  REQUIRE(positions != nullptr);
  CHECK(positions->shape == std::vector<std::int64_t>{1, 197, 768});  // 14 x 14 patches and the class token
}

TEST_CASE("models::zoo: timing_models lists the built-in models, then the zoo, each once") {
  const auto all = dm::timing_models();
  const std::set<std::string_view> distinct(all.begin(), all.end());
  CHECK(distinct.size() == all.size());
  for (auto known : dm::known_models()) {
    CHECK(distinct.count(known) == 1);
  }
  CHECK(all.size() == dm::known_models().size() + dm::zoo_models().size());
  CHECK(std::equal(dm::zoo_models().begin(), dm::zoo_models().end(), all.end() - dm::zoo_models().size()));
}

TEST_CASE("models::zoo: timing_profile is the built-in timing spec's profile or the zoo's") {
  CHECK(dm::timing_profile("resnet50").parameter_count() == 25557032);
  CHECK(dm::timing_profile("mlp", {64}).parameter_count() == 784 * 64 + 64 + 64 * 10 + 10);
  CHECK(dm::timing_profile("mlp").parameter_count() == 7850);  // no hidden layer: a linear classifier
  const auto vgg = dm::timing_profile("vgg16");
  CHECK(vgg.name == "vgg16");
  CHECK(vgg.parameter_count() == 138357544);
  CHECK_THROWS_WITH_AS(dm::timing_profile("resnet"), doctest::Contains("gpt2_small"), dm::ModelError);
}

TEST_CASE("models::zoo: rejects an unknown name, naming it and the zoo models") {
  try {
    dm::zoo_profile("resnet-50");
    FAIL("expected ModelError");
  } catch (const dm::ModelError& e) {
    const std::string message = e.what();
    CHECK(message.find("'resnet-50'") != std::string::npos);
    for (auto name : dm::zoo_models()) {
      CHECK(message.find(name) != std::string::npos);
    }
  }
  // The built-in models are not zoo models.
  CHECK_THROWS_AS(dm::zoo_profile("resnet50"), dm::ModelError);
}
