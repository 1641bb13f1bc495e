// Profiles of TorchScript modules written here, in C++: parameters as named_parameters() lists them and
// forward FLOPs counted from the operators that ran, against the built-in LeNet profile and closed forms.
#include <torch/script.h>

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "models/errors.hpp"
#include "models/model_profile.hpp"
#include "models/profile_file.hpp"
#include "models/torchscript_profile.hpp"
#include "support/approx.hpp"
#include "support/files.hpp"
#include "support/run_dbench.hpp"
#include "support/temp_dir.hpp"
#include "support/torch_doctest.hpp"

namespace models = dbench::models;
namespace fs = std::filesystem;
using dbench::testing::TempDir;

namespace {

using Parameters = std::vector<std::pair<std::string, std::vector<std::int64_t>>>;

/// A TorchScript module whose submodules, in order, hold the given parameters (weights drawn at random), with
/// `source` as its methods.
torch::jit::Module scripted(const std::string& class_name,
                            const std::vector<std::pair<std::string, Parameters>>& layers,
                            const std::string& source) {
  torch::manual_seed(1);
  torch::jit::Module module("__torch__." + class_name);
  for (const auto& [layer_name, parameters] : layers) {
    torch::jit::Module layer("__torch__." + class_name + "_" + layer_name);
    for (const auto& [name, shape] : parameters) {
      layer.register_parameter(name, torch::randn(shape).requires_grad_(true), /*is_buffer=*/false);
    }
    module.register_module(layer_name, layer);
  }
  module.define(source);
  return module;
}

/// LeNet as models::model_profile builds it for 1 x 28 x 28 inputs: padding 2 on conv1.
torch::jit::Module lenet() {
  const auto layer = [](std::int64_t out, std::vector<std::int64_t> weight) {
    return Parameters{{"weight", std::move(weight)}, {"bias", {out}}};
  };
  return scripted("LeNet",
                  {{"conv1", layer(6, {6, 1, 5, 5})},
                   {"conv2", layer(16, {16, 6, 5, 5})},
                   {"fc1", layer(120, {120, 400})},
                   {"fc2", layer(84, {84, 120})},
                   {"fc3", layer(10, {10, 84})}},
                  R"(
def forward(self, x):
    x = torch.max_pool2d(torch.relu(torch.conv2d(x, self.conv1.weight, self.conv1.bias, [1, 1], [2, 2])), [2, 2])
    x = torch.max_pool2d(torch.relu(torch.conv2d(x, self.conv2.weight, self.conv2.bias)), [2, 2])
    x = torch.flatten(x, 1)
    x = torch.relu(torch.linear(x, self.fc1.weight, self.fc1.bias))
    x = torch.relu(torch.linear(x, self.fc2.weight, self.fc2.bias))
    return torch.linear(x, self.fc3.weight, self.fc3.bias)
)");
}

constexpr std::int64_t kTokens = 16;
constexpr std::int64_t kWidth = 64;
constexpr std::int64_t kHeads = 4;
constexpr std::int64_t kHidden = 256;

/// A pre-norm transformer block: x + proj(attention(qkv(ln1(x)))), then x + fc2(gelu(fc1(ln2(x)))); the
/// attention is written out as two matmuls and a softmax over 4 heads of 16.
torch::jit::Module transformer_block() {
  const auto linear = [](std::int64_t in, std::int64_t out) {
    return Parameters{{"weight", {out, in}}, {"bias", {out}}};
  };
  const Parameters norm = {{"weight", {kWidth}}, {"bias", {kWidth}}};
  return scripted("Block",
                  {{"ln1", norm},
                   {"qkv", linear(kWidth, 3 * kWidth)},
                   {"proj", linear(kWidth, kWidth)},
                   {"ln2", norm},
                   {"fc1", linear(kWidth, kHidden)},
                   {"fc2", linear(kHidden, kWidth)}},
                  R"(
def forward(self, x):
    b = x.size(0)
    h = torch.layer_norm(x, [64], self.ln1.weight, self.ln1.bias, 1e-5)
    qkv = torch.linear(h, self.qkv.weight, self.qkv.bias).reshape(b, 16, 3, 4, 16).permute(2, 0, 3, 1, 4)
    q = qkv[0]
    k = qkv[1]
    v = qkv[2]
    a = torch.softmax(torch.matmul(q, k.transpose(-2, -1)) * 0.25, -1)
    o = torch.matmul(a, v).transpose(1, 2).reshape(b, 16, 64)
    x = x + torch.linear(o, self.proj.weight, self.proj.bias)
    h = torch.layer_norm(x, [64], self.ln2.weight, self.ln2.bias, 1e-5)
    return x + torch.linear(torch.gelu(torch.linear(h, self.fc1.weight, self.fc1.bias)), self.fc2.weight, self.fc2.bias)
)");
}

fs::path saved(const torch::jit::Module& module, const TempDir& dir, const std::string& file) {
  const fs::path path = dir.path() / file;
  module.save(path.string());
  return path;
}

const models::OpCount* find(const std::vector<models::OpCount>& ops, const std::string& name) {
  for (const auto& op : ops) {
    if (op.name == name) {
      return &op;
    }
  }
  return nullptr;
}

}  // namespace

