#include "topology/base_graph.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace dbench::topology {
namespace {

using Rows = std::vector<std::vector<MixingEntry>>;

// Rounds under construction: blocks of nodes add their cliques and pairs to the rounds they use, and every
// node left without a partner in a round keeps its value (self weight 1).
class RoundPlan {
 public:
  explicit RoundPlan(int n) : n_(n) {}

  // The f members average: every member's row gets every member with weight 1/f.
  void clique(int round, std::span<const int> members) {
    auto& rows = at(round);
    const double w = 1.0 / static_cast<double>(members.size());
    for (const int i : members) {
      for (const int j : members) {
        rows[static_cast<std::size_t>(i)].push_back({j, w});
      }
    }
  }

  // a and b exchange with weight w each way; their self weights are completed in finish().
  void pair(int round, int a, int b, double w) {
    auto& rows = at(round);
    rows[static_cast<std::size_t>(a)].push_back({b, w});
    rows[static_cast<std::size_t>(b)].push_back({a, w});
  }

  int length() const { return static_cast<int>(rounds_.size()); }

  GraphSequence finish(const std::string& kind, bool union_vertex_transitive) && {
    std::vector<Graph> graphs;
    graphs.reserve(rounds_.size());
    for (std::size_t r = 0; r < rounds_.size(); ++r) {
      auto& rows = rounds_[r];
      for (std::size_t i = 0; i < rows.size(); ++i) {
        auto& row = rows[i];
        const bool has_self = std::any_of(
            row.begin(), row.end(), [&](const MixingEntry& e) { return e.from == static_cast<int>(i); });
        if (!has_self) {
          double others = 0.0;
          for (const auto& e : row) {
            others += e.weight;
          }
          row.push_back({static_cast<int>(i), 1.0 - others});
        }
      }
      graphs.emplace_back(fmt::format("{}[{}]", kind, r), std::move(rows));
    }
    if (graphs.empty()) {
      graphs.emplace_back(fmt::format("{}[0]", kind),
                          Rows(static_cast<std::size_t>(n_), std::vector<MixingEntry>{}));
    }
    return GraphSequence(kind, std::move(graphs), union_vertex_transitive);
  }

 private:
  Rows& at(int round) {
    while (static_cast<int>(rounds_.size()) <= round) {
      rounds_.emplace_back(static_cast<std::size_t>(n_));
    }
    return rounds_[static_cast<std::size_t>(round)];
  }

  int n_;
  std::vector<Rows> rounds_;
};

// Fewest factors in [2, k+1] whose product is m (largest first), or nothing when m has a prime factor above
// k+1. Fewer factors means fewer rounds.
std::optional<std::vector<int>> clique_factors(int m, int k,
                                               std::map<int, std::optional<std::vector<int>>>& memo) {
  if (m == 1) {
    return std::vector<int>{};
  }
  if (m <= k + 1) {
    return std::vector<int>{m};
  }
  if (const auto it = memo.find(m); it != memo.end()) {
    return it->second;
  }
  std::optional<std::vector<int>> best;
  for (int f = std::min(k + 1, m / 2); f >= 2; --f) {
    if (m % f != 0) {
      continue;
    }
    auto rest = clique_factors(m / f, k, memo);
    if (rest && (!best || rest->size() + 1 < best->size())) {
      rest->push_back(f);
      best = std::move(rest);
    }
  }
  if (best) {
    std::sort(best->rbegin(), best->rend());
  }
  memo.emplace(m, best);
  return best;
}

std::optional<std::vector<int>> clique_factors(int m, int k) {
  std::map<int, std::optional<std::vector<int>>> memo;
  return clique_factors(m, k, memo);
}

int largest_prime_factor(int n) {
  int largest = 1;
  for (int p = 2; static_cast<std::int64_t>(p) * p <= n; ++p) {
    while (n % p == 0) {
      largest = p;
      n /= p;
    }
  }
  return std::max(largest, n);
}

// Hyper-hypercube on `nodes` starting at round `start`; returns the number of rounds used.
int plan_hyper_hypercube(RoundPlan& plan, int start, std::span<const int> nodes, int k) {
  const auto factors = clique_factors(static_cast<int>(nodes.size()), k);
  const int m = static_cast<int>(nodes.size());
  int stride = 1;
  std::vector<int> members;
  for (std::size_t l = 0; l < factors->size(); ++l) {
    const int f = (*factors)[l];
    for (int u = 0; u < m; ++u) {
      if ((u / stride) % f != 0) {
        continue;
      }
      members.clear();
      for (int j = 0; j < f; ++j) {
        members.push_back(nodes[static_cast<std::size_t>(u + j * stride)]);
      }
      plan.clique(start + static_cast<int>(l), members);
    }
    stride *= f;
  }
  return static_cast<int>(factors->size());
}

// One block V_l of the base-(k+1) split: a (k+1)^p nodes starting at `offset`.
struct Block {
  int offset;
  int size;
  int a;
  int p;
  int sub;  // (k+1)^p, the size of each of the a sub-blocks
};

int plan_simple_base(RoundPlan& plan, int start, std::span<const int> nodes, int k) {
  const int m = static_cast<int>(nodes.size());
  if (m == 1) {
    return 0;
  }
  if (largest_prime_factor(m) <= k + 1) {
    return plan_hyper_hypercube(plan, start, nodes, k);
  }
  const int base = k + 1;
  std::vector<int> powers{1};
  while (static_cast<std::int64_t>(powers.back()) * base <= m) {
    powers.push_back(powers.back() * base);
  }
  std::vector<Block> blocks;
  int offset = 0;
  for (int p = static_cast<int>(powers.size()) - 1; p >= 0; --p) {
    const int a = (m - offset) / powers[static_cast<std::size_t>(p)];
    if (a > 0) {
      const int size = a * powers[static_cast<std::size_t>(p)];
      blocks.push_back({offset, size, a, p, powers[static_cast<std::size_t>(p)]});
      offset += size;
    }
  }
  const auto slice = [&](int from, int count) {
    return nodes.subspan(static_cast<std::size_t>(from), static_cast<std::size_t>(count));
  };

  int averaged = 0;  // rounds until every block holds its own average
  for (const auto& b : blocks) {
    averaged = std::max(averaged, plan_hyper_hypercube(plan, start, slice(b.offset, b.size), k));
  }
  const int count = static_cast<int>(blocks.size());
  int length = averaged + count - 1;
  int tail = m;  // |V_{>=j}|
  for (int j = 0; j + 1 < count; ++j) {
    const auto& b = blocks[static_cast<std::size_t>(j)];
    const int round = start + averaged + j;
    const int receivers = tail - b.size;
    // Every later block together has fewer than (k+1)^p_j nodes, so each sub-block has a partner for each.
    const double alpha = static_cast<double>(b.size) / static_cast<double>(tail);
    const double w = alpha / b.a;
    for (int q = 0; q < receivers; ++q) {
      const int receiver = nodes[static_cast<std::size_t>(b.offset + b.size + q)];
      for (int s = 0; s < b.a; ++s) {
        plan.pair(round, receiver, nodes[static_cast<std::size_t>(b.offset + s * b.sub + q)], w);
      }
    }
    for (int s = 0; s < b.a; ++s) {
      const int used = plan_hyper_hypercube(plan, round + 1, slice(b.offset + s * b.sub, b.sub), k);
      length = std::max(length, averaged + j + 1 + used);
    }
    tail -= b.size;
  }
  return length;
}

void check_arguments(int n, int k, std::string_view what) {
  if (n < 2) {
    throw GraphError(GraphInput::nodes, fmt::format("{} needs at least 2 nodes, got {}", what, n));
  }
  if (n > kMaxGraphNodes) {
    throw GraphError(GraphInput::nodes, fmt::format("{} on {} nodes is too large; the limit is {} nodes",
                                                    what, n, kMaxGraphNodes));
  }
  if (k < 1 || k >= n) {
    throw GraphError(
        GraphInput::degree,
        fmt::format("a {} on {} nodes needs a maximum degree k in [1, {}], got {}", what, n, n - 1, k));
  }
}

std::vector<int> iota_nodes(int n) {
  std::vector<int> nodes(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) {
    nodes[static_cast<std::size_t>(i)] = i;
  }
  return nodes;
}

}  // namespace

