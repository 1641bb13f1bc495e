#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <span>
#include <vector>

#include "core/aligned_buffer.hpp"
#include "core/errors.hpp"
#include "core/replica_store.hpp"
#include "core/row_gemm.hpp"
#include "core/sgd.hpp"
#include "support/approx.hpp"
#include "test_helpers.hpp"

namespace core = dbench::core;

namespace {

/// Two replicas of three parameters, all x = 1 and g = 0.5 (binary-exact, so the expected values are exact).
core::ReplicaStore exact_store() {
  core::ReplicaStore store(2, core::ParamLayout({{"w", 3}}));
  for (std::size_t i = 0; i < 2; ++i) {
    for (float& x : store.params().row(i)) {
      x = 1.0f;
    }
    for (float& g : store.grads().row(i)) {
      g = 0.5f;
    }
  }
  return store;
}

void check_all(core::ConstReplicaView v, float expected) {
  for (std::size_t i = 0; i < v.rows; ++i) {
    for (float x : v.row(i)) {
      CHECK(x == expected);
    }
  }
}

}  // namespace

TEST_CASE("core::sgd: matches a hand computation of two steps with momentum and weight decay") {
  // lr 0.25, mu 0.5, lambda 0.5, x0 = 1, g = 0.5.
  // step 1: d = 0.5 + 0.5 * 1 = 1; buf = d = 1; x = 1 - 0.25 * 1 = 0.75
  // step 2: d = 0.5 + 0.5 * 0.75 = 0.875; buf = 0.5 * 1 + 0.875 = 1.375; x = 0.75 - 0.25 * 1.375 = 0.40625
  core::ReplicaStore store = exact_store();
  core::Sgd sgd({.momentum = 0.5, .weight_decay = 0.5, .nesterov = false}, 2);
  sgd.step(0.25, store.params(), store.grads(), store.momentum());
  check_all(store.params(), 0.75f);
  check_all(store.momentum(), 1.0f);
  sgd.step(0.25, store.params(), store.grads(), store.momentum());
  check_all(store.params(), 0.40625f);
  check_all(store.momentum(), 1.375f);
  CHECK(sgd.steps() == 2);
}

TEST_CASE("core::sgd: matches a hand computation of two Nesterov steps") {
  // step 1: d = 1; buf = 1; d = 1 + 0.5 * 1 = 1.5; x = 1 - 0.25 * 1.5 = 0.625
  // step 2: d = 0.5 + 0.5 * 0.625 = 0.8125; buf = 0.5 + 0.8125 = 1.3125; d = 0.8125 + 0.5 * 1.3125 = 1.46875;
  //         x = 0.625 - 0.25 * 1.46875 = 0.2578125
  core::ReplicaStore store = exact_store();
  core::Sgd sgd({.momentum = 0.5, .weight_decay = 0.5, .nesterov = true});
  sgd.step(0.25, store.params(), store.grads(), store.momentum());
  check_all(store.params(), 0.625f);
  sgd.step(0.25, store.params(), store.grads(), store.momentum());
  check_all(store.params(), 0.2578125f);
  check_all(store.momentum(), 1.3125f);
}

TEST_CASE("core::sgd: without momentum it is plain gradient descent and leaves the buffers alone") {
  // x = 1 - 0.25 * (0.5 + 0.5) = 0.75, then 0.75 - 0.25 * (0.5 + 0.375) = 0.53125.
  core::ReplicaStore store = exact_store();
  core::Sgd sgd({.momentum = 0.0, .weight_decay = 0.5});
  sgd.step(0.25, store.params(), store.grads(), store.momentum());
  sgd.step(0.25, store.params(), store.grads(), {});
  check_all(store.params(), 0.53125f);
  check_all(store.momentum(), 0.0f);
}

TEST_CASE("core::sgd: reset makes the next step start the momentum afresh") {
  core::ReplicaStore store = exact_store();
  core::Sgd sgd({.momentum = 0.5});
  sgd.step(0.25, store.params(), store.grads(), store.momentum());
  sgd.step(0.25, store.params(), store.grads(), store.momentum());
  check_all(store.momentum(), 0.75f);  // 0.5 * 0.5 + 0.5
  sgd.reset();
  sgd.step(0.25, store.params(), store.grads(), store.momentum());
  check_all(store.momentum(), 0.5f);
}

