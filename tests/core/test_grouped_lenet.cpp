// LeNet on N replicas at once must compute, row by row, what N separate LibTorch modules do, and each row
// exactly what the same model alone computes (a runtime worker's), whatever the thread count.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/replica_model.hpp"
#include "core/replica_store.hpp"
#include "models/torch_models.hpp"
#include "support/approx.hpp"
#include "support/torch_doctest.hpp"

namespace {

namespace ds = dbench::core;
namespace dm = dbench::models;

/// Loads a flat parameter row into a module, in named_parameters() order.
void load(dm::Classifier& module, std::span<const float> row) {
  torch::NoGradGuard no_grad;
  std::size_t offset = 0;
  for (auto& p : module.parameters()) {
    std::memcpy(p.data_ptr<float>(), row.data() + offset,
                static_cast<std::size_t>(p.numel()) * sizeof(float));
    offset += static_cast<std::size_t>(p.numel());
  }
}

}  // namespace

TEST_CASE("core::grouped_lenet: each replica's gradient, loss and hits equal its own LibTorch module's") {
  dm::ModelSpec spec;
  spec.name = "lenet";
  const auto model = ds::make_replica_model(spec, 1);
  const std::size_t n = 3;
  const std::size_t batch = 4;
  ds::ReplicaStore store(n, model->layout());
  model->init(store.replica(0), 7);
  store.broadcast_params(0);
  // Replicas that differ, as after local steps.
  torch::manual_seed(3);
  for (std::size_t i = 1; i < n; ++i) {
    auto noise = torch::randn({static_cast<std::int64_t>(store.param_count())}) * 0.01;
    for (std::size_t c = 0; c < store.param_count(); ++c) {
      store.replica(i)[c] += noise[static_cast<std::int64_t>(c)].item<float>();
    }
  }
  const auto inputs_t = torch::randn({static_cast<std::int64_t>(n * batch), 1, 28, 28});
  std::vector<float> inputs(inputs_t.data_ptr<float>(), inputs_t.data_ptr<float>() + inputs_t.numel());
  std::vector<std::int32_t> labels(n * batch);
  for (std::size_t k = 0; k < labels.size(); ++k) {
    labels[k] = static_cast<std::int32_t>((k * 7) % 10);
  }
  std::vector<ds::BatchStats> stats(n);
  model->train_step(store.params(), inputs, labels, batch, store.grads(), stats);

  const auto module = dm::make_torch_model(spec);
  for (std::size_t i = 0; i < n; ++i) {
    CAPTURE(i);
    load(*module, store.replica(i));
    module->zero_grad();
    const auto x = inputs_t.narrow(0, static_cast<std::int64_t>(i * batch), static_cast<std::int64_t>(batch));
    const auto y =
        torch::from_blob(labels.data() + i * batch, {static_cast<std::int64_t>(batch)}, torch::kInt32)
            .to(torch::kInt64);
    const auto logits = module->forward(x);
    const auto loss = torch::nn::functional::cross_entropy(logits, y);
    loss.backward();
    CHECK(stats[i].loss == dbench::testing::approx(loss.item<float>()).epsilon(1e-5));
    CHECK(stats[i].correct == (logits.argmax(1) == y).sum().item<std::int64_t>());
    std::vector<float> expected;
    for (const auto& p : module->parameters()) {
      const auto g = p.grad().contiguous();
      expected.insert(expected.end(), g.data_ptr<float>(), g.data_ptr<float>() + g.numel());
    }
    REQUIRE(expected.size() == store.param_count());
    double diff = 0.0;
    double scale = 0.0;
    for (std::size_t c = 0; c < expected.size(); ++c) {
      diff = std::max(diff, static_cast<double>(std::fabs(expected[c] - store.grads().row(i)[c])));
      scale = std::max(scale, static_cast<double>(std::fabs(expected[c])));
    }
    CHECK(diff / scale < 1e-5);
    // Evaluation agrees with the module's forward too.
    const auto eval = model->evaluate(store.replica(i),
                                      std::span<const float>(inputs).subspan(i * batch * 784, batch * 784),
                                      std::span<const std::int32_t>(labels).subspan(i * batch, batch));
    CHECK(eval.loss == dbench::testing::approx(loss.item<double>()).epsilon(1e-5));
  }
}

TEST_CASE(
    "core::grouped_lenet: a replica's gradient is bitwise the same alone, among others and on 2 threads") {
  dm::ModelSpec spec;
  spec.name = "lenet";
  const std::size_t n = 5;
  const std::size_t batch = 8;
  const auto one_thread = ds::make_replica_model(spec, 1);
  const auto two_threads = ds::make_replica_model(spec, 2);
  ds::ReplicaStore store(n, one_thread->layout());
  one_thread->init(store.replica(0), 11);
  store.broadcast_params(0);
  torch::manual_seed(5);
  for (std::size_t i = 1; i < n; ++i) {
    const auto noise = torch::randn({static_cast<std::int64_t>(store.param_count())}) * 0.01;
    for (std::size_t c = 0; c < store.param_count(); ++c) {
      store.replica(i)[c] += noise[static_cast<std::int64_t>(c)].item<float>();
    }
  }
  const auto inputs_t = torch::randn({static_cast<std::int64_t>(n * batch), 1, 28, 28});
  const std::vector<float> inputs(inputs_t.data_ptr<float>(), inputs_t.data_ptr<float>() + inputs_t.numel());
  std::vector<std::int32_t> labels(n * batch);
  for (std::size_t k = 0; k < labels.size(); ++k) {
    labels[k] = static_cast<std::int32_t>((k * 3) % 10);
  }
  std::vector<ds::BatchStats> stats(n);
  two_threads->train_step(store.params(), inputs, labels, batch, store.grads(), stats);
  for (std::size_t i = 0; i < n; ++i) {
    CAPTURE(i);
    ds::ReplicaStore alone(1, one_thread->layout());
    std::copy(store.replica(i).begin(), store.replica(i).end(), alone.replica(0).begin());
    std::vector<ds::BatchStats> own(1);
    one_thread->train_step(
        alone.params(), std::span<const float>(inputs).subspan(i * batch * 784, batch * 784),
        std::span<const std::int32_t>(labels).subspan(i * batch, batch), batch, alone.grads(), own);
    const auto together = store.grads().row(i);
    const auto single = alone.grads().row(0);
    CHECK(std::equal(together.begin(), together.end(), single.begin()));
    CHECK(own[0].loss == stats[i].loss);
  }
}
