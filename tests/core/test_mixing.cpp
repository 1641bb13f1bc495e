#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numbers>
#include <vector>

#include "core/aligned_buffer.hpp"
#include "core/collectives.hpp"
#include "core/errors.hpp"
#include "core/mixing.hpp"
#include "core/replica_metrics.hpp"
#include "core/replica_store.hpp"
#include "support/approx.hpp"
#include "test_helpers.hpp"

namespace core = dbench::core;
using core::testing::TestRng;

namespace {

/// A random sparse W with float weights in [-1, 1] and 1..max_terms distinct sources per row.
struct RandomRows {
  std::vector<std::int32_t> offsets{0};
  std::vector<std::int32_t> from;
  std::vector<float> weight;

  RandomRows(std::size_t n, std::size_t max_terms, TestRng& rng) {
    for (std::size_t i = 0; i < n; ++i) {
      const std::size_t terms = 1 + rng.below(std::min(max_terms, n));
      std::vector<std::int32_t> row;
      while (row.size() < terms) {
        const auto j = static_cast<std::int32_t>(rng.below(n));
        if (std::find(row.begin(), row.end(), j) == row.end()) {
          row.push_back(j);
        }
      }
      for (std::int32_t j : row) {
        from.push_back(j);
        weight.push_back(rng.uniform(-1.0f, 1.0f));
      }
      offsets.push_back(static_cast<std::int32_t>(from.size()));
    }
  }
  core::MixingRows rows() const { return {offsets, from, weight}; }
};

/// A matrix of n rows of p floats at `stride`, with a view.
struct Matrix {
  core::AlignedBuffer buffer;
  core::ReplicaView view;
  Matrix(std::size_t n, std::size_t p, std::size_t stride)
      : buffer(n * stride), view{buffer.data(), n, p, stride} {}
};

/// out = W in in double, densely: the reference every kernel is checked against; also the size of the terms
/// the kernels round, sum_j |W_ij| (|in_j| + |in_i|), for tolerances.
void dense_reference(const core::MixingRows& rows, core::ConstReplicaView in, std::vector<double>& out,
                     std::vector<double>& magnitude) {
  const std::size_t n = in.rows;
  std::vector<double> w(n * n, 0.0);
  for (std::size_t i = 0; i < n; ++i) {
    for (auto k = static_cast<std::size_t>(rows.offsets[i]);
         k < static_cast<std::size_t>(rows.offsets[i + 1]); ++k) {
      w[i * n + static_cast<std::size_t>(rows.from[k])] += rows.weight[k];
    }
  }
  out.assign(n * in.cols, 0.0);
  magnitude.assign(n * in.cols, 0.0);
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = 0; j < n; ++j) {
      for (std::size_t c = 0; c < in.cols; ++c) {
        const double xj = in.row_data(j)[c];
        const double xi = in.row_data(i)[c];
        out[i * in.cols + c] += w[i * n + j] * xj;
        magnitude[i * in.cols + c] += std::abs(w[i * n + j]) * (std::abs(xj) + std::abs(xi));
      }
    }
  }
}

/// Checks mix() on `n` replicas, rows of 0 to 24 off-diagonal terms with random weights, against the
/// in-order multiply-add sum of every element, bit for bit (where AVX-512 runs).
void check_in_order_sums(std::size_t n, core::MixWalk walk);

/// Bitwise equality of two views' elements.
bool same_bits(core::ConstReplicaView a, core::ConstReplicaView b) {
  for (std::size_t i = 0; i < a.rows; ++i) {
    if (!std::equal(a.row(i).begin(), a.row(i).end(), b.row(i).begin())) {
      return false;
    }
  }
  return true;
}

}  // namespace

