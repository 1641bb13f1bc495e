#include <doctest/doctest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "models/errors.hpp"
#include "models/partition.hpp"

namespace dm = dbench::models;

namespace {

/// n labels cycling through the classes: exactly balanced when classes divides n.
std::vector<std::int32_t> cyclic_labels(std::int64_t n, int classes) {
  std::vector<std::int32_t> labels(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) {
    labels[static_cast<std::size_t>(i)] = static_cast<std::int32_t>(i % classes);
  }
  return labels;
}

dm::PartitionSpec spec_of(int workers, dm::PartitionScheme scheme, double alpha, std::uint64_t seed) {
  dm::PartitionSpec s;
  s.workers = workers;
  s.scheme = scheme;
  s.alpha = alpha;
  s.seed = seed;
  return s;
}

void check_disjoint_and_covering(const dm::Partition& p, std::int64_t n) {
  std::vector<int> seen(static_cast<std::size_t>(n), 0);
  std::size_t smallest = static_cast<std::size_t>(n);
  std::size_t largest = 0;
  for (int r = 0; r < p.workers(); ++r) {
    const auto shard = p.shard(r);
    smallest = std::min(smallest, shard.size());
    largest = std::max(largest, shard.size());
    CHECK(std::is_sorted(shard.begin(), shard.end()));
    for (auto i : shard) {
      REQUIRE(i >= 0);
      REQUIRE(i < n);
      ++seen[static_cast<std::size_t>(i)];
    }
  }
  CHECK(std::all_of(seen.begin(), seen.end(), [](int c) { return c == 1; }));
  CHECK(largest - smallest <= 1);
}

/// Mean over replicas of the largest class share in the replica's shard.
double mean_max_share(const dm::Partition& p) {
  double total = 0.0;
  for (int r = 0; r < p.workers(); ++r) {
    const auto h = p.label_histogram(r);
    const auto size = static_cast<double>(p.shard(r).size());
    total += static_cast<double>(*std::max_element(h.begin(), h.end())) / size;
  }
  return total / p.workers();
}

}  // namespace

TEST_CASE("models::partition: IID shards are disjoint, cover the data and differ in size by at most one") {
  const auto labels = cyclic_labels(1003, 10);
  const dm::Partition p(labels, spec_of(10, dm::PartitionScheme::iid, 1.0, 5));
  CHECK(p.workers() == 10);
  CHECK(p.classes() == 10);
  check_disjoint_and_covering(p, 1003);
  CHECK(p.shard(0).size() == 101U);
  CHECK(p.shard(9).size() == 100U);
}

TEST_CASE("models::partition: the same seed gives the same shards, another seed others") {
  const auto labels = cyclic_labels(1000, 10);
  for (auto scheme : {dm::PartitionScheme::iid, dm::PartitionScheme::dirichlet}) {
    const dm::Partition a(labels, spec_of(8, scheme, 0.5, 1));
    const dm::Partition b(labels, spec_of(8, scheme, 0.5, 1));
    const dm::Partition c(labels, spec_of(8, scheme, 0.5, 2));
    bool any_differs = false;
    for (int r = 0; r < 8; ++r) {
      CHECK(std::ranges::equal(a.shard(r), b.shard(r)));
      any_differs = any_differs || !std::ranges::equal(a.shard(r), c.shard(r));
    }
    CHECK(any_differs);
  }
}

TEST_CASE("models::partition: Dirichlet shards are disjoint and covering too") {
  const auto labels = cyclic_labels(6007, 10);
  for (double alpha : {0.01, 0.1, 1.0, 100.0}) {
    CAPTURE(alpha);
    const dm::Partition p(labels, spec_of(16, dm::PartitionScheme::dirichlet, alpha, 3));
    check_disjoint_and_covering(p, 6007);
  }
}

TEST_CASE("models::partition: small Dirichlet alpha skews label histograms, large alpha is near uniform") {
  const auto labels = cyclic_labels(20000, 10);
  const dm::Partition skewed(labels, spec_of(20, dm::PartitionScheme::dirichlet, 0.05, 7));
  const dm::Partition mild(labels, spec_of(20, dm::PartitionScheme::dirichlet, 1.0, 7));
  const dm::Partition uniform(labels, spec_of(20, dm::PartitionScheme::dirichlet, 1000.0, 7));
  const dm::Partition iid(labels, spec_of(20, dm::PartitionScheme::iid, 1.0, 7));
  const double s = mean_max_share(skewed);
  const double m = mean_max_share(mild);
  const double u = mean_max_share(uniform);
  const double i = mean_max_share(iid);
  MESSAGE("mean largest class share: alpha 0.05 " << s << ", alpha 1 " << m << ", alpha 1000 " << u
                                                  << ", iid " << i);
  CHECK(s > 0.6);
  CHECK(m > u + 0.05);
  CHECK(u < 0.15);  // uniform share 0.1; sampling noise of 1000-sample shards adds ~0.03
  CHECK(i < 0.15);
}

