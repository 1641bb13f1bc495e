#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "core/batched_mlp.hpp"
#include "core/errors.hpp"
#include "core/replica_store.hpp"
#include "core/sgd.hpp"
#include "support/approx.hpp"
#include "test_helpers.hpp"

namespace core = dbench::core;
using core::testing::TestRng;

namespace {

/// Loss, hits and gradient of one replica's batch, computed in double by the textbook formulas.
struct Reference {
  double loss = 0.0;
  int correct = 0;
  std::vector<double> grad;
};

Reference reference(const core::BatchedMlp& mlp, const std::vector<double>& params, const float* x,
                    const std::int32_t* y, std::size_t batch) {
  const auto& w = mlp.widths();
  const auto& t = mlp.layout().tensors();
  const std::size_t layers = w.size() - 1;
  Reference r;
  r.grad.assign(params.size(), 0.0);
  for (std::size_t b = 0; b < batch; ++b) {
    std::vector<std::vector<double>> a(layers + 1);
    a[0].assign(x + b * w[0], x + (b + 1) * w[0]);
    for (std::size_t l = 1; l <= layers; ++l) {
      const double* W = params.data() + t[2 * (l - 1)].offset;
      const double* bias = params.data() + t[2 * (l - 1) + 1].offset;
      a[l].assign(w[l], 0.0);
      for (std::size_t o = 0; o < w[l]; ++o) {
        double z = bias[o];
        for (std::size_t k = 0; k < w[l - 1]; ++k) {
          z += W[o * w[l - 1] + k] * a[l - 1][k];
        }
        a[l][o] = l < layers ? std::max(z, 0.0) : z;
      }
    }
    const std::vector<double>& z = a[layers];
    const double zmax = *std::max_element(z.begin(), z.end());
    double sum = 0.0;
    for (double v : z) {
      sum += std::exp(v - zmax);
    }
    const auto label = static_cast<std::size_t>(y[b]);
    r.loss += (zmax + std::log(sum) - z[label]) / static_cast<double>(batch);
    r.correct += static_cast<std::size_t>(std::max_element(z.begin(), z.end()) - z.begin()) == label ? 1 : 0;
    std::vector<double> delta(z.size());
    for (std::size_t k = 0; k < z.size(); ++k) {
      delta[k] = (std::exp(z[k] - zmax) / sum - (k == label ? 1.0 : 0.0)) / static_cast<double>(batch);
    }
    for (std::size_t l = layers; l >= 1; --l) {
      double* gW = r.grad.data() + t[2 * (l - 1)].offset;
      double* gb = r.grad.data() + t[2 * (l - 1) + 1].offset;
      const double* W = params.data() + t[2 * (l - 1)].offset;
      std::vector<double> back(w[l - 1], 0.0);
      for (std::size_t o = 0; o < w[l]; ++o) {
        gb[o] += delta[o];
        for (std::size_t k = 0; k < w[l - 1]; ++k) {
          gW[o * w[l - 1] + k] += delta[o] * a[l - 1][k];
          back[k] += delta[o] * W[o * w[l - 1] + k];
        }
      }
      if (l == 1) {
        break;
      }
      for (std::size_t k = 0; k < back.size(); ++k) {
        back[k] = a[l - 1][k] > 0.0 ? back[k] : 0.0;
      }
      delta = back;
    }
  }
  return r;
}

/// A small problem: N replicas with their own parameters and batches.
struct Problem {
  core::BatchedMlp mlp;
  std::size_t batch;
  core::ReplicaStore store;
  std::vector<float> inputs;
  std::vector<std::int32_t> labels;

  Problem(std::vector<std::size_t> widths, std::size_t n, std::size_t b, unsigned threads, std::uint64_t seed)
      : mlp(std::move(widths), threads), batch(b), store(n, mlp.layout()) {
    TestRng rng(seed);
    for (std::size_t i = 0; i < n; ++i) {
      mlp.init(store.replica(i), seed * 100 + i);
    }
    inputs.resize(n * b * mlp.inputs());
    for (float& v : inputs) {
      v = rng.uniform(-2.0f, 2.0f);
    }
    labels.resize(n * b);
    for (std::int32_t& y : labels) {
      y = static_cast<std::int32_t>(rng.below(mlp.classes()));
    }
  }
  std::vector<core::BatchStats> train() {
    std::vector<core::BatchStats> stats(store.replicas());
    mlp.train_step(store.params(), inputs, labels, batch, store.grads(), stats);
    return stats;
  }
};

}  // namespace