TEST_CASE("core::mixing: matches a dense reference for a random sparse W") {
  TestRng rng(7);
  const std::size_t n = 37;
  const std::size_t p = 203;  // not a multiple of 16: exercises the partial vectors
  const RandomRows random(n, 9, rng);
  for (const std::size_t stride : {core::ReplicaStore::padded_stride(p), p + 1}) {
    Matrix in(n, p, stride);
    Matrix out(n, p, stride);
    core::testing::fill_uniform(in.view, rng, -2.0f, 2.0f);
    const core::MixingRows rows = random.rows();
    std::vector<double> expected;
    std::vector<double> magnitude;
    dense_reference(rows, in.view, expected, magnitude);
    for (const bool avx512 : {true, false}) {
      for (const std::size_t block : {std::size_t{0}, std::size_t{16}, std::size_t{48}, std::size_t{1000}}) {
        for (const unsigned threads : {1u, 3u}) {
          CAPTURE(stride);
          CAPTURE(avx512);
          CAPTURE(block);
          CAPTURE(threads);
          std::fill_n(out.buffer.data(), out.buffer.size(), -1.0f);
          core::mix(rows, in.view, out.view,
                    {.block_cols = block, .threads = threads, .allow_avx512 = avx512});
          double worst = 0.0;
          for (std::size_t i = 0; i < n; ++i) {
            for (std::size_t c = 0; c < p; ++c) {
              const double err = std::abs(static_cast<double>(out.view.row_data(i)[c]) - expected[i * p + c]);
              worst = std::max(worst, err / (magnitude[i * p + c] + 1e-30));
            }
          }
          CHECK(worst < 1e-6);
          if (stride > p) {
            // Padding between rows is not part of the view and stays untouched.
            CHECK(out.view.row_data(0)[p] == -1.0f);
          }
        }
      }
    }
  }
}

TEST_CASE("core::mixing: every term count gives the in-order multiply-add sum bit for bit") {
  // Rows of 0 to 24 off-diagonal terms: the AVX-512 kernel unrolls up to 16 and loops beyond. Each element
  // must be d = fma(w_k, in_k - in_i, d) over the row's terms in order from 0, then fma(s_i, in_i, d), in
  // place and from tiles.
  for (const core::MixWalk walk : {core::MixWalk::in_place, core::MixWalk::tiles}) {
    CAPTURE(static_cast<int>(walk));
    check_in_order_sums(50, walk);
  }
}

TEST_CASE("core::mixing: mixed from tiles, replicas get the bits of the walk in place") {
  TestRng rng(13);
  const std::size_t n = 300;
  const std::size_t p = 333;  // two whole tiles of 128 columns and a partial one
  const RandomRows random(n, 12, rng);
  for (const std::size_t stride : {core::ReplicaStore::padded_stride(p), p + 1}) {
    Matrix in(n, p, stride);
    core::testing::fill_uniform(in.view, rng, -2.0f, 2.0f);
    for (const bool avx512 : {true, false}) {
      CAPTURE(stride);
      CAPTURE(avx512);
      Matrix direct(n, p, stride);
      core::mix(random.rows(), in.view, direct.view,
                {.block_cols = 48, .threads = 1, .allow_avx512 = avx512, .walk = core::MixWalk::in_place});
      core::MixWorkspace workspace;
      for (const unsigned threads : {1u, 3u, 2u}) {
        CAPTURE(threads);
        Matrix tiled(n, p, stride);
        std::fill_n(tiled.buffer.data(), tiled.buffer.size(), -1.0f);
        core::mix(random.rows(), in.view, tiled.view,
                  {.threads = threads,
                   .allow_avx512 = avx512,
                   .walk = core::MixWalk::tiles,
                   .workspace = &workspace});
        CHECK(same_bits(direct.view, tiled.view));
        if (stride > p) {
          CHECK(tiled.view.row_data(0)[p] == -1.0f);  // padding between rows stays untouched
        }
        Matrix own(n, p, stride);  // tiles of 40 columns, allocated by mix() itself
        core::mix(
            random.rows(), in.view, own.view,
            {.block_cols = 40, .threads = threads, .allow_avx512 = avx512, .walk = core::MixWalk::tiles});
        CHECK(same_bits(direct.view, own.view));
      }
    }
  }
}

TEST_CASE("core::mixing: a column-blocked view's slices fill its buffer once, block after block") {
  // 70 columns in blocks of 32 at a stride of 80: two blocks of 32 and a last one whose slices take 16.
  const core::BlockedView v{nullptr, 5, 70, 80, 32};
  REQUIRE(v.blocks() == 3);
  CHECK(v.spacing(0) == 32);
  CHECK(v.spacing(2) == 16);
  std::vector<int> covered(5 * 80, 0);
  for (std::size_t b = 0; b < v.blocks(); ++b) {
    for (std::size_t i = 0; i < v.rows; ++i) {
      const auto first = static_cast<std::size_t>(v.slice(i, b) - v.data);
      for (std::size_t k = 0; k < v.spacing(b); ++k) {
        REQUIRE(first + k < covered.size());
        ++covered[first + k];
      }
    }
  }
  CHECK(std::all_of(covered.begin(), covered.end(), [](int c) { return c == 1; }));
  // The last block holds the last 6 columns: 70 - 2 x 32.
  CHECK(v.slice(0, 2) - v.data == 2 * 5 * 32);
}