TEST_CASE("core::sgd: agrees with the PyTorch formula in double on random values") {
  const std::size_t n = 3;
  const std::size_t p = 1001;
  core::ReplicaStore store(n, core::ParamLayout({{"w", p}}));
  dbench::core::testing::TestRng rng(5);
  core::testing::fill_uniform(store.params(), rng, -1.0f, 1.0f);
  std::vector<double> x(n * p);
  std::vector<double> buf(n * p, 0.0);
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t c = 0; c < p; ++c) {
      x[i * p + c] = store.params().row_data(i)[c];
    }
  }
  const double mu = 0.9;
  const double lambda = 1e-3;
  core::Sgd sgd({.momentum = mu, .weight_decay = lambda, .nesterov = true}, 2);
  for (int step = 0; step < 5; ++step) {
    core::testing::fill_uniform(store.grads(), rng, -1.0f, 1.0f);
    const double lr = 0.1 / (step + 1);
    for (std::size_t i = 0; i < n; ++i) {
      for (std::size_t c = 0; c < p; ++c) {
        double& xv = x[i * p + c];
        double& b = buf[i * p + c];
        const double d = store.grads().row_data(i)[c] + lambda * xv;
        b = step == 0 ? d : mu * b + d;
        xv -= lr * (d + mu * b);
      }
    }
    sgd.step(lr, store.params(), store.grads(), store.momentum());
  }
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t c = 0; c < p; ++c) {
      // Parameters of order 1 in float: the rounding is absolute, also where a value nears zero.
      REQUIRE(store.params().row_data(i)[c] == doctest::Approx(x[i * p + c]).epsilon(1e-5));
    }
  }
}

TEST_CASE("core::sgd: rejects out-of-range hyper-parameters and mismatched buffers") {
  CHECK_THROWS_AS(core::Sgd({.momentum = -0.1}), core::ValueError);
  CHECK_THROWS_AS(core::Sgd({.weight_decay = -1.0}), core::ValueError);
  CHECK_THROWS_AS(core::Sgd({.momentum = 0.0, .nesterov = true}), core::ValueError);
  CHECK_THROWS_AS(core::Sgd({.momentum = std::nan("")}), core::ValueError);
  core::ReplicaStore a(2, core::ParamLayout({{"w", 3}}));
  core::ReplicaStore b(3, core::ParamLayout({{"w", 3}}));
  core::Sgd sgd({.momentum = 0.9});
  CHECK_THROWS_AS(sgd.step(0.1, a.params(), b.grads(), a.momentum()), core::ShapeError);
  CHECK_THROWS_AS(sgd.step(0.1, a.params(), a.grads(), b.momentum()), core::ShapeError);
  CHECK_THROWS_AS(sgd.step(std::nan(""), a.params(), a.grads(), a.momentum()), core::ValueError);
}

TEST_CASE("core::sgd: step_replica on every replica then finish_step is one step") {
  core::ReplicaStore whole = exact_store();
  core::ReplicaStore parts = exact_store();
  core::Sgd a({.momentum = 0.5, .weight_decay = 0.5, .nesterov = true});
  core::Sgd b({.momentum = 0.5, .weight_decay = 0.5, .nesterov = true});
  for (int step = 0; step < 2; ++step) {
    a.step(0.25, whole.params(), whole.grads(), whole.momentum());
    for (std::size_t i = 0; i < 2; ++i) {
      // Replica 0 prefetches replica 1's parameters: a hint, which changes nothing.
      const std::span<const float> ahead =
          i == 0 ? std::span<const float>(parts.params().row(1)) : std::span<const float>();
      b.step_replica(0.25, parts.params().row(i), parts.grads().row(i), parts.momentum().row(i), ahead);
    }
    b.finish_step();
  }
  check_all(parts.params(), 0.2578125f);
  check_all(parts.momentum(), 1.3125f);
  CHECK(b.steps() == 2);
  CHECK_THROWS_AS(
      b.step_replica(0.25, parts.params().row(0), parts.grads().row(0).first(2), parts.momentum().row(0)),
      core::ShapeError);
  CHECK_THROWS_AS(b.step_replica(0.25, parts.params().row(0), parts.grads().row(0), {}), core::ShapeError);
  CHECK_THROWS_AS(b.step_replica(0.25, parts.params().row(0), parts.grads().row(0), parts.momentum().row(0),
                                 parts.params().row(1).first(1)),
                  core::ShapeError);
}