GraphSequence hyper_hypercube(int n, int k) {
  check_arguments(n, k, "a hyper-hypercube");
  if (const int p = largest_prime_factor(n); p > k + 1) {
    throw GraphError(
        GraphInput::nodes,
        fmt::format("a {}-peer hyper-hypercube needs n without prime factors above {}, got {} (factor "
                    "{}); the base kind handles any n",
                    k, k + 1, n, p));
  }
  RoundPlan plan(n);
  plan_hyper_hypercube(plan, 0, iota_nodes(n), k);
  return std::move(plan).finish(fmt::format("{}-peer-hyper-hypercube", k), true);
}

GraphSequence simple_base_graph(int n, int k) {
  check_arguments(n, k, "a simple Base-(k+1) graph");
  RoundPlan plan(n);
  plan_simple_base(plan, 0, iota_nodes(n), k);
  return std::move(plan).finish(fmt::format("simple-base-{}", k + 1), false);
}

GraphSequence base_graph(int n, int k) {
  check_arguments(n, k, "a Base-(k+1) graph");
  const auto nodes = iota_nodes(n);
  const auto kind = fmt::format("base-{}", k + 1);
  int smooth = 1;
  for (int rest = n, p = 2; rest > 1; ++p) {
    if (static_cast<std::int64_t>(p) * p > rest) {
      p = rest;  // what is left is prime
    }
    while (rest % p == 0) {
      rest /= p;
      smooth *= p <= k + 1 ? p : 1;
    }
  }
  const int r = n / smooth;
  if (r == 1) {
    RoundPlan plan(n);
    plan_hyper_hypercube(plan, 0, nodes, k);
    return std::move(plan).finish(kind, true);
  }
  RoundPlan simple(n);
  const int simple_length = plan_simple_base(simple, 0, nodes, k);

  RoundPlan split(n);
  int first = 0;
  for (int g = 0; g < smooth; ++g) {
    first = plan_simple_base(
        split, 0, std::span(nodes).subspan(static_cast<std::size_t>(g * r), static_cast<std::size_t>(r)), k);
  }
  std::vector<int> strided;
  int second = 0;
  for (int c = 0; c < r; ++c) {
    strided.clear();
    for (int g = 0; g < smooth; ++g) {
      strided.push_back(g * r + c);
    }
    second = plan_hyper_hypercube(split, first, strided, k);
  }
  if (simple_length < first + second) {
    return std::move(simple).finish(kind, false);
  }
  return std::move(split).finish(kind, false);
}

}  // namespace dbench::topology