TEST_CASE("core::mixing: mixed from a column-blocked input, replicas get the bits of the row-major one") {
  TestRng rng(29);
  const std::size_t n = 300;
  const std::size_t p = 333;
  const RandomRows random(n, 12, rng);
  // A padded stride (streamed outputs) and p + 1 (most rows off a cache line); blocks of the tile width, of
  // 48 columns and of 16.
  for (const std::size_t stride : {core::ReplicaStore::padded_stride(p), p + 1}) {
    Matrix in(n, p, stride);
    core::testing::fill_uniform(in.view, rng, -2.0f, 2.0f);
    for (const bool avx512 : {true, false}) {
      Matrix direct(n, p, stride);
      core::mix(random.rows(), in.view, direct.view, {.threads = 1, .allow_avx512 = avx512});
      for (const std::size_t width : {std::size_t{128}, std::size_t{48}, std::size_t{16}}) {
        core::AlignedBuffer buffer(n * stride);
        const core::BlockedView blocked{buffer.data(), n, p, stride, width};
        core::testing::copy_to_blocks(in.view, blocked);
        for (const unsigned threads : {1u, 3u}) {
          CAPTURE(stride);
          CAPTURE(avx512);
          CAPTURE(width);
          CAPTURE(threads);
          Matrix out(n, p, stride);
          std::fill_n(out.buffer.data(), out.buffer.size(), -1.0f);
          core::mix_from_blocks(random.rows(), blocked, out.view,
                                {.threads = threads, .allow_avx512 = avx512});
          CHECK(same_bits(direct.view, out.view));
          if (stride > p) {
            CHECK(out.view.row_data(0)[p] == -1.0f);  // padding between rows stays untouched
          }
        }
      }
    }
  }
}

TEST_CASE("core::mixing: mix_from_blocks rejects mismatched shapes, empty blocks and overlap") {
  const core::MixingMatrix w = core::testing::ring_thirds(4);
  core::AlignedBuffer buffer(4 * 16);
  Matrix out(4, 10, 16);
  CHECK_THROWS_AS(core::mix_from_blocks(w.rows(), core::BlockedView{buffer.data(), 4, 12, 16, 8}, out.view),
                  core::ShapeError);
  CHECK_THROWS_AS(core::mix_from_blocks(w.rows(), core::BlockedView{buffer.data(), 4, 10, 16, 0}, out.view),
                  core::ShapeError);
  CHECK_THROWS_AS(core::mix_from_blocks(w.rows(), core::BlockedView{buffer.data(), 4, 10, 8, 8}, out.view),
                  core::ShapeError);
  CHECK_THROWS_AS(
      core::mix_from_blocks(w.rows(), core::BlockedView{out.buffer.data(), 4, 10, 16, 8}, out.view),
      core::ShapeError);
  CHECK_NOTHROW(core::mix_from_blocks(w.rows(), core::BlockedView{buffer.data(), 4, 10, 16, 8}, out.view));
}

TEST_CASE("core::mixing: blocked_input_width is the tile width where mix() takes tiles, else 0") {
  const core::MixingMatrix exp64 = core::testing::exponential(64);
  CHECK(core::blocked_input_width(exp64.rows(), {.walk = core::MixWalk::tiles}) == 128);
  CHECK(core::blocked_input_width(exp64.rows(), {.block_cols = 40, .walk = core::MixWalk::tiles}) == 40);
  CHECK(core::blocked_input_width(exp64.rows(), {.walk = core::MixWalk::in_place}) == 0);
  // The ring reads two neighbours: long row-major slices, never tiles.
  CHECK(core::blocked_input_width(core::testing::ring_thirds(4096).rows()) == 0);
  const std::vector<std::int32_t> offsets{0, 1};
  const std::vector<std::int32_t> from{3};
  const std::vector<float> weight{1.0f};
  CHECK_THROWS_AS(core::blocked_input_width({offsets, from, weight}), core::MixingError);
}