TEST_CASE("core::batched_mlp: the layout follows nn.Linear's parameters, in order") {
  const core::BatchedMlp mlp({784, 64, 10});
  const auto& t = mlp.layout().tensors();
  REQUIRE(t.size() == 4);
  CHECK(t[0].name == "fc1.weight");
  CHECK(t[0].elements == 64 * 784);
  CHECK(t[1].name == "fc1.bias");
  CHECK(t[1].offset == 64 * 784);
  CHECK(t[2].name == "fc2.weight");
  CHECK(t[3].name == "fc2.bias");
  CHECK(mlp.param_count() == 50890);
  CHECK(mlp.train_flops_per_sample() == 2.0 * (2 * 784 * 64 + 3 * 64 * 10));
}

TEST_CASE("core::batched_mlp: losses, hits and gradients match a double-precision reference") {
  Problem pr({7, 6, 5, 4}, 3, 5, 2, 1);
  const std::vector<core::BatchStats> stats = pr.train();
  for (std::size_t i = 0; i < 3; ++i) {
    CAPTURE(i);
    const std::span<const float> p = pr.store.replica(i);
    const Reference ref = reference(pr.mlp, {p.begin(), p.end()}, pr.inputs.data() + i * pr.batch * 7,
                                    pr.labels.data() + i * pr.batch, pr.batch);
    CHECK(stats[i].loss == dbench::testing::approx(ref.loss).epsilon(1e-5));
    CHECK(stats[i].correct == ref.correct);
    double scale = 0.0;
    for (double g : ref.grad) {
      scale = std::max(scale, std::abs(g));
    }
    for (std::size_t k = 0; k < ref.grad.size(); ++k) {
      REQUIRE(std::abs(pr.store.grads().row_data(i)[k] - ref.grad[k]) < 1e-5 * scale);
    }
  }
}

TEST_CASE("core::batched_mlp: the double reference agrees with central finite differences") {
  Problem pr({4, 3, 3}, 1, 3, 1, 2);
  const std::span<const float> p0 = pr.store.replica(0);
  std::vector<double> p(p0.begin(), p0.end());
  const Reference ref = reference(pr.mlp, p, pr.inputs.data(), pr.labels.data(), pr.batch);
  const double h = 1e-6;
  for (std::size_t k = 0; k < p.size(); ++k) {
    CAPTURE(k);
    std::vector<double> plus = p;
    std::vector<double> minus = p;
    plus[k] += h;
    minus[k] -= h;
    const double fd = (reference(pr.mlp, plus, pr.inputs.data(), pr.labels.data(), pr.batch).loss -
                       reference(pr.mlp, minus, pr.inputs.data(), pr.labels.data(), pr.batch).loss) /
                      (2 * h);
    CHECK(fd == dbench::testing::approx(ref.grad[k]).epsilon(1e-6).scale(1e-3));
  }
}

TEST_CASE("core::batched_mlp: float gradients agree with finite differences of the float loss") {
  Problem pr({6, 5, 4}, 2, 4, 1, 3);
  pr.train();
  const core::AlignedBuffer grads_copy = [&] {
    core::AlignedBuffer b(pr.store.replicas() * pr.store.stride());
    std::copy_n(pr.store.grads().data, b.size(), b.data());
    return b;
  }();
  const float h = 1e-2f;
  for (std::size_t i = 0; i < 2; ++i) {
    for (std::size_t k = 0; k < pr.store.param_count(); k += 3) {
      CAPTURE(i);
      CAPTURE(k);
      float& x = pr.store.replica(i)[k];
      const float saved = x;
      x = saved + h;
      const double up = pr.train()[i].loss;
      x = saved - h;
      const double down = pr.train()[i].loss;
      x = saved;
      const double fd = (up - down) / (2.0 * static_cast<double>(h));
      CHECK(fd ==
            dbench::testing::approx(grads_copy.data()[i * pr.store.stride() + k]).epsilon(2e-2).scale(0.1));
    }
  }
}

