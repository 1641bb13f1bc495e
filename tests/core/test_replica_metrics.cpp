#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "core/errors.hpp"
#include "core/replica_metrics.hpp"
#include "core/replica_store.hpp"
#include "support/approx.hpp"
#include "test_helpers.hpp"

namespace core = dbench::core;

namespace {

// Tensors straddle the 4096-column segments the implementation splits its work into.
core::ParamLayout layout() {
  return core::ParamLayout({{"big", 9000}, {"one", 1}, {"mid", 300}, {"tail", 4097}});
}

}  // namespace

TEST_CASE("core::metrics: norms, their variance, consensus distance and average match naive sums") {
  const std::size_t n = 9;
  core::ReplicaStore store(n, layout());
  core::testing::TestRng rng(17);
  core::testing::fill_uniform(store.params(), rng, -1.0f, 2.0f);
  const core::ReplicaMetrics m = core::compute_replica_metrics(store.params(), store.layout(), 3);
  REQUIRE(m.replicas == n);
  REQUIRE(m.tensors == 4);

  const std::size_t p = store.param_count();
  std::vector<double> mean(p, 0.0);
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t c = 0; c < p; ++c) {
      mean[c] += store.params().row_data(i)[c] / static_cast<double>(n);
    }
  }
  for (std::size_t c = 0; c < p; ++c) {
    CHECK(m.average[c] == dbench::testing::approx(mean[c]).epsilon(1e-6));
  }
  double total = 0.0;
  for (std::size_t t = 0; t < 4; ++t) {
    const core::TensorSlice& s = store.layout().tensors()[t];
    std::vector<double> norms(n);
    double dist = 0.0;
    for (std::size_t i = 0; i < n; ++i) {
      double sq = 0.0;
      for (std::size_t c = s.offset; c < s.offset + s.elements; ++c) {
        const double x = store.params().row_data(i)[c];
        sq += x * x;
        dist += (x - mean[c]) * (x - mean[c]);
      }
      norms[i] = std::sqrt(sq);
      CHECK(m.norm(i, t) == dbench::testing::approx(norms[i]).epsilon(1e-12));
    }
    double avg_norm = 0.0;
    for (double v : norms) {
      avg_norm += v / static_cast<double>(n);
    }
    double var = 0.0;
    for (double v : norms) {
      var += (v - avg_norm) * (v - avg_norm) / static_cast<double>(n);
    }
    CHECK(m.norm_variance[t] == dbench::testing::approx(var).epsilon(1e-9));
    CHECK(m.consensus_per_tensor[t] == dbench::testing::approx(dist / static_cast<double>(n)).epsilon(1e-12));
    total += dist / static_cast<double>(n);
  }
  CHECK(m.consensus_distance == dbench::testing::approx(total).epsilon(1e-12));
}

TEST_CASE("core::metrics: identical replicas have zero consensus distance and zero norm variance") {
  core::ReplicaStore store(4, layout());
  core::testing::TestRng rng(1);
  for (float& x : store.replica(0)) {
    x = rng.uniform(-1.0f, 1.0f);
  }
  store.broadcast_params(0);
  const core::ReplicaMetrics m = core::compute_replica_metrics(store.params(), store.layout());
  CHECK(m.consensus_distance == 0.0);
  for (double v : m.norm_variance) {
    CHECK(v == 0.0);
  }
}

TEST_CASE("core::metrics: results do not depend on the thread count") {
  core::ReplicaStore store(33, layout());
  core::testing::TestRng rng(4);
  core::testing::fill_uniform(store.params(), rng, -1.0f, 1.0f);
  const core::ReplicaMetrics a = core::compute_replica_metrics(store.params(), store.layout(), 1);
  const core::ReplicaMetrics b = core::compute_replica_metrics(store.params(), store.layout(), 4);
  CHECK(a.norms == b.norms);
  CHECK(a.norm_variance == b.norm_variance);
  CHECK(a.consensus_per_tensor == b.consensus_per_tensor);
  CHECK(a.consensus_distance == b.consensus_distance);
  CHECK(a.average == b.average);
}

TEST_CASE("core::metrics: rejects a layout that does not match the parameter count") {
  core::ReplicaStore store(2, layout());
  CHECK_THROWS_AS(core::compute_replica_metrics(store.params(), core::ParamLayout({{"x", 5}})),
                  core::ShapeError);
}
