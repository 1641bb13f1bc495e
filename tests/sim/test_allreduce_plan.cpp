#include <doctest/doctest.h>

#include <bit>
#include <vector>

#include "sim/allreduce_plan.hpp"
#include "sim/platform.hpp"
#include "support/approx.hpp"

namespace sim = dbench::sim;

TEST_CASE("sim::double_binary_tree: two trees of ceil(log2 n) levels whose inner GPUs differ") {
  for (const int n : {1, 2, 3, 7, 8, 12, 16, 31, 64, 100, 1008}) {
    CAPTURE(n);
    const auto trees = sim::double_binary_tree(n);
    std::vector<int> inner(static_cast<std::size_t>(n), 0);
    for (const auto& tree : trees) {
      int edges = 0;
      for (int v = 0; v < n; ++v) {
        const int p = tree.parent[static_cast<std::size_t>(v)];
        if (v == tree.root) {
          CHECK(p == -1);
          continue;
        }
        // Each GPU is its parent's child once, one level shallower, at least one level lower.
        REQUIRE(p >= 0);
        const auto& siblings = tree.children[static_cast<std::size_t>(p)];
        CHECK(((siblings[0] == v) + (siblings[1] == v)) == 1);
        CHECK(tree.depth[static_cast<std::size_t>(v)] == tree.depth[static_cast<std::size_t>(p)] + 1);
        CHECK(tree.height[static_cast<std::size_t>(p)] > tree.height[static_cast<std::size_t>(v)]);
        ++edges;
      }
      CHECK(edges == n - 1);
      const int expected_levels = n == 1 ? 0 : std::bit_width(static_cast<unsigned>(n - 1));
      CHECK(tree.levels == expected_levels);
      for (int v = 0; v < n; ++v) {
        const auto& c = tree.children[static_cast<std::size_t>(v)];
        inner[static_cast<std::size_t>(v)] += c[0] >= 0 || c[1] >= 0;
      }
    }
    // Even n: a GPU forwards for one tree and is a leaf of the other, so every port carries about the same.
    if (n % 2 == 0) {
      for (int v = 0; v < n; ++v) {
        CHECK(inner[static_cast<std::size_t>(v)] <= 1);
      }
    }
  }
}

TEST_CASE("sim::TreePlan: every edge moves each chunk once each way, after the chunk it depends on") {
  for (const int n : {2, 8, 13, 64}) {
    for (const int chunks : {1, 3, 40}) {
      CAPTURE(n);
      CAPTURE(chunks);
      const sim::TreePlan plan = sim::tree_plan(n, 1e6, chunks);
      CHECK(plan.chunk_bytes == dbench::testing::approx(1e6 / (2.0 * chunks)));
      CHECK(plan.steps() == chunks + 2 * plan.trees[0].levels - 1);
      for (int t = 0; t < 2; ++t) {
        const auto& tree = plan.trees[static_cast<std::size_t>(t)];
        for (int v = 0; v < n; ++v) {
          if (v == tree.root) {
            continue;
          }
          const int p = tree.parent[static_cast<std::size_t>(v)];
          int up = 0;
          int down = 0;
          for (int s = 0; s < plan.steps(); ++s) {
            if (plan.up_active(t, v, s)) {
              // Chunk s - height(v) left each child before this step.
              for (const int c : tree.children[static_cast<std::size_t>(v)]) {
                if (c >= 0) {
                  CHECK(plan.up_active(t, c,
                                       s - 1 -
                                           (tree.height[static_cast<std::size_t>(v)] -
                                            tree.height[static_cast<std::size_t>(c)] - 1)));
                }
              }
              ++up;
            }
            if (plan.down_active(t, v, s)) {
              // The parent had it the step before: from its own parent, or (the root) fully reduced.
              if (p != tree.root) {
                CHECK(plan.down_active(t, p, s - 1));
              } else {
                CHECK(s - 1 >= tree.levels - 1);
              }
              ++down;
            }
          }
          CHECK(up == chunks);
          CHECK(down == chunks);
        }
      }
      // Steps with the same key move the same messages.
      for (int s = 1; s < plan.steps(); ++s) {
        if (plan.step_key(s) == plan.step_key(s - 1)) {
          for (int t = 0; t < 2; ++t) {
            for (int v = 0; v < n; ++v) {
              CHECK(plan.up_active(t, v, s) == plan.up_active(t, v, s - 1));
              CHECK(plan.down_active(t, v, s) == plan.down_active(t, v, s - 1));
            }
          }
        }
      }
    }
  }
}

TEST_CASE("sim::HierarchicalPlan: each chunk takes 2(g-1) intra-node and 2(nodes-1) inter-node steps") {
  sim::PlatformSpec p = sim::platform_preset("dgx-h100");
  const int n = 32;  // 4 nodes of 8
  for (const int chunks : {1, 2, 5, 40}) {
    CAPTURE(chunks);
    const sim::HierarchicalPlan plan = sim::hierarchical_plan(p, n, 8e6, chunks);
    CHECK(plan.gpus_per_node == 8);
    CHECK(plan.nodes == 4);
    CHECK(plan.chunk_steps() == 2 * 7 + 2 * 3);
    CHECK(plan.steps() == chunks + plan.chunk_steps() - 1);
    int intra = 0;
    int inter = 0;
    double intra_bytes = 0.0;
    double inter_bytes = 0.0;
    for (int s = 0; s < plan.steps(); ++s) {
      intra += plan.intra_chunks(s);
      inter += plan.inter_chunks(s);
      intra_bytes += plan.intra_bytes(s);
      inter_bytes += plan.inter_bytes(s);
      if (chunks == 1) {
        // One chunk: the three phases one after the other.
        CHECK(plan.intra_chunks(s) + plan.inter_chunks(s) == 1);
        CHECK(plan.inter_chunks(s) == (s >= 7 && s < 13 ? 1 : 0));
      }
    }
    CHECK(intra == chunks * 14);
    CHECK(inter == chunks * 6);
    // Per GPU: 2 (g - 1) S / g inside the node and 2 (nodes - 1) S / n across: the unpipelined bytes.
    CHECK(intra_bytes == dbench::testing::approx(14.0 * 8e6 / 8));
    CHECK(inter_bytes == dbench::testing::approx(6.0 * 8e6 / 32));
  }
  const sim::HierarchicalPlan plan = sim::hierarchical_plan(p, n, 8e6, 1);
  CHECK(plan.intra_next(7) == 0);
  CHECK(plan.intra_next(9) == 10);
  CHECK(plan.inter_next(9) == 17);
  CHECK(plan.inter_next(25) == 1);
}

TEST_CASE("sim::allreduce_plan: chunk counts grow with the message and are 1 where latency dominates") {
  const sim::PlatformSpec p = sim::platform_preset("dgx-h100");
  CHECK(sim::tree_chunks(p, 8, 4096) == 1);
  CHECK(sim::tree_chunks(p, 1008, 4096) == 1);
  int previous = 1;
  for (const double bytes : {1e5, 1e6, 1e7, 1e8, 1e9}) {
    const int k = sim::tree_chunks(p, 256, bytes);
    CHECK(k >= previous);
    CHECK(k <= 256);
    previous = k;
  }
  CHECK(previous > 16);
  CHECK(sim::hierarchical_chunks(p, 1008, 4096) == 1);
  CHECK(sim::hierarchical_chunks(p, 8, 1e9) == 1);  // one node: one phase
  CHECK(sim::hierarchical_chunks(p, 64, 1e9) > 1);
}