TEST_CASE("core::sgd: the AVX-512 and the portable kernel give bitwise the same parameters") {
  for (const double momentum : {0.0, 0.9}) {
    for (const double decay : {0.0, 1e-3}) {
      for (const bool nesterov : {false, true}) {
        if (nesterov && momentum == 0.0) {
          continue;
        }
        CAPTURE(momentum);
        CAPTURE(decay);
        CAPTURE(nesterov);
        const core::SgdConfig config{.momentum = momentum, .weight_decay = decay, .nesterov = nesterov};
        core::ReplicaStore a(3, core::ParamLayout({{"w", 77}}));
        core::ReplicaStore b(3, core::ParamLayout({{"w", 77}}));
        core::testing::TestRng rng(12);
        core::testing::fill_uniform(a.params(), rng, -1.0f, 1.0f);
        std::copy_n(a.params().data, 3 * a.stride(), b.params().data);
        core::Sgd fast(config, 2, true);
        core::Sgd portable(config, 1, false);
        for (int step = 0; step < 3; ++step) {
          core::testing::fill_uniform(a.grads(), rng, -1.0f, 1.0f);
          std::copy_n(a.grads().data, 3 * a.stride(), b.grads().data);
          fast.step(0.3, a.params(), a.grads(), a.momentum());
          portable.step(0.3, b.params(), b.grads(), b.momentum());
        }
        for (std::size_t i = 0; i < 3; ++i) {
          CHECK(std::equal(a.replica(i).begin(), a.replica(i).end(), b.replica(i).begin()));
        }
      }
    }
  }
}

TEST_CASE("core::sgd: step_replica_into writes step_replica's values column block by column block") {
  const std::size_t n = 3;
  const std::size_t p = 333;  // blocks of 128 or 48 columns, and a masked last vector
  const core::ParamLayout layout({{"w", p}});
  for (const core::SgdConfig config :
       {core::SgdConfig{}, core::SgdConfig{.momentum = 0.5},
        core::SgdConfig{.momentum = 0.9, .weight_decay = 1e-3, .nesterov = true}}) {
    for (const bool avx512 : {true, false}) {
      for (const std::size_t width : {std::size_t{128}, std::size_t{48}}) {
        CAPTURE(config.momentum);
        CAPTURE(config.nesterov);
        CAPTURE(avx512);
        CAPTURE(width);
        core::testing::TestRng rng(31);
        core::ReplicaStore in_place(n, layout);
        core::ReplicaStore blocked(n, layout);
        core::testing::fill_uniform(in_place.params(), rng, -1.0f, 1.0f);
        std::copy_n(in_place.params().data, n * in_place.stride(), blocked.params().data);
        const core::ReplicaView target = blocked.mix_target();
        const core::BlockedView out{target.data, n, p, target.stride, width};
        core::Sgd a(config, 1, avx512);
        core::Sgd b(config, 1, avx512);
        for (int step = 0; step < 3; ++step) {
          core::testing::fill_uniform(in_place.grads(), rng, -1.0f, 1.0f);
          const double lr = 0.1 / (step + 1);
          for (std::size_t i = 0; i < n; ++i) {
            const auto g = std::span<const float>(in_place.grads().row(i));
            a.step_replica(lr, in_place.params().row(i), g, in_place.momentum().row(i));
            const std::vector<float> before(blocked.params().row(i).begin(), blocked.params().row(i).end());
            b.step_replica_into(
                lr, blocked.params().row(i), g, blocked.momentum().row(i), out, i,
                i + 1 < n ? std::span<const float>(blocked.params().row(i + 1)) : std::span<const float>());
            // The parameters are only read.
            CHECK(std::equal(before.begin(), before.end(), blocked.params().row(i).begin()));
          }
          a.finish_step();
          b.finish_step();
          for (std::size_t i = 0; i < n; ++i) {
            for (std::size_t c = 0; c < p; ++c) {
              REQUIRE(core::testing::blocked_at(out, i, c) == in_place.params().row_data(i)[c]);
              REQUIRE(blocked.momentum().row_data(i)[c] == in_place.momentum().row_data(i)[c]);
              blocked.params().row_data(i)[c] = core::testing::blocked_at(out, i, c);
            }
          }
        }
      }
    }
  }
  core::ReplicaStore store(2, layout);
  core::Sgd sgd({.momentum = 0.9});
  const core::ReplicaView target = store.mix_target();
  const core::BlockedView out{target.data, 2, p, target.stride, 128};
  CHECK_THROWS_AS(sgd.step_replica_into(0.1, store.params().row(0), store.grads().row(0),
                                        store.momentum().row(0), out, 2),
                  core::ShapeError);
  CHECK_THROWS_AS(sgd.step_replica_into(0.1, store.params().row(0).first(10), store.grads().row(0).first(10),
                                        store.momentum().row(0).first(10), out, 0),
                  core::ShapeError);
  CHECK_THROWS_AS(sgd.step_replica_into(std::nan(""), store.params().row(0), store.grads().row(0),
                                        store.momentum().row(0), out, 0),
                  core::ValueError);
}