TEST_CASE("core::batched_mlp: the fused SGD step gives what train_step then Sgd::step give") {
  for (const bool nesterov : {false, true}) {
    CAPTURE(nesterov);
    Problem fused({9, 7, 4}, 5, 3, 2, 6);
    Problem separate({9, 7, 4}, 5, 3, 3, 6);
    const core::SgdConfig config{.momentum = 0.9, .weight_decay = 0.01, .nesterov = nesterov};
    core::Sgd a(config, 2);
    core::Sgd b(config, 3);
    std::vector<core::BatchStats> stats_a(5);
    for (int step = 0; step < 3; ++step) {
      fused.mlp.train_sgd_step(fused.store.params(), core::contiguous_batches(fused.inputs, fused.labels, 3),
                               3, a, 0.1, fused.store.momentum(), stats_a);
      const std::vector<core::BatchStats> stats_b = separate.train();
      b.step(0.1, separate.store.params(), separate.store.grads(), separate.store.momentum());
      for (std::size_t i = 0; i < 5; ++i) {
        CHECK(stats_a[i].loss == stats_b[i].loss);
      }
    }
    CHECK(a.steps() == 3);
    for (std::size_t i = 0; i < 5; ++i) {
      CHECK(std::equal(fused.store.replica(i).begin(), fused.store.replica(i).end(),
                       separate.store.replica(i).begin()));
    }
  }
}

TEST_CASE("core::batched_mlp: the fused SGD step writes the same parameters column block by column block") {
  Problem in_place({9, 7, 4}, 5, 3, 2, 6);
  Problem blocked({9, 7, 4}, 5, 3, 3, 6);
  const core::SgdConfig config{.momentum = 0.9, .weight_decay = 0.01, .nesterov = true};
  core::Sgd a(config, 2);
  core::Sgd b(config, 3);
  std::vector<core::BatchStats> stats_a(5);
  std::vector<core::BatchStats> stats_b(5);
  const core::ReplicaView target = blocked.store.mix_target();
  const core::BlockedView out{target.data, target.rows, target.cols, target.stride, 32};
  for (int step = 0; step < 3; ++step) {
    in_place.mlp.train_sgd_step(in_place.store.params(),
                                core::contiguous_batches(in_place.inputs, in_place.labels, 3), 3, a, 0.1,
                                in_place.store.momentum(), stats_a);
    blocked.mlp.train_sgd_step(blocked.store.params(),
                               core::contiguous_batches(blocked.inputs, blocked.labels, 3), 3, b, 0.1,
                               blocked.store.momentum(), stats_b, out);
    for (std::size_t i = 0; i < 5; ++i) {
      CHECK(stats_a[i].loss == stats_b[i].loss);
      for (std::size_t c = 0; c < target.cols; ++c) {
        REQUIRE(core::testing::blocked_at(out, i, c) == in_place.store.replica(i)[c]);
        blocked.store.replica(i)[c] = core::testing::blocked_at(out, i, c);
      }
    }
  }
  const core::BlockedView wrong{target.data, 4, target.cols, target.stride, 32};
  CHECK_THROWS_AS(blocked.mlp.train_sgd_step(blocked.store.params(),
                                             core::contiguous_batches(blocked.inputs, blocked.labels, 3), 3,
                                             b, 0.1, blocked.store.momentum(), stats_b, wrong),
                  core::ShapeError);
}

