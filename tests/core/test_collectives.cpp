#include <doctest/doctest.h>

#include <vector>

#include "core/collectives.hpp"
#include "core/errors.hpp"
#include "core/replica_store.hpp"
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
