#include <doctest/doctest.h>

#include <vector>

#include "core/collectives.hpp"
#include "core/errors.hpp"
#include "core/replica_store.hpp"
#include "core/sgd.hpp"
#include "test_helpers.hpp"

namespace core = dbench::core;

namespace {

/// Column means in double, rounded to float: what every replica must receive.
std::vector<float> column_means(core::ConstReplicaView v) {
  std::vector<float> mean(v.cols);
  for (std::size_t c = 0; c < v.cols; ++c) {
    double s = 0.0;
    for (std::size_t i = 0; i < v.rows; ++i) {
      s += v.row_data(i)[c];
    }
    mean[c] = static_cast<float>(s / static_cast<double>(v.rows));
  }
  return mean;
}

}  // namespace

TEST_CASE("core::allreduce: every replica receives the mean of all replicas") {
  for (const unsigned threads : {1u, 3u}) {
    CAPTURE(threads);
    core::ReplicaStore store(7, core::ParamLayout({{"a", 300}, {"b", 37}}));
    core::testing::TestRng rng(9);
    core::testing::fill_uniform(store.grads(), rng, -3.0f, 3.0f);
    const std::vector<float> expected = column_means(store.grads());
    core::allreduce_mean(store.grads(), threads);
    for (std::size_t i = 0; i < store.replicas(); ++i) {
      for (std::size_t c = 0; c < store.param_count(); ++c) {
        REQUIRE(store.grads().row_data(i)[c] == expected[c]);
      }
      CHECK(store.grads().row_data(i)[store.param_count()] == 0.0f);  // padding untouched
    }
  }
}

TEST_CASE("core::allreduce: replica_average is the column mean and checks its output size") {
  core::ReplicaStore store(5, core::ParamLayout({{"a", 1000}}));
  core::testing::TestRng rng(2);
  core::testing::fill_uniform(store.params(), rng, 0.0f, 1.0f);
  std::vector<float> average(1000);
  core::replica_average(store.params(), average, 2);
  CHECK(average == column_means(store.params()));
  std::vector<float> wrong(999);
  CHECK_THROWS_AS(core::replica_average(store.params(), wrong), core::ShapeError);
}

TEST_CASE("core::allreduce: the step fused with the all-reduce equals all-reduce then step, bit for bit") {
  // 5000 columns: two full blocks of the fused pass and a partial one.
  const core::ParamLayout layout({{"w", 4900}, {"b", 100}});
  const core::SgdConfig config{.momentum = 0.9, .weight_decay = 1e-4, .nesterov = true};
  // Two steps from the same seeded start, each with fresh gradients.
  const auto train = [](core::ReplicaStore& store, auto&& step) {
    core::testing::TestRng rng(4);
    core::testing::fill_uniform(store.params(), rng, -1.0f, 1.0f);
    for (int t = 0; t < 2; ++t) {
      core::testing::fill_uniform(store.grads(), rng, -1.0f, 1.0f);
      step(store);
    }
  };
  core::ReplicaStore reference(9, layout);
  core::Sgd sgd(config);
  train(reference, [&](core::ReplicaStore& s) {
    core::allreduce_mean(s.grads());
    sgd.step(0.1, s.params(), s.grads(), s.momentum());
  });
  for (const unsigned threads : {1u, 3u}) {
    CAPTURE(threads);
    core::ReplicaStore fused(9, layout);
    core::Sgd fused_sgd(config);
    train(fused, [&](core::ReplicaStore& s) {
      core::allreduce_mean_step(fused_sgd, 0.1, s.params(), s.grads(), s.momentum(), threads);
    });
    CHECK(fused_sgd.steps() == 2);
    for (std::size_t i = 0; i < fused.replicas(); ++i) {
      for (std::size_t c = 0; c < fused.param_count(); ++c) {
        REQUIRE(fused.params().row_data(i)[c] == reference.params().row_data(i)[c]);
        REQUIRE(fused.momentum().row_data(i)[c] == reference.momentum().row_data(i)[c]);
      }
    }
  }
  core::ReplicaStore other(8, layout);
  CHECK_THROWS_AS(core::allreduce_mean_step(sgd, 0.1, other.params(), reference.grads(), other.momentum()),
                  core::ShapeError);
}