TEST_CASE("core::batched_mlp: the step computes the first layer's weight gradient itself where it can") {
  // 32 inputs, a multiple of 16: the step takes the first layer's weight gradient as outer products where
  // AVX-512 runs. A batch of 1 makes each of its elements one product, the same in any summation order, so
  // the comparison with train_step's gradient (from BLAS) does not depend on the BLAS kernels.
  const core::SgdConfig config{.momentum = 0.9, .weight_decay = 0.01, .nesterov = true};
  for (const std::size_t width : {std::size_t{0}, std::size_t{32}}) {
    CAPTURE(width);
    Problem fused({32, 13, 4}, 5, 1, 2, 9);
    Problem separate({32, 13, 4}, 5, 1, 3, 9);
    core::Sgd a(config, 2);
    core::Sgd b(config, 3);
    std::vector<core::BatchStats> stats(5);
    const core::ReplicaView target = fused.store.mix_target();
    const core::BlockedView out{target.data, target.rows, target.cols, target.stride, width};
    for (int step = 0; step < 3; ++step) {
      fused.mlp.train_sgd_step(fused.store.params(), core::contiguous_batches(fused.inputs, fused.labels, 1),
                               1, a, 0.1, fused.store.momentum(), stats,
                               width == 0 ? core::BlockedView{} : out);
      separate.train();
      b.step(0.1, separate.store.params(), separate.store.grads(), separate.store.momentum());
      for (std::size_t i = 0; i < 5; ++i) {
        for (std::size_t c = 0; c < target.cols; ++c) {
          const float stepped = width == 0 ? fused.store.replica(i)[c] : core::testing::blocked_at(out, i, c);
          REQUIRE(stepped == separate.store.replica(i)[c]);
          REQUIRE(fused.store.momentum().row_data(i)[c] == separate.store.momentum().row_data(i)[c]);
          fused.store.replica(i)[c] = stepped;
        }
      }
    }
  }
}

TEST_CASE("core::batched_mlp: a prefetch hint names the replica the same thread asks for next") {
  Problem p({9, 7, 4}, 40, 3, 3, 8);
  core::Sgd sgd(core::SgdConfig{.momentum = 0.9}, 3);
  const core::BatchFill copy = core::contiguous_batches(p.inputs, p.labels, 3);
  std::mutex mutex;
  std::map<std::thread::id, std::vector<std::pair<std::size_t, std::size_t>>> calls;
  const core::BatchFill recording = [&](std::size_t first, std::size_t count, float* x, std::int32_t* y) {
    {
      const std::lock_guard lock(mutex);
      calls[std::this_thread::get_id()].emplace_back(first, count);
    }
    copy(first, count, x, y);
  };
  std::vector<core::BatchStats> stats(40);
  p.mlp.train_sgd_step(p.store.params(), recording, 3, sgd, 0.1, p.store.momentum(), stats);
  std::vector<int> filled(40, 0);
  for (const auto& [thread, sequence] : calls) {
    for (std::size_t k = 0; k < sequence.size(); ++k) {
      const auto [first, count] = sequence[k];
      REQUIRE(first < 40);
      if (count == 0) {
        // A hint is followed, on the same thread, by the fill of that replica.
        REQUIRE(k + 1 < sequence.size());
        CHECK(sequence[k + 1] == std::pair<std::size_t, std::size_t>{first, 1});
      } else {
        CHECK(count == 1);
        ++filled[first];
      }
    }
  }
  std::size_t hints = 0;
  for (const auto& [thread, sequence] : calls) {
    hints += static_cast<std::size_t>(
        std::count_if(sequence.begin(), sequence.end(), [](const auto& call) { return call.second == 0; }));
  }
  // Every replica but the first each thread computes was hinted.
  CHECK(hints == 40 - calls.size());
  CHECK(std::all_of(filled.begin(), filled.end(), [](int n) { return n == 1; }));
}