TEST_CASE("core::sgd: a matrix stepped from its outer products gets rows_weight_grad's gradient") {
  // A 13 x 48 matrix (8 + 4 + 1 rows, a pair and a single of vectors) at column 16 of 661, batch 5.
  const std::size_t n = 2;
  const std::size_t m = 5;
  const std::size_t out = 13;
  const std::size_t in = 48;
  const std::size_t offset = 16;
  const std::size_t p = offset + out * in + 21;
  const core::ParamLayout layout({{"w", p}});
  for (const core::SgdConfig config :
       {core::SgdConfig{}, core::SgdConfig{.momentum = 0.5},
        core::SgdConfig{.momentum = 0.9, .weight_decay = 1e-3, .nesterov = true}}) {
    for (const std::size_t width : {std::size_t{0}, std::size_t{32}, std::size_t{128}}) {
      CAPTURE(config.momentum);
      CAPTURE(width);
      core::testing::TestRng rng(77);
      core::ReplicaStore reference(n, layout);
      core::ReplicaStore fused(n, layout);
      core::testing::fill_uniform(reference.params(), rng, -1.0f, 1.0f);
      std::copy_n(reference.params().data, n * reference.stride(), fused.params().data);
      const core::ReplicaView target = fused.mix_target();
      const core::BlockedView blocks{target.data, n, p, target.stride, width};
      core::Sgd a(config, 1);
      core::Sgd b(config, 1);
      std::vector<float> delta(m * out);
      std::vector<float> samples(m * in);
      std::vector<const float*> rows(m);
      for (std::size_t r = 0; r < m; ++r) {
        rows[r] = samples.data() + r * in;
      }
      const core::OuterGradient outer{
          .offset = offset, .out = out, .in = in, .m = m, .delta = delta.data(), .a = samples.data()};
      if (!b.computes(outer, width)) {
        MESSAGE("no AVX-512 here: the step does not compute outer products");
        CHECK_THROWS_AS(b.step_replica(0.1, fused.params().row(0), fused.grads().row(0),
                                       fused.momentum().row(0), {}, outer),
                        core::ShapeError);
        return;
      }
      for (int step = 0; step < 3; ++step) {
        const double lr = 0.1 / (step + 1);
        for (std::size_t i = 0; i < n; ++i) {
          for (float& v : delta) {
            v = rng.uniform(-1.0f, 1.0f);
          }
          for (float& v : samples) {
            v = rng.uniform(-2.0f, 2.0f);
          }
          core::testing::fill_uniform(reference.grads(), rng, -1.0f, 1.0f);
          const std::span<float> g = reference.grads().row(i);
          std::copy(g.begin(), g.end(), fused.grads().row(i).begin());
          // The reference's gradient of the matrix; the fused step must not read g there.
          core::rows_weight_grad(rows.data(), m, delta.data(), out, in, g.data() + offset);
          std::fill_n(fused.grads().row_data(i) + offset, out * in, std::nanf(""));
          a.step_replica(lr, reference.params().row(i), g, reference.momentum().row(i));
          if (width == 0) {
            b.step_replica(lr, fused.params().row(i), fused.grads().row(i), fused.momentum().row(i), {},
                           outer);
          } else {
            b.step_replica_into(lr, fused.params().row(i), fused.grads().row(i), fused.momentum().row(i),
                                blocks, i, {}, outer);
          }
        }
        a.finish_step();
        b.finish_step();
        for (std::size_t i = 0; i < n; ++i) {
          for (std::size_t c = 0; c < p; ++c) {
            const float stepped =
                width == 0 ? fused.params().row_data(i)[c] : core::testing::blocked_at(blocks, i, c);
            REQUIRE(stepped == reference.params().row_data(i)[c]);
            REQUIRE(fused.momentum().row_data(i)[c] == reference.momentum().row_data(i)[c]);
            fused.params().row_data(i)[c] = stepped;
          }
        }
      }
    }
  }
}