TEST_CASE(
    "models::torchscript_profile: a scripted LeNet has the built-in lenet profile's tensors and FLOPs") {
  const TempDir dir;
  const auto reference = models::model_profile(models::timing_spec("lenet"));
  const auto result = models::torchscript_profile(saved(lenet(), dir, "lenet.pt"), {1, 28, 28}, {"lenet"});
  const auto& profile = result.profile;
  REQUIRE(profile.tensors.size() == reference.tensors.size());
  for (std::size_t i = 0; i < reference.tensors.size(); ++i) {
    CAPTURE(reference.tensors[i].name);
    CHECK(profile.tensors[i].name == reference.tensors[i].name);
    CHECK(profile.tensors[i].shape == reference.tensors[i].shape);
    CHECK(profile.tensors[i].elements == reference.tensors[i].elements);
  }
  CHECK(profile.parameter_count() == reference.parameter_count());
  // 2 x (6 x 28 x 28 x 25 + 16 x 10 x 10 x 150 + 400 x 120 + 120 x 84 + 84 x 10) = 833040.
  CHECK(reference.forward_flops_per_sample == 833040.0);
  CHECK(profile.forward_flops_per_sample ==
        dbench::testing::approx(reference.forward_flops_per_sample).epsilon(0.02));
  CHECK(profile.backward_flops_per_sample == 2.0 * profile.forward_flops_per_sample);
  // Each convolution and linear layer once, not again as the _convolution or addmm it runs inside.
  const auto* conv = find(result.counted, "aten::conv2d");
  const auto* linear = find(result.counted, "aten::linear");
  REQUIRE(conv != nullptr);
  REQUIRE(linear != nullptr);
  CHECK(conv->calls == 2);
  CHECK(linear->calls == 3);
  CHECK(result.counted.size() == 2);
  CHECK(result.uncounted.empty());
}