TEST_CASE("core::mixing: off_diagonal_terms counts the terms that read another replica") {
  // The exponential graph on 64 replicas reads 6 neighbours per row besides the row itself.
  CHECK(core::off_diagonal_terms(core::testing::exponential(64).rows()) == 64 * 6);
  // Row 0 reads itself and row 1; row 1 only itself.
  const std::vector<std::int32_t> offsets{0, 2, 3};
  const std::vector<std::int32_t> from{0, 1, 1};
  const std::vector<float> weight{0.5f, 0.5f, 1.0f};
  CHECK(core::off_diagonal_terms({offsets, from, weight}) == 1);
  const std::vector<std::int32_t> outside{0, 2, 1};
  CHECK_THROWS_AS(core::off_diagonal_terms({offsets, outside, weight}), core::MixingError);
}

TEST_CASE("core::mixing: streaming and cached output stores give the same bits, padding untouched") {
  TestRng rng(19);
  const std::size_t n = 200;
  const std::size_t p = 333;  // 64-column passes, then 16-column ones and a masked tail
  const RandomRows random(n, 12, rng);
  // A padded stride starts every row on a cache line (streamed); p + 1 starts most rows off one (cached).
  for (const std::size_t stride : {core::ReplicaStore::padded_stride(p), p + 1}) {
    Matrix in(n, p, stride);
    core::testing::fill_uniform(in.view, rng, -2.0f, 2.0f);
    for (const core::MixWalk walk : {core::MixWalk::in_place, core::MixWalk::tiles}) {
      for (const unsigned threads : {1u, 2u}) {
        CAPTURE(stride);
        CAPTURE(static_cast<int>(walk));
        CAPTURE(threads);
        Matrix cached(n, p, stride);
        Matrix streamed(n, p, stride);
        std::fill_n(streamed.buffer.data(), streamed.buffer.size(), -1.0f);
        core::mix(random.rows(), in.view, cached.view,
                  {.block_cols = 128, .threads = threads, .walk = walk, .stores = core::MixStores::cached});
        core::mix(
            random.rows(), in.view, streamed.view,
            {.block_cols = 128, .threads = threads, .walk = walk, .stores = core::MixStores::streaming});
        CHECK(same_bits(cached.view, streamed.view));
        if (stride > p) {
          CHECK(streamed.view.row_data(0)[p] == -1.0f);
        }
      }
    }
  }
}

TEST_CASE(
    "core::mixing: the automatic walk of the exponential graph on 4096 replicas gives the in-place bits") {
  // 4096 rows of 12 off-diagonal terms: automatic picks tiles (a 64-column block of 4096 rows is 1 MB).
  const std::size_t n = 4096;
  const std::size_t p = 150;
  const core::MixingMatrix w = core::testing::exponential(n);
  TestRng rng(17);
  Matrix in(n, p, core::ReplicaStore::padded_stride(p));
  core::testing::fill_uniform(in.view, rng, -1.0f, 1.0f);
  Matrix automatic(n, p, in.view.stride);
  Matrix in_place(n, p, in.view.stride);
  core::mix(w.rows(), in.view, automatic.view, {.threads = 2});
  core::mix(w.rows(), in.view, in_place.view, {.threads = 2, .walk = core::MixWalk::in_place});
  CHECK(same_bits(automatic.view, in_place.view));
}

TEST_CASE("core::mixing: a workspace grows its tiles and keeps them") {
  core::MixWorkspace workspace;
  const std::span<core::AlignedBuffer> two = workspace.tiles(2, 100);
  REQUIRE(two.size() == 2);
  CHECK(two[0].size() >= 100);
  const float* first = two[0].data();
  const std::span<core::AlignedBuffer> again = workspace.tiles(2, 50);
  CHECK(again[0].data() == first);
  const std::span<core::AlignedBuffer> more = workspace.tiles(3, 400);
  REQUIRE(more.size() == 3);
  for (const core::AlignedBuffer& tile : more) {
    CHECK(tile.size() >= 400);
  }
}