TEST_CASE("core::sgd: outer products the step cannot compute are a shape error") {
  const core::ParamLayout layout({{"w", 200}});
  core::ReplicaStore store(1, layout);
  std::vector<float> delta(4 * 3);
  std::vector<float> samples(4 * 48);
  core::Sgd sgd({.momentum = 0.9});
  const core::OuterGradient good{
      .offset = 16, .out = 3, .in = 48, .m = 4, .delta = delta.data(), .a = samples.data()};
  CHECK_FALSE(sgd.computes(core::OuterGradient{}, 0));
  CHECK_FALSE(core::Sgd({}, 1, false).computes(good, 0));
  core::OuterGradient shifted = good;
  shifted.offset = 8;
  core::OuterGradient narrow = good;
  narrow.in = 40;
  CHECK_FALSE(sgd.computes(shifted, 0));
  CHECK_FALSE(sgd.computes(narrow, 0));
  CHECK_FALSE(sgd.computes(good, 40));
  core::OuterGradient tall = good;
  tall.out = 4;  // ends at 16 + 4 * 48 = 208 > 200
  for (const core::OuterGradient& bad : {shifted, narrow, tall}) {
    CHECK_THROWS_AS(
        sgd.step_replica(0.1, store.params().row(0), store.grads().row(0), store.momentum().row(0), {}, bad),
        core::ShapeError);
  }
  const core::ReplicaView target = store.mix_target();
  const core::BlockedView blocks{target.data, 1, 200, target.stride, 40};
  CHECK_THROWS_AS(sgd.step_replica_into(0.1, store.params().row(0), store.grads().row(0),
                                        store.momentum().row(0), blocks, 0, {}, good),
                  core::ShapeError);
}

TEST_CASE("core::sgd: LARS's trust ratio matches a hand computation and is 1 without a norm") {
  // eta ||w|| / (||g|| + lambda ||w||): 0.1 * 5 / (1 + 0.2 * 5) = 0.25.
  CHECK(core::lars_trust_ratio(0.1, 5.0, 1.0, 0.2) == dbench::testing::approx(0.25));
  // Without weight decay: 0.001 * 10 / 0.5 = 0.02.
  CHECK(core::lars_trust_ratio(0.001, 10.0, 0.5, 0.0) == dbench::testing::approx(0.02));
  CHECK(core::lars_trust_ratio(0.1, 0.0, 1.0, 0.2) == 1.0);
  CHECK(core::lars_trust_ratio(0.1, 5.0, 0.0, 0.2) == 1.0);
}

TEST_CASE("core::sgd: LARS adapts weights, not biases or batch-norm parameters") {
  CHECK(core::lars_adapts("fc1.weight"));
  CHECK(core::lars_adapts("layer1.0.conv2.weight"));
  CHECK(core::lars_adapts("w"));
  CHECK_FALSE(core::lars_adapts("fc1.bias"));
  CHECK_FALSE(core::lars_adapts("bn1.weight"));
  CHECK_FALSE(core::lars_adapts("layer1.0.bn2.weight"));
  CHECK_FALSE(core::lars_adapts("layer2.0.downsample.1.weight"));
}

TEST_CASE("core::sgd: two LARS steps with momentum and weight decay match a hand computation") {
  // A weight w = (3, 4) with gradient (0.6, 0.8), a bias b = (1, 1) with gradient (0.5, 0.5); eta 0.1,
  // lambda 0.2, mu 0.9, lr 1.
  // step 1: r_w = 0.1 * 5 / (1 + 0.2 * 5) = 0.25, d_w = 0.25 * ((0.6, 0.8) + 0.2 * (3, 4)) = (0.3, 0.4),
  //         buf_w = d_w, w = (2.7, 3.6); the bias is not adapted: d_b = 0.5 + 0.2 = 0.7, b = 0.3.
  // step 2: ||w|| = 4.5, r_w = 0.45 / 1.9, d_w = r_w ((0.6, 0.8) + 0.2 (2.7, 3.6)) = r_w (1.14, 1.52),
  //         buf_w = 0.9 (0.3, 0.4) + d_w, w -= buf_w; d_b = 0.5 + 0.2 * 0.3 = 0.56, buf_b = 0.63 + 0.56,
  //         b = 0.3 - 1.19.
  const core::ParamLayout layout({{"fc1.weight", 2}, {"fc1.bias", 2}});
  core::ReplicaStore store(1, layout);
  const std::vector<float> x0{3.0f, 4.0f, 1.0f, 1.0f};
  const std::vector<float> g{0.6f, 0.8f, 0.5f, 0.5f};
  std::copy(x0.begin(), x0.end(), store.params().row(0).begin());
  std::copy(g.begin(), g.end(), store.grads().row(0).begin());
  core::Sgd sgd({.momentum = 0.9, .weight_decay = 0.2, .lars = true, .lars_eta = 0.1}, layout);
  sgd.step(1.0, store.params(), store.grads(), store.momentum());
  const auto x = store.params().row(0);
  CHECK(x[0] == dbench::testing::approx(2.7).epsilon(1e-6));
  CHECK(x[1] == dbench::testing::approx(3.6).epsilon(1e-6));
  CHECK(x[2] == dbench::testing::approx(0.3).epsilon(1e-6));
  CHECK(store.momentum().row(0)[0] == dbench::testing::approx(0.3).epsilon(1e-6));
  sgd.step(1.0, store.params(), store.grads(), store.momentum());
  const double r = 0.45 / 1.9;
  CHECK(x[0] == dbench::testing::approx(2.7 - (0.27 + r * 1.14)).epsilon(1e-6));
  CHECK(x[1] == dbench::testing::approx(3.6 - (0.36 + r * 1.52)).epsilon(1e-6));
  CHECK(x[2] == dbench::testing::approx(0.3 - 1.19).epsilon(1e-6));
  CHECK(x[3] == dbench::testing::approx(0.3 - 1.19).epsilon(1e-6));
}

