#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "core/batched_mlp.hpp"
#include "core/collectives.hpp"
#include "core/mixing.hpp"
#include "core/replica_metrics.hpp"
#include "core/replica_store.hpp"
#include "core/sgd.hpp"
#include "test_helpers.hpp"

namespace core = dbench::core;

namespace {

struct Outcome {
  std::vector<float> params;
  std::vector<float> losses;
  core::ReplicaMetrics metrics;
};

/// Three D-PSGD iterations (or centralized ones) of 20 replicas with `threads` threads everywhere.
Outcome run(unsigned threads, bool centralized) {
  const std::size_t n = 20;
  const std::size_t batch = 4;
  const core::BatchedMlp mlp({30, 8, 5}, threads);
  core::ReplicaStore store(n, mlp.layout());
  mlp.init(store.replica(0), 9);
  store.broadcast_params(0);
  const core::MixingMatrix w = core::testing::exponential(n);
  core::Sgd sgd({.momentum = 0.9, .weight_decay = 1e-4, .nesterov = true}, threads);
  core::testing::TestRng rng(21);
  std::vector<float> inputs(n * batch * 30);
  std::vector<std::int32_t> labels(n * batch);
  std::vector<core::BatchStats> stats(n);
  Outcome out;
  for (int it = 0; it < 3; ++it) {
    for (float& v : inputs) {
      v = rng.uniform(0.0f, 1.0f);
    }
    for (std::int32_t& y : labels) {
      y = static_cast<std::int32_t>(rng.below(5));
    }
    mlp.train_step(store.params(), inputs, labels, batch, store.grads(), stats);
    if (centralized) {
      core::allreduce_mean(store.grads(), threads);
    }
    sgd.step(0.1, store.params(), store.grads(), store.momentum());
    if (!centralized) {
      core::mix(w.rows(), store.params(), store.mix_target(), {.threads = threads});
      store.swap_mixed();
    }
    for (const core::BatchStats& s : stats) {
      out.losses.push_back(s.loss);
    }
  }
  for (std::size_t i = 0; i < n; ++i) {
    out.params.insert(out.params.end(), store.replica(i).begin(), store.replica(i).end());
  }
  out.metrics = core::compute_replica_metrics(store.params(), store.layout(), threads);
  return out;
}

}  // namespace

TEST_CASE("core::pipeline: training iterations give bitwise identical results for 1, 2 and 3 threads") {
  for (const bool centralized : {false, true}) {
    CAPTURE(centralized);
    const Outcome one = run(1, centralized);
    for (const unsigned threads : {2u, 3u}) {
      CAPTURE(threads);
      const Outcome other = run(threads, centralized);
      CHECK(one.params == other.params);
      CHECK(one.losses == other.losses);
      CHECK(one.metrics.norms == other.metrics.norms);
      CHECK(one.metrics.consensus_distance == other.metrics.consensus_distance);
    }
    if (centralized) {
      // All-reduced gradients and a common start keep every replica identical.
      CHECK(one.metrics.consensus_distance == 0.0);
    } else {
      CHECK(one.metrics.consensus_distance > 0.0);
    }
  }
}