TEST_CASE("core::batched_mlp: the shared-parameter gradient is the replicas' mean at any thread count") {
  // 70 replicas: two whole chunks of 32 and a partial one.
  Problem pr({9, 7, 4}, 70, 3, 1, 8);
  pr.store.broadcast_params(0);
  const std::vector<core::BatchStats> expected = pr.train();
  const std::size_t cols = pr.mlp.param_count();
  std::vector<double> mean(cols, 0.0);
  double scale = 0.0;
  for (std::size_t i = 0; i < 70; ++i) {
    for (std::size_t k = 0; k < cols; ++k) {
      mean[k] += pr.store.grads().row_data(i)[k] / 70.0;
    }
  }
  for (double g : mean) {
    scale = std::max(scale, std::abs(g));
  }
  const core::BatchRows fill = core::contiguous_batch_rows(pr.inputs, pr.labels, pr.batch);
  std::vector<std::vector<float>> results;
  for (const unsigned threads : {1u, 3u}) {
    CAPTURE(threads);
    const core::BatchedMlp mlp({9, 7, 4}, threads);
    std::vector<float> grad(cols);
    std::vector<core::BatchStats> stats(70);
    mlp.train_shared(pr.store.replica(0), fill, pr.batch, grad, stats);
    for (std::size_t k = 0; k < cols; ++k) {
      REQUIRE(std::abs(grad[k] - mean[k]) < 1e-5 * scale);
    }
    for (std::size_t i = 0; i < 70; ++i) {
      CHECK(stats[i].loss == dbench::testing::approx(expected[i].loss).epsilon(1e-5));
      CHECK(stats[i].correct == expected[i].correct);
    }
    results.push_back(std::move(grad));
  }
  CHECK(results[0] == results[1]);

  const core::BatchRows bad_label = [&](std::size_t first, std::size_t count, const float** x,
                                        std::int32_t* y) {
    fill(first, count, x, y);
    y[0] = 4;
  };
  std::vector<float> grad(cols);
  std::vector<core::BatchStats> stats(70);
  CHECK_THROWS_AS(pr.mlp.train_shared(pr.store.replica(0), bad_label, pr.batch, grad, stats),
                  core::ValueError);
}

TEST_CASE("core::batched_mlp: buffers kept between calls do not carry results from one call to the next") {
  Problem pr({9, 7, 4}, 70, 3, 1, 8);
  pr.store.broadcast_params(0);
  const core::BatchRows fill = core::contiguous_batch_rows(pr.inputs, pr.labels, pr.batch);
  const auto shared_grad = [&](const core::BatchedMlp& mlp, std::size_t replicas) {
    std::vector<float> grad(mlp.param_count());
    std::vector<core::BatchStats> stats(replicas);
    mlp.train_shared(pr.store.replica(0), fill, pr.batch, grad, stats);
    return grad;
  };
  const core::BatchedMlp mlp({9, 7, 4}, 2);
  const std::vector<float> first = shared_grad(mlp, 70);
  // Fewer replicas, so fewer chunks, on the same object: as on a fresh one.
  const std::vector<float> fewer = shared_grad(mlp, 33);
  CHECK(fewer == shared_grad(core::BatchedMlp({9, 7, 4}, 2), 33));
  CHECK(fewer != first);
  CHECK(shared_grad(mlp, 70) == first);
}

TEST_CASE("core::batched_mlp: evaluation agrees with the training forward and does not depend on threads") {
  Problem pr({5, 8, 3}, 4, 300, 2, 4);  // 300 samples: more than one evaluation chunk
  const std::vector<core::BatchStats> stats = pr.train();
  const std::size_t in = 5;
  for (std::size_t i = 0; i < 4; ++i) {
    const std::span<const float> x(pr.inputs.data() + i * 300 * in, 300 * in);
    const std::span<const std::int32_t> y(pr.labels.data() + i * 300, 300);
    const core::EvalResult e = pr.mlp.evaluate(pr.store.replica(i), x, y);
    CHECK(e.samples == 300);
    CHECK(e.loss == dbench::testing::approx(stats[i].loss).epsilon(1e-5));
    CHECK(e.correct == static_cast<std::size_t>(stats[i].correct));
    const core::BatchedMlp one_thread(pr.mlp.widths(), 1);
    const core::EvalResult e1 = one_thread.evaluate(pr.store.replica(i), x, y);
    CHECK(e1.loss == e.loss);
    CHECK(e1.correct == e.correct);
  }
  // Every replica against the same test set, in one call.
  const std::span<const float> x(pr.inputs.data(), 300 * in);
  const std::span<const std::int32_t> y(pr.labels.data(), 300);
  const std::vector<core::EvalResult> all = pr.mlp.evaluate_replicas(pr.store.params(), x, y);
  REQUIRE(all.size() == 4);
  for (std::size_t i = 0; i < 4; ++i) {
    const core::EvalResult e = pr.mlp.evaluate(pr.store.replica(i), x, y);
    CHECK(all[i].loss == e.loss);
    CHECK(all[i].correct == e.correct);
    CHECK(all[i].accuracy() == dbench::testing::approx(static_cast<double>(e.correct) / 300.0));
  }
}