TEST_CASE("models::torchscript_profile: a transformer block matches the closed-form parameters and FLOPs") {
  const TempDir dir;
  models::TorchScriptOptions options{"block", models::InputType::kFloat, models::Precision::bf16};
  const auto result =
      models::torchscript_profile(saved(transformer_block(), dir, "block.pt"), {kTokens, kWidth}, options);
  const auto& profile = result.profile;
  // Two layer norms, the QKV and output projections, the MLP: 4 d^2 + 2 d d_ff + 9 d + d_ff.
  const std::int64_t parameters = 4 * kWidth * kWidth + 2 * kWidth * kHidden + 9 * kWidth + kHidden;
  CHECK(parameters == 49984);
  CHECK(profile.parameter_count() == parameters);
  CHECK(profile.tensors.size() == 12);
  CHECK(profile.tensors.front().name == "ln1.weight");
  CHECK(profile.tensors.back().name == "fc2.bias");
  CHECK(profile.tensors.front().precision == models::Precision::bf16);
  CHECK(profile.compute_precision == models::Precision::bf16);
  // Per token 4 d^2 (projections) + 2 d d_ff (MLP) MACs, and 2 T^2 d for Q K^T and the weighted values.
  const double macs =
      kTokens * (4.0 * kWidth * kWidth + 2.0 * kWidth * kHidden) + 2.0 * kTokens * kTokens * kWidth;
  CHECK(profile.forward_flops_per_sample == dbench::testing::approx(2.0 * macs).epsilon(0.02));
  const auto* matmul = find(result.counted, "aten::matmul");
  REQUIRE(matmul != nullptr);
  CHECK(matmul->calls == 2);
  CHECK(matmul->flops == dbench::testing::approx(2.0 * 2.0 * kTokens * kTokens * kWidth));
  CHECK(result.uncounted.empty());
}

TEST_CASE("models::torchscript_profile: a missing or unreadable module is refused naming the file") {
  const TempDir dir;
  const fs::path missing = dir.path() / "missing.pt";
  CHECK_THROWS_WITH_AS(models::torchscript_profile(missing, {1, 28, 28}, {"m"}),
                       doctest::Contains(missing.string().c_str()), models::ModelError);
  const fs::path garbage = dir.path() / "garbage.pt";
  dbench::testing::write_file(garbage, "this is not a TorchScript archive");
  CHECK_THROWS_WITH_AS(models::torchscript_profile(garbage, {1, 28, 28}, {"m"}),
                       doctest::Contains(garbage.string().c_str()), models::ModelError);
  // An empty file, a folder, and a module cut short: each says why, never with an empty reason.
  const fs::path empty = dir.path() / "empty.pt";
  dbench::testing::write_file(empty, "");
  CHECK_THROWS_WITH_AS(models::torchscript_profile(empty, {1, 28, 28}, {"m"}),
                       doctest::Contains((empty.string() + "': the file is empty").c_str()),
                       models::ModelError);
  CHECK_THROWS_WITH_AS(models::torchscript_profile(dir.path(), {1, 28, 28}, {"m"}),
                       doctest::Contains("': not a regular file"), models::ModelError);
  const fs::path cut = saved(lenet(), dir, "cut.pt");
  fs::resize_file(cut, fs::file_size(cut) / 2);
  try {
    models::torchscript_profile(cut, {1, 28, 28}, {"m"});
    FAIL("a module cut in half loaded");
  } catch (const models::ModelError& e) {
    const std::string message = e.what();
    CAPTURE(message);
    const std::string prefix = "cannot load TorchScript module '" + cut.string() + "': ";
    REQUIRE(message.starts_with(prefix));
    CHECK(message.size() > prefix.size() + 3);
    CHECK(message.find('\n') == std::string::npos);
    CHECK(message.find("Could this error message be improved") == std::string::npos);
  }
  // A forward pass that fails on the input shape is reported with the shape.
  CHECK_THROWS_WITH_AS(models::torchscript_profile(saved(lenet(), dir, "lenet.pt"), {3, 28, 28}, {"m"}),
                       doctest::Contains("1x3x28x28"), models::ModelError);
}

TEST_CASE("models::torchscript_profile: dbench profile writes a profile file that reads back the same") {
  const TempDir dir;
  const auto module = saved(transformer_block(), dir, "block.pt");
  const auto expected = models::torchscript_profile(module, {kTokens, kWidth}, {"block"}).profile;
  const fs::path out = dir.path() / "block.toml";
  const auto result = dbench::testing::run_dbench("profile \"" + module.string() +
                                                  "\" --input 16x64 --out \"" + out.string() + "\"");
  CAPTURE(result.output);
  REQUIRE(result.status == 0);
  CHECK(result.output.find("aten::matmul") != std::string::npos);
  const auto profile = models::read_profile_file(out);
  CHECK(profile.name == "block");
  CHECK(profile.tensors.size() == expected.tensors.size());
  CHECK(profile.parameter_count() == expected.parameter_count());
  CHECK(profile.forward_flops_per_sample == dbench::testing::approx(expected.forward_flops_per_sample));

  const auto bad = dbench::testing::run_dbench("profile \"" + module.string() + "\" --input 16x");
  CHECK(bad.status != 0);
  CHECK(bad.output.find("--input") != std::string::npos);
}