TEST_CASE("models::partition: rejects no workers, more workers than samples and bad alpha") {
  const auto labels = cyclic_labels(10, 2);
  CHECK_THROWS_AS(dm::Partition(labels, spec_of(0, dm::PartitionScheme::iid, 1.0, 0)), dm::PartitionError);
  try {
    dm::Partition(labels, spec_of(11, dm::PartitionScheme::iid, 1.0, 0));
    FAIL("11 replicas share 10 samples");
  } catch (const dm::PartitionError& e) {
    CHECK(e.input() == dm::RunInput::workers);
    CHECK(e.reason().starts_with("10 samples cannot be shared by 11 replicas"));
  }
  CHECK_THROWS_AS(dm::Partition(labels, spec_of(2, dm::PartitionScheme::dirichlet, 0.0, 0)),
                  dm::PartitionError);
  CHECK_THROWS_AS(dm::Partition(labels, spec_of(2, dm::PartitionScheme::dirichlet, -1.0, 0)),
                  dm::PartitionError);
}

TEST_CASE("models::sampler: each sample of a shard is used at most once per epoch") {
  const auto labels = cyclic_labels(1000, 10);
  const dm::Partition p(labels, spec_of(4, dm::PartitionScheme::dirichlet, 0.3, 11));
  for (int r = 0; r < 4; ++r) {
    dm::BatchSampler sampler(p, r, 16);
    const auto shard = p.shard(r);
    CHECK(sampler.batches_per_epoch() == static_cast<std::int64_t>(shard.size()) / 16);
    for (std::int64_t epoch = 0; epoch < 3; ++epoch) {
      std::set<std::int64_t> used;
      for (std::int64_t b = 0; b < sampler.batches_per_epoch(); ++b) {
        const std::int64_t t = epoch * sampler.batches_per_epoch() + b;
        CHECK(sampler.epoch_of(t) == epoch);
        const auto batch = sampler.batch(t);
        REQUIRE(batch.size() == 16U);
        for (auto i : batch) {
          CHECK(std::binary_search(shard.begin(), shard.end(), i));
          CHECK(used.insert(i).second);
        }
      }
      CHECK(used.size() == static_cast<std::size_t>(sampler.batches_per_epoch() * 16));
    }
  }
}

TEST_CASE("models::sampler: order is reproducible, random-access and reshuffled every epoch") {
  const auto labels = cyclic_labels(640, 10);
  const dm::Partition p(labels, spec_of(2, dm::PartitionScheme::iid, 1.0, 9));
  dm::BatchSampler sequential(p, 1, 32);
  dm::BatchSampler jumping(p, 1, 32);
  std::vector<std::vector<std::int64_t>> batches;
  for (std::int64_t t = 0; t < 30; ++t) {
    const auto b = sequential.batch(t);
    batches.emplace_back(b.begin(), b.end());
  }
  for (std::int64_t t : {25, 3, 17, 0, 29, 10}) {
    const auto b = jumping.batch(t);
    CHECK(std::vector<std::int64_t>(b.begin(), b.end()) == batches[static_cast<std::size_t>(t)]);
  }
  // Epoch 1 starts at iteration 10 (320 samples / 32); its first batch differs from epoch 0's.
  CHECK(sequential.batches_per_epoch() == 10);
  CHECK(batches[10] != batches[0]);
  // Another replica of the same partition draws from its own shard in its own order.
  dm::BatchSampler other(p, 0, 32);
  const auto b0 = other.batch(0);
  CHECK(std::vector<std::int64_t>(b0.begin(), b0.end()) != batches[0]);
}

TEST_CASE("models::sampler: a batch larger than the shard is an error about the batch per worker") {
  const auto labels = cyclic_labels(100, 10);
  const dm::Partition p(labels, spec_of(10, dm::PartitionScheme::iid, 1.0, 0));
  try {
    dm::BatchSampler(p, 0, 11);
    FAIL("a batch of 11 fits a shard of 10");
  } catch (const dm::PartitionError& e) {
    CHECK(e.input() == dm::RunInput::batch_per_worker);
    CHECK(e.reason().starts_with("11 does not fit replica 0's shard of 10 samples"));
    CHECK(std::string(e.what()).starts_with("batch per worker: 11 does not fit"));
  }
  CHECK_THROWS_AS(dm::BatchSampler(p, 0, 0), dm::PartitionError);
  CHECK_THROWS_AS(dm::BatchSampler(p, 10, 1), dm::PartitionError);
  CHECK_NOTHROW(dm::BatchSampler(p, 0, 10));
}
