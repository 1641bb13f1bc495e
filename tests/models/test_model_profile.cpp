#include <doctest/doctest.h>

#include <string>

#include "models/errors.hpp"
#include "models/model_profile.hpp"
#include "support/approx.hpp"
#include "support/model_spec.hpp"

namespace dm = dbench::models;

namespace {

using dbench::testing::model_spec;

}  // namespace

TEST_CASE("models::profile: mlp 784-64-10 has 50890 parameters and 2 FLOPs per multiply-accumulate") {
  const auto p = dm::model_profile(model_spec("mlp", 1, 28, 10));
  REQUIRE(p.tensors.size() == 4);
  CHECK(p.tensors[0].name == "fc1.weight");
  CHECK(p.tensors[0].shape == std::vector<std::int64_t>{64, 784});
  CHECK(p.tensors[1].name == "fc1.bias");
  CHECK(p.tensors[2].name == "fc2.weight");
  CHECK(p.tensors[3].name == "fc2.bias");
  CHECK(p.parameter_count() == 784 * 64 + 64 + 64 * 10 + 10);
  CHECK(p.parameter_bytes() == 4 * p.parameter_count());
  CHECK(p.forward_flops_per_sample == dbench::testing::approx(2.0 * (784 * 64 + 64 * 10)));
  CHECK(p.backward_flops_per_sample == dbench::testing::approx(2.0 * p.forward_flops_per_sample));
}

TEST_CASE("models::profile: mlp with no hidden layer is a linear classifier, several widths chain") {
  auto s = model_spec("mlp", 1, 28, 10);
  s.mlp_hidden = {};
  CHECK(dm::model_profile(s).parameter_count() == 7850);
  s.mlp_hidden = {256, 128};
  const auto p = dm::model_profile(s);
  CHECK(p.tensors.size() == 6);
  CHECK(p.tensors[4].name == "fc3.weight");
  CHECK(p.parameter_count() == 784 * 256 + 256 + 256 * 128 + 128 + 128 * 10 + 10);
}

TEST_CASE("models::profile: lenet on 28x28x1 and 32x32x3 keeps LeNet-5's 16x5x5 feature map") {
  const auto mnist = dm::model_profile(model_spec("lenet", 1, 28, 10));
  CHECK(mnist.parameter_count() == 156 + 2416 + 48120 + 10164 + 850);
  REQUIRE(mnist.tensors.size() == 10);
  CHECK(mnist.tensors[4].name == "fc1.weight");
  CHECK(mnist.tensors[4].shape == std::vector<std::int64_t>{120, 400});
  // conv1: 6x28x28 outputs x 25 taps; conv2: 16x10x10 outputs x 150 taps; then 400-120-84-10.
  const double macs = 6.0 * 28 * 28 * 25 + 16.0 * 10 * 10 * 150 + 400.0 * 120 + 120.0 * 84 + 84.0 * 10;
  CHECK(mnist.forward_flops_per_sample == dbench::testing::approx(2.0 * macs));
  const auto cifar = dm::model_profile(model_spec("lenet", 3, 32, 10));
  CHECK(cifar.parameter_count() == 456 + 2416 + 48120 + 10164 + 850);
}

TEST_CASE("models::profile: resnet20 has 0.27 M parameters and no projection shortcuts") {
  const auto p = dm::model_profile(model_spec("resnet20", 3, 32, 10));
  CHECK(p.parameter_count() == 269722);
  // conv1 + bn1, 9 blocks x (2 convs + 2 batch norms x 2 tensors), fc weight and bias.
  CHECK(p.tensors.size() == 1 + 2 + 9 * (2 + 4) + 2);
  for (const auto& t : p.tensors) {
    CHECK(t.name.find("downsample") == std::string::npos);
  }
  // ~41 M multiply-accumulates per 32x32 image (He et al. 2016 quote ~41 MFLOPs counting MACs).
  CHECK(p.forward_flops_per_sample / 2.0 == dbench::testing::approx(40.55e6).epsilon(0.02));
}

TEST_CASE("models::profile: resnet50 at 224x224 has 25,557,032 parameters and ~4.1 GMACs forward") {
  const auto p = dm::model_profile(model_spec("resnet50", 3, 224, 1000));
  CHECK(p.parameter_count() == 25557032);
  CHECK(p.parameter_bytes() == 25557032LL * 4);
  CHECK(p.forward_flops_per_sample / 2.0 == dbench::testing::approx(4.09e9).epsilon(0.01));
  CHECK(p.backward_flops_per_sample == dbench::testing::approx(2.0 * p.forward_flops_per_sample));
  CHECK(p.tensors.front().name == "conv1.weight");
  CHECK(p.tensors[3].name == "layer1.0.conv1.weight");
  CHECK(p.tensors.back().name == "fc.bias");
  // 53 convolutions, 53 batch norms (weight and bias, no running statistics), one fc.
  CHECK(p.tensors.size() == 53 + 53 * 2 + 2);
  for (const auto& t : p.tensors) {
    CHECK(t.name.find("running") == std::string::npos);
  }
}

TEST_CASE("models::profile: rejects an unknown model name and lists the known ones") {
  try {
    dm::model_profile(model_spec("vgg16", 3, 32, 10));
    FAIL("expected ModelError");
  } catch (const dm::ModelError& e) {
    const std::string message = e.what();
    CHECK(message.find("vgg16") != std::string::npos);
    for (auto known : dm::known_models()) {
      CHECK(message.find(known) != std::string::npos);
    }
  }
}

TEST_CASE("models::profile: rejects non-positive shapes and inputs too small for lenet") {
  CHECK_THROWS_AS(dm::model_profile(model_spec("mlp", 0, 28, 10)), dm::ModelError);
  CHECK_THROWS_AS(dm::model_profile(model_spec("mlp", 1, 28, 0)), dm::ModelError);
  auto bad_hidden = model_spec("mlp", 1, 28, 10);
  bad_hidden.mlp_hidden = {64, 0};
  CHECK_THROWS_AS(dm::model_profile(bad_hidden), dm::ModelError);
  CHECK_THROWS_WITH_AS(dm::model_profile(model_spec("lenet", 1, 8, 10)), doctest::Contains("too small"),
                       dm::ModelError);
}

TEST_CASE("models::timing_spec: each built-in model at the data set it is timed on") {
  // ImageNet for ResNet-50 (the published 25,557,032 parameters), CIFAR-10 for ResNet-20.
  CHECK(dm::model_profile(dm::timing_spec("resnet50")).parameter_count() == 25557032);
  const dm::ModelSpec resnet20 = dm::timing_spec("resnet20");
  CHECK(resnet20.input_height == 32);
  CHECK(resnet20.classes == 10);
  // The others on Fashion-MNIST, the MLP with its hidden widths: 784-64-10 has 50,890 parameters.
  CHECK(dm::model_profile(dm::timing_spec("mlp", {64})).parameter_count() == 784 * 64 + 64 + 64 * 10 + 10);
  CHECK(dm::timing_spec("lenet").input_channels == 1);
  CHECK(dm::timing_spec("lenet").mlp_hidden.empty());
}