namespace {

void check_in_order_sums(std::size_t n, core::MixWalk walk) {
  TestRng rng(5);
  const std::size_t p = 203;
  std::vector<std::int32_t> offsets{0};
  std::vector<std::int32_t> from;
  std::vector<float> weight;
  for (std::size_t i = 0; i < n; ++i) {
    from.push_back(static_cast<std::int32_t>(i));
    weight.push_back(rng.uniform(-1.0f, 1.0f));
    for (std::size_t k = 1; k <= i % 25; ++k) {
      from.push_back(static_cast<std::int32_t>((i + 2 * k) % n));
      weight.push_back(rng.uniform(-1.0f, 1.0f));
    }
    offsets.push_back(static_cast<std::int32_t>(from.size()));
  }
  Matrix in(n, p, core::ReplicaStore::padded_stride(p));
  Matrix out(n, p, in.view.stride);
  core::testing::fill_uniform(in.view, rng, -2.0f, 2.0f);
  core::mix({offsets, from, weight}, in.view, out.view, {.threads = 2, .walk = walk});
#if defined(__x86_64__)
  if (!__builtin_cpu_supports("avx512f")) {
    return;  // the portable kernel rounds as the build target's compiler arranges
  }
#else
  return;
#endif
  for (std::size_t i = 0; i < n; ++i) {
    CAPTURE(i);
    const auto k0 = static_cast<std::size_t>(offsets[i]);
    const auto k1 = static_cast<std::size_t>(offsets[i + 1]);
    double sum = 0.0;
    for (std::size_t k = k0; k < k1; ++k) {
      sum += static_cast<double>(weight[k]);
    }
    const auto scale = static_cast<float>(sum);  // random weights: far from a row sum of 1
    REQUIRE(std::abs(sum - 1.0) > 1e-3);
    bool same = true;
    for (std::size_t c = 0; c < p; ++c) {
      const float x = in.view.row_data(i)[c];
      float d = 0.0f;
      for (std::size_t k = k0 + 1; k < k1; ++k) {
        const float s = in.view.row_data(static_cast<std::size_t>(from[k]))[c];
        d = std::fma(weight[k], s - x, d);
      }
      same = same && out.view.row_data(i)[c] == std::fma(scale, x, d);
    }
    CHECK(same);
  }
}

}  // namespace

TEST_CASE("core::mixing: results do not depend on the thread count or the block size") {
  TestRng rng(11);
  const std::size_t n = 64;
  const std::size_t p = 1000;
  const RandomRows random(n, 12, rng);
  Matrix in(n, p, core::ReplicaStore::padded_stride(p));
  core::testing::fill_uniform(in.view, rng, -1.0f, 1.0f);
  for (const bool avx512 : {true, false}) {
    Matrix first(n, p, in.view.stride);
    core::mix(random.rows(), in.view, first.view, {.block_cols = 0, .threads = 1, .allow_avx512 = avx512});
    for (const std::size_t block : {std::size_t{16}, std::size_t{208}, std::size_t{4096}}) {
      for (const unsigned threads : {2u, 5u}) {
        Matrix other(n, p, in.view.stride);
        core::mix(random.rows(), in.view, other.view,
                  {.block_cols = block, .threads = threads, .allow_avx512 = avx512});
        CHECK(same_bits(first.view, other.view));
      }
    }
  }
}

TEST_CASE("core::mixing: consensus is a fixed point even though 1/11 has no exact float") {
  const std::size_t n = 1024;  // exponential graph, d = 10: every weight is float(1/11)
  const core::MixingMatrix w = core::testing::exponential(n);
  CHECK(static_cast<double>(w.rows().weight[0]) * 11.0 != 1.0);
  for (const bool avx512 : {true, false}) {
    core::ReplicaStore store(n, core::ParamLayout({{"x", 40}}));
    core::testing::TestRng rng(8);
    for (float& x : store.replica(0)) {
      x = rng.uniform(-3.0f, 3.0f);
    }
    store.broadcast_params(0);
    const std::vector<float> start(store.replica(0).begin(), store.replica(0).end());
    for (int step = 0; step < 10; ++step) {
      core::mix(w.rows(), store.params(), store.mix_target(), {.allow_avx512 = avx512});
      store.swap_mixed();
    }
    for (std::size_t i = 0; i < n; ++i) {
      REQUIRE(std::equal(start.begin(), start.end(), store.replica(i).begin()));
    }
  }
}