TEST_CASE("core::sgd: LARS gives the same bits in every kernel and entry point") {
  // Tensors that start inside a 16-float vector and a 64-byte line, so that the per-tensor split is tested.
  const core::ParamLayout layout({{"fc1.weight", 203}, {"fc1.bias", 7}, {"fc2.weight", 70}, {"fc2.bias", 3}});
  const std::size_t p = layout.size();
  const core::SgdConfig config{
      .momentum = 0.9, .weight_decay = 1e-3, .nesterov = true, .lars = true, .lars_eta = 0.01};
  dbench::core::testing::TestRng rng(11);
  core::ReplicaStore init(1, layout);
  core::testing::fill_uniform(init.params(), rng, -1.0f, 1.0f);
  std::vector<std::vector<float>> grads(3, std::vector<float>(p));
  for (auto& gs : grads) {
    for (float& v : gs) {
      v = rng.uniform(-1.0f, 1.0f);
    }
  }
  // Reference: the portable kernel through step().
  core::ReplicaStore ref(1, layout);
  std::copy(init.params().row(0).begin(), init.params().row(0).end(), ref.params().row(0).begin());
  core::Sgd portable(config, layout, 1, false);
  for (const auto& gs : grads) {
    std::copy(gs.begin(), gs.end(), ref.grads().row(0).begin());
    portable.step(0.5, ref.params(), ref.grads(), ref.momentum());
  }
  for (bool avx512 : {false, true}) {
    CAPTURE(avx512);
    core::Sgd sgd(config, layout, 1, avx512);
    CHECK_FALSE(sgd.computes(
        core::OuterGradient{
            .offset = 0, .out = 1, .in = 16, .m = 1, .delta = grads[0].data(), .a = grads[0].data()},
        16));
    std::vector<float> x(init.params().row(0).begin(), init.params().row(0).end());
    std::vector<float> buf(p);
    // step_replica_into a blocked matrix 32 columns wide, then back: the streaming path with LARS.
    const std::size_t width = 32;
    const std::size_t blocks = (p + width - 1) / width;
    core::AlignedBuffer blocked(blocks * width);
    for (std::size_t k = 0; k < grads.size(); ++k) {
      if (k % 2 == 0) {
        sgd.step_replica(0.5, x, grads[k], buf);
      } else {
        const core::BlockedView out{blocked.data(), 1, p, blocks * width, width};
        sgd.step_replica_into(0.5, x, grads[k], buf, out, 0);
        for (std::size_t c = 0; c < p; ++c) {
          x[c] = out.slice(0, c / width)[c % width];
        }
      }
      sgd.finish_step();
    }
    for (std::size_t c = 0; c < p; ++c) {
      REQUIRE(x[c] == ref.params().row(0)[c]);
    }
  }
  CHECK_THROWS_AS(core::Sgd(config, 1), core::ValueError);
  CHECK_THROWS_AS(core::Sgd({.lars = true, .lars_eta = 0.0}, layout), core::ValueError);
  core::Sgd sgd(config, layout);
  std::vector<float> part(p / 2);
  CHECK_THROWS_AS(sgd.step_replica(0.1, part, part, part), core::ShapeError);
}
