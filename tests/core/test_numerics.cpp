// The numerics engine end to end: real data, real SGD, the schedule's mixing.
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <memory>
#include <optional>

#include "core/lr_schedule.hpp"
#include "core/numerics.hpp"
#include "models/dataset.hpp"
#include "models/errors.hpp"
#include "support/approx.hpp"
#include "topology/generators.hpp"
#include "topology/graph_policy.hpp"

namespace {

namespace ds = dbench::core;
namespace dm = dbench::models;
namespace dt = dbench::topology;

/// Collects every metrics row of a run.
struct Rows final : ds::NumericsObserver {
  std::vector<ds::MetricsRow> rows;
  void on_metrics(const ds::MetricsRow& row) override { rows.push_back(row); }
};

const dm::Dataset& fashion(dm::Split split) {
  static const dm::Dataset train = dm::read_fashion_mnist(dm::Split::train);
  static const dm::Dataset test = dm::read_fashion_mnist(dm::Split::test);
  return split == dm::Split::train ? train : test;
}

ds::NumericsSpec mlp_spec(int workers, std::int64_t iterations) {
  ds::NumericsSpec spec;
  spec.workers = workers;
  spec.batch_per_worker = 16;
  spec.iterations = iterations;
  spec.lr.peak = 0.1;
  spec.lr.iterations = iterations;
  spec.eval_every = iterations;
  spec.threads = 2;
  return spec;
}

double max_relative_difference(ds::ConstReplicaView a, ds::ConstReplicaView b) {
  double diff = 0.0;
  double scale = 0.0;
  for (std::size_t i = 0; i < a.rows; ++i) {
    for (std::size_t c = 0; c < a.cols; ++c) {
      diff = std::max(diff, static_cast<double>(std::fabs(a.row(i)[c] - b.row(i)[c])));
      scale = std::max(scale, static_cast<double>(std::fabs(a.row(i)[c])));
    }
  }
  return diff / scale;
}

/// The run input that `run`'s error is about (models::InputFault), or nothing when it throws none.
template <class Run>
std::optional<dm::RunInput> input_refused(Run&& run) {
  try {
    run();
  } catch (const dm::InputFault& e) {
    return e.input();
  }
  return std::nullopt;
}

}  // namespace

TEST_CASE("core::numerics: centralized SGD, 16 replicas, MLP on Fashion-MNIST reaches 85 % within 2 epochs") {
  // 2 epochs of 60000 samples at a global batch of 16 x 16 = 256: 468 iterations.
  auto spec = mlp_spec(16, 468);
  spec.sgd.momentum = 0.9;
  spec.lr.decay = ds::LrDecay::cosine;
  dt::AllReducePolicy policy;
  Rows rows;
  const auto result =
      ds::run_numerics(spec, fashion(dm::Split::train), fashion(dm::Split::test), policy, rows);
  MESSAGE("test accuracy after 2 epochs: " << result.final_test_accuracy);
  CHECK(rows.rows.back().epoch == dbench::testing::approx(2.0).epsilon(0.01));
  CHECK(result.final_test_accuracy >= 0.85);
  // All-reduce keeps the replicas identical.
  CHECK(rows.rows.back().consensus_distance == doctest::Approx(0.0));
}

TEST_CASE("core::numerics: D-PSGD on the complete graph equals centralized SGD without momentum") {
  const auto& train = fashion(dm::Split::train);
  const auto& test = fashion(dm::Split::test);
  const auto spec = mlp_spec(8, 60);
  ds::VirtualReplicas central(spec, train, test);
  ds::VirtualReplicas gossip(spec, train, test);
  dt::AllReducePolicy allreduce;
  dt::SequencePolicy complete(dt::GraphSequence(dt::complete(8)));
  for (std::int64_t t = 0; t < spec.iterations; ++t) {
    central.step(t, allreduce.graph_for(t, nullptr), false);
    gossip.step(t, complete.graph_for(t, nullptr), false);
  }
  const double diff = max_relative_difference(central.params(), gossip.params());
  MESSAGE("max relative difference after 60 iterations: " << diff);
  CHECK(diff < 1e-5);
}