TEST_CASE("models::torchscript_profile: token ids go through an embedding and einsum counts its products") {
  const TempDir dir;
  const auto module = scripted("Tokens", {{"emb", {{"weight", {100, 32}}}}, {"head", {{"weight", {10, 32}}}}},
                               R"(
def forward(self, x):
    h = torch.embedding(self.emb.weight, x)
    return torch.einsum("bti,oi->bto", [h, self.head.weight])
)");
  const auto result =
      models::torchscript_profile(saved(module, dir, "tokens.pt"), {8}, {"tokens", models::InputType::kLong});
  CHECK(result.profile.parameter_count() == 100 * 32 + 10 * 32);
  // The embedding is a lookup; the head is 8 tokens x 32 x 10 multiply-accumulates.
  CHECK(result.profile.forward_flops_per_sample == dbench::testing::approx(2.0 * 8 * 32 * 10));
  REQUIRE(result.counted.size() == 1);
  CHECK(result.counted.front().name.find("in aten::einsum") != std::string::npos);
}

TEST_CASE("models::torchscript_profile: an operator without a rule is counted through the products it runs") {
  const TempDir dir;
  const auto module =
      scripted("Tbc", {{"c", {{"weight", {3, 4, 4}}, {"bias", {4}}}}, {"fc", {{"weight", {2, 4}}}}},
               R"(
def forward(self, x):
    y = torch.conv_tbc(x, self.c.weight, self.c.bias, 1) + torch.cummax(x, 0)[0]
    return torch.linear(y, self.fc.weight)
)");
  // The input is 1 x 8 x 4: conv_tbc reads it as 1 time step of 8 sequences with 4 channels, padded by 1 on
  // each side, so only the kernel's middle tap meets data; cummax is no matrix product.
  const auto result = models::torchscript_profile(saved(module, dir, "tbc.pt"), {8, 4}, {"tbc"});
  CHECK(result.uncounted.empty());
  const auto* inner = find(result.counted, "aten::addmm_ in aten::conv_tbc");
  REQUIRE(inner != nullptr);
  CHECK(result.counted.size() == 2);
  CHECK(find(result.counted, "aten::linear")->flops == dbench::testing::approx(2.0 * 8 * 4 * 2));
}

TEST_CASE("models::torchscript_profile: scaled dot-product attention counts both products once") {
  const TempDir dir;
  const auto module = scripted("Attention", {}, R"(
def forward(self, x):
    full = torch._scaled_dot_product_attention(x, x, x)[0]
    causal = torch._scaled_dot_product_attention(x, x, x, None, 0.0, False, True)[0]
    return full + causal
)");
  // 4 heads of 16 over 16 tokens: Q K^T and the weighted values, 16 MACs each per (query, key) pair; causal
  // attention counts the 16 x 17 / 2 unmasked pairs, as the zoo's GPT-2 does.
  const auto result = models::torchscript_profile(saved(module, dir, "attention.pt"), {4, 16, 16}, {"a"});
  const double head = 2.0 * 16 + 2.0 * 16;
  CHECK(result.profile.forward_flops_per_sample ==
        dbench::testing::approx(4 * head * (16 * 16 + 16 * 17 / 2)));
  REQUIRE(result.counted.size() == 1);
  CHECK(result.counted.front().name == "aten::_scaled_dot_product_attention");
  CHECK(result.counted.front().calls == 2);
}
