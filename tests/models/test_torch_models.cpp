// Checks the Torch-free profiles against the LibTorch modules they describe; built only with LibTorch.
#include <string>

#include "models/errors.hpp"
#include "models/model_profile.hpp"
#include "models/torch_models.hpp"
#include "support/model_spec.hpp"
#include "support/torch_doctest.hpp"

namespace dm = dbench::models;

namespace {

using dbench::testing::model_spec;

/// The profile lists exactly the module's parameters: same names, order, shapes and element counts.
void check_profile_matches_module(const dm::ModelSpec& s) {
  CAPTURE(s.name);
  CAPTURE(s.input_height);
  const auto profile = dm::model_profile(s);
  const auto model = dm::make_torch_model(s);
  const auto actual = dm::parameter_tensors(*model);
  REQUIRE(actual.size() == profile.tensors.size());
  std::int64_t total = 0;
  for (std::size_t i = 0; i < actual.size(); ++i) {
    CAPTURE(i);
    CHECK(actual[i].name == profile.tensors[i].name);
    CHECK(actual[i].shape == profile.tensors[i].shape);
    CHECK(actual[i].elements == profile.tensors[i].elements);
    total += actual[i].elements;
  }
  CHECK(total == profile.parameter_count());
  // A forward pass on the spec's input shape gives one logit per class.
  torch::NoGradGuard no_grad;
  model->eval();
  const auto logits = model->forward(torch::randn({2, s.input_channels, s.input_height, s.input_width}));
  CHECK(logits.sizes() == torch::IntArrayRef({2, s.classes}));
}

}  // namespace

TEST_CASE("models::torch: mlp and lenet modules match their profiles") {
  torch::manual_seed(0);
  check_profile_matches_module(model_spec("mlp", 1, 28, 10));
  auto wide = model_spec("mlp", 3, 32, 10);
  wide.mlp_hidden = {256, 128};
  check_profile_matches_module(wide);
  check_profile_matches_module(model_spec("lenet", 1, 28, 10));
  check_profile_matches_module(model_spec("lenet", 3, 32, 10));
}

TEST_CASE("models::torch: resnet20 matches its profile with 0.27 M parameters") {
  torch::manual_seed(0);
  check_profile_matches_module(model_spec("resnet20", 3, 32, 10));
  CHECK(dm::make_torch_model(model_spec("resnet20", 3, 32, 10))->parameters().size() == 59U);
}

TEST_CASE("models::torch: resnet50 matches its profile with 25,557,032 parameters") {
  torch::manual_seed(0);
  // A 64x64 input keeps the forward pass cheap; parameters do not depend on the input size.
  check_profile_matches_module(model_spec("resnet50", 3, 64, 1000));
  std::int64_t total = 0;
  for (const auto& p : dm::make_torch_model(model_spec("resnet50", 3, 224, 1000))->parameters()) {
    total += p.numel();
  }
  CHECK(total == 25557032);
}

TEST_CASE("models::torch: batch-norm running statistics are buffers, not parameters") {
  const auto model = dm::make_torch_model(model_spec("resnet20", 3, 32, 10));
  int running = 0;
  for (const auto& b : model->named_buffers()) {
    running += b.key().find("running_") != std::string::npos ? 1 : 0;
  }
  CHECK(running == 2 * 19);  // running_mean and running_var of 19 batch norms
  for (const auto& p : model->named_parameters()) {
    CHECK(p.key().find("running_") == std::string::npos);
  }
}

TEST_CASE("models::torch: resnet20 trains: a few SGD steps lower the loss on a fixed batch") {
  torch::manual_seed(1);
  const auto model = dm::make_torch_model(model_spec("resnet20", 3, 32, 10));
  torch::optim::SGD sgd(model->parameters(), torch::optim::SGDOptions(0.05).momentum(0.9));
  const auto x = torch::randn({16, 3, 32, 32});
  const auto y = torch::randint(0, 10, {16}, torch::kLong);
  double first = 0.0;
  double last = 0.0;
  for (int step = 0; step < 8; ++step) {
    sgd.zero_grad();
    const auto loss = torch::nn::functional::cross_entropy(model->forward(x), y);
    loss.backward();
    sgd.step();
    (step == 0 ? first : last) = loss.item<double>();
  }
  CHECK(last < first);
}

TEST_CASE("models::torch: an unknown model is a ModelError") {
  CHECK_THROWS_AS(dm::make_torch_model(model_spec("alexnet", 3, 32, 10)), dm::ModelError);
}

TEST_CASE("models::flatten_parameters: parameters and gradients live in two flat buffers, values kept") {
  torch::manual_seed(0);
  const auto model = dm::make_torch_model(model_spec("lenet", 1, 28, 10));
  std::vector<torch::Tensor> before;
  for (const auto& p : model->parameters()) {
    before.push_back(p.detach().clone());
  }
  const dm::FlatParameters flat = dm::flatten_parameters(*model);
  const auto params = model->parameters();
  REQUIRE(params.size() == before.size());
  std::int64_t offset = 0;
  for (std::size_t i = 0; i < params.size(); ++i) {
    CAPTURE(i);
    const auto n = params[i].numel();
    CHECK(torch::equal(params[i], before[i]));
    CHECK(params[i].data_ptr<float>() == flat.values.data_ptr<float>() + offset);
    CHECK(params[i].grad().data_ptr<float>() == flat.grads.data_ptr<float>() + offset);
    offset += n;
  }
  CHECK(offset == flat.values.numel());

  // Backward accumulates into the buffer; zeroing it in place and repeating gives the same gradients.
  const auto images = torch::randn({4, 1, 28, 28});
  const auto labels = torch::tensor({0, 3, 7, 9}, torch::kLong);
  auto backward = [&] {
    flat.grads.zero_();
    torch::nn::functional::cross_entropy(model->forward(images), labels).backward();
    return flat.grads.clone();
  };
  const torch::Tensor first = backward();
  CHECK(first.abs().sum().item<double>() > 0.0);
  CHECK(torch::equal(backward(), first));
  offset = 0;
  for (const auto& p : params) {
    CHECK(p.grad().data_ptr<float>() == flat.grads.data_ptr<float>() + offset);  // not reallocated
    offset += p.numel();
  }
  // An optimizer step moves the values in the buffer.
  torch::optim::SGD sgd(model->parameters(), torch::optim::SGDOptions(0.1));
  const torch::Tensor values = flat.values.clone();
  sgd.step();
  CHECK(torch::allclose(flat.values, values - 0.1 * first));
}

TEST_CASE("models::flatten_parameters: a module with a float64 parameter is refused, naming the type") {
  auto model = dm::make_torch_model(model_spec("mlp", 1, 28, 10));
  model->parameters().back().set_data(model->parameters().back().to(torch::kFloat64));
  CHECK_THROWS_WITH_AS(dm::flatten_parameters(*model), doctest::Contains("Double"), std::invalid_argument);
}