TEST_CASE("core::numerics: a step reports the wall time of its local step and of its communication") {
  const auto& train = fashion(dm::Split::train);
  const auto& test = fashion(dm::Split::test);
  const auto spec = mlp_spec(16, 3);
  ds::VirtualReplicas engine(spec, train, test);
  CHECK(engine.last_step_seconds().local == 0.0);
  CHECK(engine.last_step_seconds().communication == 0.0);
  dt::SequencePolicy ring(dt::GraphSequence(dt::ring(16)));
  dt::AllReducePolicy allreduce;
  const auto wall = [&](std::int64_t t, const dt::ScheduleStep& step) {
    const auto t0 = std::chrono::steady_clock::now();
    engine.step(t, step, false);
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  const double gossip = wall(0, ring.graph_for(0, nullptr));
  const auto g = engine.last_step_seconds();
  CHECK(g.local > 0.0);
  CHECK(g.communication > 0.0);
  CHECK(g.local + g.communication <= gossip);
  // A centralized step's all-reduce is part of its local step: nothing is communicated after it.
  const double central = wall(1, allreduce.graph_for(1, nullptr));
  const auto c = engine.last_step_seconds();
  CHECK(c.local > 0.0);
  CHECK(c.local <= central);
  CHECK(c.communication == 0.0);
}

TEST_CASE("core::numerics: centralized steps keep the replicas identical with their momentum") {
  const auto& train = fashion(dm::Split::train);
  const auto& test = fashion(dm::Split::test);
  auto spec = mlp_spec(8, 4);
  spec.sgd.momentum = 0.9;
  ds::VirtualReplicas central(spec, train, test);
  ds::VirtualReplicas switched(spec, train, test);
  dt::AllReducePolicy allreduce;
  dt::SequencePolicy complete(dt::GraphSequence(dt::complete(8)));
  for (std::int64_t t = 0; t < 3; ++t) {
    central.step(t, allreduce.graph_for(t, nullptr), false);
    switched.step(t, allreduce.graph_for(t, nullptr), false);
  }
  const ds::ConstReplicaView p = central.params();
  for (std::size_t i = 1; i < p.rows; ++i) {
    REQUIRE(std::equal(p.row(i).begin(), p.row(i).end(), p.row(0).begin()));
  }
  // With momentum, a gossip step on the complete graph moves the replicas' average as a centralized step
  // does only if every replica carries the momentum the centralized steps built.
  central.step(3, allreduce.graph_for(3, nullptr), false);
  switched.step(3, complete.graph_for(3, nullptr), false);
  const double diff = max_relative_difference(central.params(), switched.params());
  MESSAGE("max relative difference after the switch: " << diff);
  CHECK(diff < 1e-5);
}

TEST_CASE("core::numerics: shared momentum changes local steps between averages, not a global average's") {
  const auto& train = fashion(dm::Split::train);
  const auto& test = fashion(dm::Split::test);
  auto spec = mlp_spec(8, 30);
  spec.sgd.momentum = 0.9;
  spec.sgd.nesterov = true;
  auto shared_spec = spec;
  shared_spec.shared_momentum = true;
  SUBCASE("an average every iteration: one step per period, the rebuilt momentum is the replicas' mean") {
    ds::VirtualReplicas central(spec, train, test);
    ds::VirtualReplicas shared(shared_spec, train, test);
    dt::AllReducePolicy allreduce;
    dt::GlobalAveragePolicy average;
    for (std::int64_t t = 0; t < spec.iterations; ++t) {
      central.step(t, allreduce.graph_for(t, nullptr), false);
      shared.step(t, average.graph_for(t, nullptr), false);
    }
    const double diff = max_relative_difference(central.params(), shared.params());
    MESSAGE("max relative difference to centralized SGD after 30 iterations: " << diff);
    CHECK(diff < 1e-5);
  }
  SUBCASE("local steps between averages: the replicas leave each average with one momentum") {
    ds::VirtualReplicas own(spec, train, test);
    ds::VirtualReplicas shared(shared_spec, train, test);
    dt::PeriodicAveragePolicy own_policy(std::make_unique<dt::LocalPolicy>(8), 2);
    dt::PeriodicAveragePolicy shared_policy(std::make_unique<dt::LocalPolicy>(8), 2);
    for (std::int64_t t = 0; t < spec.iterations; ++t) {
      own.step(t, own_policy.graph_for(t, nullptr), false);
      shared.step(t, shared_policy.graph_for(t, nullptr), false);
    }
    const double diff = max_relative_difference(own.params(), shared.params());
    MESSAGE("max relative difference to own momentum after 30 iterations: " << diff);
    CHECK(diff > 1e-4);
  }
}

TEST_CASE("core::numerics: the complete graph's global-average shortcut agrees with its mixing matrix") {
  const auto& train = fashion(dm::Split::train);
  const auto& test = fashion(dm::Split::test);
  auto spec = mlp_spec(8, 40);
  spec.sgd.momentum = 0.9;
  // Weights 1/n up to 1e-9 (rows still sum to 1): no longer W = 11^T/n exactly, so mixed term by term.
  std::vector<std::vector<dt::MixingEntry>> rows(8);
  for (int i = 0; i < 8; ++i) {
    for (int j = 0; j < 8; ++j) {
      const double skew = j == i ? 7e-9 : -1e-9;
      rows[static_cast<std::size_t>(i)].push_back({j, 1.0 / 8.0 + skew});
    }
  }
  dt::SequencePolicy exact(dt::GraphSequence(dt::complete(8)));
  dt::SequencePolicy termwise(dt::GraphSequence(dt::Graph("nearly-complete", std::move(rows))));
  ds::VirtualReplicas fast(spec, train, test);
  ds::VirtualReplicas slow(spec, train, test);
  for (std::int64_t t = 0; t < spec.iterations; ++t) {
    fast.step(t, exact.graph_for(t, nullptr), false);
    slow.step(t, termwise.graph_for(t, nullptr), false);
  }
  const double diff = max_relative_difference(fast.params(), slow.params());
  MESSAGE("max relative difference after 40 iterations: " << diff);
  CHECK(diff < 1e-5);
}

TEST_CASE("core::numerics: the same seed gives bit-identical metrics whatever the thread count") {
  const auto& train = fashion(dm::Split::train);
  const auto& test = fashion(dm::Split::test);
  auto spec = mlp_spec(12, 40);
  spec.eval_every = 10;
  spec.sgd.momentum = 0.9;
  std::vector<std::vector<ds::MetricsRow>> runs;
  for (unsigned threads : {1u, 2u}) {
    spec.threads = threads;
    dt::SequencePolicy policy(dt::one_peer_exponential(12));
    Rows rows;
    ds::run_numerics(spec, train, test, policy, rows);
    runs.push_back(rows.rows);
  }
  REQUIRE(runs[0].size() == 5);
  REQUIRE(runs[1].size() == 5);
  for (std::size_t r = 0; r < runs[0].size(); ++r) {
    CHECK(runs[0][r].test_loss == runs[1][r].test_loss);
    CHECK(runs[0][r].consensus_distance == runs[1][r].consensus_distance);
    CHECK(runs[0][r].norm_variance == runs[1][r].norm_variance);
    CHECK(runs[0][r].replica_accuracy_mean == runs[1][r].replica_accuracy_mean);
  }
  // Gossip on a sparse time-varying graph leaves the replicas apart.
  CHECK(runs[0].back().consensus_distance > 0.0);
}

TEST_CASE("core::numerics: gossip mixed from column blocks gives the bits of row-major mixing") {
  const auto& train = fashion(dm::Split::train);
  const auto& test = fashion(dm::Split::test);
  auto spec = mlp_spec(24, 6);
  spec.sgd = {.momentum = 0.9, .weight_decay = 1e-4, .nesterov = true};
  // Tiles make the local step write its parameters column block by column block for mixing to read; in
  // place they stay row-major. Steps 2 and 5 are measured, which keeps them row-major in both.
  std::vector<std::unique_ptr<ds::VirtualReplicas>> runs;
  for (const ds::MixWalk walk : {ds::MixWalk::tiles, ds::MixWalk::in_place}) {
    spec.mix_walk = walk;
    dt::SequencePolicy policy(dt::GraphSequence(dt::exponential(24)));
    auto& run = runs.emplace_back(std::make_unique<ds::VirtualReplicas>(spec, train, test));
    for (std::int64_t t = 0; t < spec.iterations; ++t) {
      run->step(t, policy.graph_for(t, nullptr), t % 3 == 2);
    }
  }
  const ds::ConstReplicaView a = runs[0]->params();
  const ds::ConstReplicaView b = runs[1]->params();
  for (std::size_t i = 0; i < a.rows; ++i) {
    CHECK(std::equal(a.row(i).begin(), a.row(i).end(), b.row(i).begin()));
  }
  CHECK(max_relative_difference(a, b) == 0.0);
}

TEST_CASE("core::numerics: a batch larger than a replica's shard is an error about the batch per worker") {
  auto spec = mlp_spec(1000, 10);
  spec.batch_per_worker = 100;  // 60000 / 1000 = 60 samples per shard
  CHECK(input_refused([&] {
          ds::VirtualReplicas(spec, fashion(dm::Split::train), fashion(dm::Split::test));
        }) == dm::RunInput::batch_per_worker);
}

TEST_CASE("core::numerics: augment_copies trains on the expanded set, its epochs counting every view") {
  // 20 views of 60000 images over 8 replicas: shards of 150000 samples, 9375 batches of 16 an epoch.
  auto spec = mlp_spec(8, 300);
  spec.augment_copies = 20;
  spec.sgd.momentum = 0.9;
  spec.lr.peak = 0.05;
  dt::SequencePolicy ring(dt::GraphSequence(dt::ring(8)));
  Rows rows;
  const auto result = ds::run_numerics(spec, fashion(dm::Split::train), fashion(dm::Split::test), ring, rows);
  MESSAGE("test accuracy after 300 iterations on 20 views: " << result.final_test_accuracy);
  CHECK(rows.rows.back().epoch == dbench::testing::approx(300.0 / 9375.0));
  CHECK(result.final_test_accuracy > 0.7);
}

TEST_CASE(
    "core::numerics: with augmentation, the shared centralized step reads the views a gathered step does") {
  // Centralized steps on identical replicas read original images in place and views from a matrix; gossip
  // on the complete graph without momentum gathers every sample: the two must train the same model.
  const auto& train = fashion(dm::Split::train);
  const auto& test = fashion(dm::Split::test);
  auto spec = mlp_spec(8, 60);
  spec.augment_copies = 10;
  ds::VirtualReplicas central(spec, train, test);
  ds::VirtualReplicas gossip(spec, train, test);
  auto plain_spec = spec;
  plain_spec.augment_copies = 1;
  ds::VirtualReplicas plain(plain_spec, train, test);
  dt::AllReducePolicy allreduce;
  dt::SequencePolicy complete(dt::GraphSequence(dt::complete(8)));
  for (std::int64_t t = 0; t < spec.iterations; ++t) {
    central.step(t, allreduce.graph_for(t, nullptr), false);
    gossip.step(t, complete.graph_for(t, nullptr), false);
    plain.step(t, allreduce.graph_for(t, nullptr), false);
  }
  const double diff = max_relative_difference(central.params(), gossip.params());
  MESSAGE("max relative difference after 60 iterations: " << diff);
  CHECK(diff < 1e-5);
  // Another training set: another model.
  CHECK(max_relative_difference(central.params(), plain.params()) > 1e-3);
}

TEST_CASE("core::numerics: augment_copies on data that are not images is an error about the copies") {
  dm::SyntheticSpec synthetic;
  synthetic.train_size = 1000;
  synthetic.test_size = 100;
  const auto train = dm::make_synthetic(synthetic, dm::Split::train);
  const auto test = dm::make_synthetic(synthetic, dm::Split::test);
  auto spec = mlp_spec(4, 1);
  spec.model.input_height = 1;
  spec.model.input_width = 32;
  spec.augment_copies = 2;
  CHECK(input_refused([&] { ds::VirtualReplicas(spec, train, test); }) == dm::RunInput::augment_copies);
}

TEST_CASE("core::numerics: a graph on the wrong number of nodes is rejected") {
  const auto spec = mlp_spec(8, 1);
  ds::VirtualReplicas replicas(spec, fashion(dm::Split::train), fashion(dm::Split::test));
  dt::SequencePolicy ring(dt::GraphSequence(dt::ring(6)));
  CHECK(input_refused([&] { replicas.step(0, ring.graph_for(0, nullptr), false); }) == dm::RunInput::workers);
}

TEST_CASE("core::numerics: a divergence is reported the iteration it shows, whatever eval_every") {
  // lr = 1e6 blows the MLP up within a few steps; the iteration named must not wait for an evaluation.
  const auto diverged_at = [](std::int64_t eval_every) -> std::int64_t {
    auto spec = mlp_spec(8, 200);
    spec.lr.peak = 1e6;
    spec.eval_every = eval_every;
    dt::SequencePolicy policy(dt::GraphSequence(dt::ring(8)));
    Rows rows;
    try {
      ds::run_numerics(spec, fashion(dm::Split::train), fashion(dm::Split::test), policy, rows);
    } catch (const std::runtime_error& e) {
      const std::string message = e.what();
      CAPTURE(message);
      const auto at = message.find("diverged at iteration ");
      REQUIRE(at != std::string::npos);
      return std::stoll(message.substr(at + 22));
    }
    FAIL("lr = 1e6 did not diverge");
    return -1;
  };
  const std::int64_t every_iteration = diverged_at(1);
  CHECK(every_iteration < 20);
  CHECK(diverged_at(100) == every_iteration);
}

TEST_CASE("core::lr_schedule: warm-up, step and cosine decay") {
  ds::LrSchedule lr;
  lr.peak = 0.4;
  lr.iterations = 101;
  lr.warmup_iterations = 4;
  CHECK(lr.at(0) == dbench::testing::approx(0.1));
  CHECK(lr.at(3) == dbench::testing::approx(0.4));
  CHECK(lr.at(50) == dbench::testing::approx(0.4));
  lr.decay = ds::LrDecay::step;
  lr.milestones = {10, 20};
  lr.gamma = 0.5;
  CHECK(lr.at(9) == dbench::testing::approx(0.4));
  CHECK(lr.at(10) == dbench::testing::approx(0.2));
  CHECK(lr.at(25) == dbench::testing::approx(0.1));
  lr.decay = ds::LrDecay::cosine;
  lr.min_lr = 0.0;
  CHECK(lr.at(4) == dbench::testing::approx(0.4));
  CHECK(lr.at(52) == dbench::testing::approx(0.2));  // half way through the decay
  CHECK(lr.at(100) == doctest::Approx(0.0));
}