TEST_CASE("core::batched_mlp: init is seeded and within nn.Linear's bounds") {
  const core::BatchedMlp mlp({100, 16, 3});
  std::vector<float> a(mlp.param_count());
  std::vector<float> b(mlp.param_count());
  std::vector<float> c(mlp.param_count());
  mlp.init(a, 5);
  mlp.init(b, 5);
  mlp.init(c, 6);
  CHECK(a == b);
  CHECK(a != c);
  const auto& t = mlp.layout().tensors();
  for (std::size_t k = t[0].offset; k < t[1].offset + t[1].elements; ++k) {
    CHECK(std::abs(a[k]) <= 0.1f);  // 1 / sqrt(100)
  }
  for (std::size_t k = t[2].offset; k < t[3].offset + t[3].elements; ++k) {
    CHECK(std::abs(a[k]) <= 0.25f);  // 1 / sqrt(16)
  }
  CHECK_THROWS_AS(mlp.init(std::span<float>(a).first(10), 1), core::ShapeError);
}

TEST_CASE("core::batched_mlp: rejects bad widths, labels and sizes") {
  CHECK_THROWS_AS(core::BatchedMlp({5}), core::ValueError);
  CHECK_THROWS_AS(core::BatchedMlp({5, 0, 2}), core::ValueError);
  Problem pr({3, 2}, 2, 2, 1, 5);
  std::vector<core::BatchStats> stats(2);
  pr.labels[3] = 2;
  CHECK_THROWS_AS(pr.mlp.train_step(pr.store.params(), pr.inputs, pr.labels, 2, pr.store.grads(), stats),
                  core::ValueError);
  pr.labels[3] = -1;
  CHECK_THROWS_AS(pr.mlp.train_step(pr.store.params(), pr.inputs, pr.labels, 2, pr.store.grads(), stats),
                  core::ValueError);
  pr.labels[3] = 0;
  CHECK_THROWS_AS(pr.mlp.train_step(pr.store.params(), pr.inputs, pr.labels, 3, pr.store.grads(), stats),
                  core::ShapeError);
  CHECK_THROWS_AS(pr.mlp.train_step(pr.store.params(), std::span<const float>(pr.inputs).first(5), pr.labels,
                                    2, pr.store.grads(), stats),
                  core::ShapeError);
  CHECK_THROWS_AS(pr.mlp.evaluate(pr.store.replica(0), std::span<const float>(pr.inputs).first(3),
                                  std::span<const std::int32_t>(pr.labels).first(2)),
                  core::ShapeError);
}

TEST_CASE("core::batched_mlp: batches that do not divide evenly are a shape error") {
  const std::vector<float> inputs(12, 0.5f);
  const std::vector<std::int32_t> labels(4, 1);
  for (const std::size_t batch : {std::size_t{0}, std::size_t{3}}) {
    CAPTURE(batch);
    CHECK_THROWS_AS(core::contiguous_batches(inputs, labels, batch), core::ShapeError);
    CHECK_THROWS_AS(core::contiguous_batch_rows(inputs, labels, batch), core::ShapeError);
  }
  CHECK_THROWS_AS(core::contiguous_batch_rows(std::vector<float>(13, 0.5f), labels, 2), core::ShapeError);
  // Two batches of two samples of three features: the second batch's rows and labels.
  const core::BatchRows rows = core::contiguous_batch_rows(inputs, labels, 2);
  const float* x[2] = {};
  std::int32_t y[2] = {};
  rows(1, 1, x, y);
  CHECK(x[0] == inputs.data() + 6);
  CHECK(x[1] == inputs.data() + 9);
  CHECK(y[0] == 1);
  CHECK(y[1] == 1);
}