TEST_CASE(
    "core::mixing: with gradients off, the replica average is preserved to 1e-6 relative over 1000 mixing "
    "steps "
    "at N = 1008") {
  const std::size_t n = 1008;
  const std::size_t p = 64;
  const core::MixingMatrix w = core::testing::exponential(n);
  core::ReplicaStore store(n, core::ParamLayout({{"x", p}}));
  TestRng rng(3);
  core::testing::fill_uniform(store.params(), rng, 0.5f, 1.5f);
  std::vector<float> before(p);
  core::replica_average(store.params(), before, 2);
  for (int step = 0; step < 1000; ++step) {
    core::mix(w.rows(), store.params(), store.mix_target(), {.threads = 2});
    store.swap_mixed();
  }
  std::vector<float> after(p);
  core::replica_average(store.params(), after, 2);
  double worst = 0.0;
  for (std::size_t c = 0; c < p; ++c) {
    worst = std::max(worst, std::abs(static_cast<double>(after[c]) - before[c]) / std::abs(before[c]));
  }
  CHECK(worst < 1e-6);
  // And the replicas did reach that average (the exponential graph mixes in a few dozen steps).
  const core::ReplicaMetrics m = core::compute_replica_metrics(store.params(), store.layout());
  CHECK(m.consensus_distance < 1e-10);
}

TEST_CASE("core::mixing: consensus distance decays at the rate the graph's spectral gap predicts") {
  // Ring with weights 1/3: eigenvalues (1 + 2 cos(2 pi k / n)) / 3, so the second largest in magnitude is
  // lambda2 = (1 + 2 cos(2 pi / n)) / 3 and ||x_t - x_bar||^2 <= lambda2^(2t) ||x_0 - x_bar||^2, with
  // equality in the ratio once the slower modes dominate.
  for (const std::size_t n : {8u, 12u, 16u}) {
    CAPTURE(n);
    const double lambda2 = (1.0 + 2.0 * std::cos(2.0 * std::numbers::pi / static_cast<double>(n))) / 3.0;
    const core::MixingMatrix w = core::testing::ring_thirds(n);
    core::ReplicaStore store(n, core::ParamLayout({{"a", 16}, {"b", 5}}));
    TestRng rng(n);
    core::testing::fill_uniform(store.params(), rng, -1.0f, 1.0f);
    const double d0 = core::compute_replica_metrics(store.params(), store.layout()).consensus_distance;
    double previous = d0;
    double ratio = 0.0;
    // Down to ~1e-4 of the start: far enough for the slower modes to vanish, well above float rounding.
    const int steps = static_cast<int>(std::ceil(std::log(1e-4) / (2.0 * std::log(lambda2))));
    for (int t = 1; t <= steps; ++t) {
      core::mix(w.rows(), store.params(), store.mix_target());
      store.swap_mixed();
      const double d = core::compute_replica_metrics(store.params(), store.layout()).consensus_distance;
      CHECK(d <= std::pow(lambda2, 2.0 * t) * d0 * (1.0 + 1e-4));
      ratio = d / previous;
      previous = d;
    }
    CHECK(ratio == dbench::testing::approx(lambda2 * lambda2).epsilon(1e-3));
  }
}

TEST_CASE("core::mixing: rejects malformed rows and overlapping buffers") {
  Matrix in(3, 4, 16);
  Matrix out(3, 4, 16);
  const std::vector<std::int32_t> offsets{0, 1, 2, 3};
  const std::vector<std::int32_t> from{0, 1, 2};
  const std::vector<std::int32_t> bad_from{0, 1, 3};
  const std::vector<std::int32_t> bad_offsets{0, 2, 1, 3};
  const std::vector<float> weight{1.0f, 1.0f, 1.0f};
  CHECK_NOTHROW(core::mix({offsets, from, weight}, in.view, out.view));
  CHECK_THROWS_AS(core::mix({offsets, bad_from, weight}, in.view, out.view), core::MixingError);
  CHECK_THROWS_AS(core::mix({bad_offsets, from, weight}, in.view, out.view), core::MixingError);
  CHECK_THROWS_AS(core::mix({offsets, from, std::span<const float>(weight).first(2)}, in.view, out.view),
                  core::MixingError);
  CHECK_THROWS_AS(
      core::mix({std::span<const std::int32_t>(offsets).first(3), from, weight}, in.view, out.view),
      core::MixingError);
  CHECK_THROWS_AS(core::mix({offsets, from, weight}, in.view, in.view), core::ShapeError);
  Matrix small(3, 3, 16);
  CHECK_THROWS_AS(core::mix({offsets, from, weight}, in.view, small.view), core::ShapeError);
  const std::vector<double> three{0.5, 0.5};
  CHECK_THROWS_AS(core::MixingMatrix({0, 1, 2, 3}, {0, 1, 2}, three), core::MixingError);
}
