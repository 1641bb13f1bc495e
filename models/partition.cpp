#include "models/partition.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "models/errors.hpp"
#include "models/rng.hpp"

namespace dbench::models {

namespace {

constexpr std::uint64_t kAssignStream = 0xA551;
constexpr std::uint64_t kEpochStream = 0xE90C;

/// Shard sizes as equal as possible: the first n mod workers replicas take one extra sample.
std::vector<std::int64_t> shard_sizes(std::int64_t samples, int workers) {
  std::vector<std::int64_t> sizes(static_cast<std::size_t>(workers), samples / workers);
  for (std::int64_t r = 0; r < samples % workers; ++r) {
    ++sizes[static_cast<std::size_t>(r)];
  }
  return sizes;
}

std::vector<std::vector<std::int64_t>> iid_shards(std::int64_t samples, int workers, Rng& rng) {
  std::vector<std::int64_t> order(static_cast<std::size_t>(samples));
  std::iota(order.begin(), order.end(), std::int64_t{0});
  rng.shuffle(std::span(order));
  std::vector<std::vector<std::int64_t>> shards;
  auto next = order.begin();
  for (std::int64_t size : shard_sizes(samples, workers)) {
    shards.emplace_back(next, next + size);
    next += size;
  }
  return shards;
}

/// Dirichlet sample with concentration alpha * K * prior[k]: alpha per class when the K classes are balanced,
/// which is how "Dirichlet(alpha)" label skew is usually quoted.
std::vector<double> dirichlet(std::span<const double> prior, double alpha, Rng& rng) {
  std::vector<double> q(prior.size(), 0.0);
  const double scale = alpha * static_cast<double>(prior.size());
  double sum = 0.0;
  for (std::size_t k = 0; k < prior.size(); ++k) {
    q[k] = prior[k] > 0.0 ? rng.gamma(scale * prior[k]) : 0.0;
    sum += q[k];
  }
  if (!(sum > 0.0)) {
    // Every gamma draw underflowed (alpha of order 0.01 or less): the limit is all mass on one class,
    // drawn with the prior's probabilities.
    double u = rng.uniform();
    std::fill(q.begin(), q.end(), 0.0);
    for (std::size_t k = 0; k < prior.size(); ++k) {
      if (u < prior[k] || k + 1 == prior.size()) {
        q[k] = 1.0;
        return q;
      }
      u -= prior[k];
    }
  }
  for (auto& v : q) {
    v /= sum;
  }
  return q;
}

/// Hsu, Qi and Brown (2019): replica r draws class proportions q_r ~ Dir(alpha K p) (p = class frequencies)
/// and fills its shard by drawing a class from q_r, then an unused sample of that class. Replicas draw in
/// turns, one sample each, so that classes that run out affect all replicas alike; a replica whose preferred
/// classes are exhausted draws from the remaining ones, renormalised.
std::vector<std::vector<std::int64_t>> dirichlet_shards(std::span<const std::int32_t> labels, int classes,
                                                        int workers, double alpha, Rng& rng) {
  const auto n = static_cast<std::int64_t>(labels.size());
  std::vector<std::vector<std::int64_t>> pools(static_cast<std::size_t>(classes));
  for (std::int64_t i = 0; i < n; ++i) {
    pools[static_cast<std::size_t>(labels[static_cast<std::size_t>(i)])].push_back(i);
  }
  std::vector<double> prior(static_cast<std::size_t>(classes));
  for (std::size_t k = 0; k < pools.size(); ++k) {
    rng.shuffle(std::span(pools[k]));
    prior[k] = static_cast<double>(pools[k].size()) / static_cast<double>(n);
  }
  std::vector<std::vector<double>> mix;
  for (int r = 0; r < workers; ++r) {
    mix.push_back(dirichlet(prior, alpha, rng));
  }
  const auto sizes = shard_sizes(n, workers);
  std::vector<std::vector<std::int64_t>> shards(static_cast<std::size_t>(workers));
  for (std::int64_t round = 0; round < sizes.front(); ++round) {
    for (std::size_t r = 0; r < shards.size(); ++r) {
      if (round >= sizes[r]) {
        continue;
      }
      double mass = 0.0;
      for (std::size_t k = 0; k < pools.size(); ++k) {
        mass += pools[k].empty() ? 0.0 : mix[r][k];
      }
      std::size_t chosen = pools.size();
      if (mass > 0.0) {
        double u = rng.uniform() * mass;
        for (std::size_t k = 0; k < pools.size(); ++k) {
          if (pools[k].empty() || mix[r][k] == 0.0) {
            continue;
          }
          chosen = k;  // the last candidate absorbs rounding in u
          if (u < mix[r][k]) {
            break;
          }
          u -= mix[r][k];
        }
      } else {
        // Only classes outside this replica's mix are left: take one of them in proportion to what remains.
        std::int64_t remaining = 0;
        for (const auto& pool : pools) {
          remaining += static_cast<std::int64_t>(pool.size());
        }
        auto pick = static_cast<std::int64_t>(rng.below(static_cast<std::uint64_t>(remaining)));
        for (std::size_t k = 0; k < pools.size(); ++k) {
          const auto size = static_cast<std::int64_t>(pools[k].size());
          if (pick < size) {
            chosen = k;
            break;
          }
          pick -= size;
        }
      }
      shards[r].push_back(pools[chosen].back());
      pools[chosen].pop_back();
    }
  }
  return shards;
}

}  // namespace

Partition::Partition(std::span<const std::int32_t> labels, const PartitionSpec& spec)
    : spec_(spec), labels_(labels.begin(), labels.end()) {
  const auto n = static_cast<std::int64_t>(labels.size());
  if (spec.workers < 1) {
    throw PartitionError(RunInput::workers, fmt::format("must be at least 1, got {}", spec.workers));
  }
  if (n < spec.workers) {
    throw PartitionError(
        RunInput::workers,
        fmt::format("{} samples cannot be shared by {} replicas: every replica needs at least "
                    "one; use fewer workers or a larger data set",
                    n, spec.workers));
  }
  for (std::int64_t i = 0; i < n; ++i) {
    const std::int32_t label = labels[static_cast<std::size_t>(i)];
    if (label < 0) {
      throw PartitionError(fmt::format("label {} of sample {} is negative", label, i));
    }
    classes_ = std::max(classes_, label + 1);
  }
  Rng rng(derive_seed(spec.seed, {kAssignStream}));
  if (spec.scheme == PartitionScheme::iid) {
    shards_ = iid_shards(n, spec.workers, rng);
  } else {
    if (!(spec.alpha > 0.0) || !std::isfinite(spec.alpha)) {
      throw PartitionError(
          fmt::format("Dirichlet alpha = {} must be a positive finite number (small values "
                      "skew the label mix, large ones approach IID)",
                      spec.alpha));
    }
    shards_ = dirichlet_shards(labels_, classes_, spec.workers, spec.alpha, rng);
  }
  for (auto& shard : shards_) {
    std::sort(shard.begin(), shard.end());
  }
}

std::span<const std::int64_t> Partition::shard(int replica) const {
  if (replica < 0 || replica >= workers()) {
    throw PartitionError(fmt::format("replica {} is outside 0..{}", replica, workers() - 1));
  }
  return shards_[static_cast<std::size_t>(replica)];
}

std::vector<std::int64_t> Partition::label_histogram(int replica) const {
  std::vector<std::int64_t> histogram(static_cast<std::size_t>(classes_), 0);
  for (std::int64_t index : shard(replica)) {
    ++histogram[static_cast<std::size_t>(labels_[static_cast<std::size_t>(index)])];
  }
  return histogram;
}

BatchSampler::BatchSampler(const Partition& partition, int replica, std::int64_t batch_size)
    : partition_(&partition), replica_(replica), batch_size_(batch_size), batches_per_epoch_(0) {
  const auto shard_size = static_cast<std::int64_t>(partition.shard(replica).size());
  if (batch_size < 1 || batch_size > shard_size) {
    throw PartitionError(
        RunInput::batch_per_worker,
        fmt::format("{} does not fit replica {}'s shard of {} samples (a batch must hold 1 to "
                    "shard-size samples); lower it or use fewer workers",
                    batch_size, replica, shard_size));
  }
  batches_per_epoch_ = shard_size / batch_size;
}

std::span<const std::int64_t> BatchSampler::batch(std::int64_t iteration) {
  if (iteration < 0) {
    throw PartitionError(fmt::format("iteration {} must be non-negative", iteration));
  }
  const std::int64_t epoch = epoch_of(iteration);
  if (epoch != cached_epoch_) {
    const auto shard = partition_->shard(replica_);
    order_.assign(shard.begin(), shard.end());
    Rng rng(derive_seed(partition_->spec().seed, {kEpochStream, static_cast<std::uint64_t>(replica_),
                                                  static_cast<std::uint64_t>(epoch)}));
    rng.shuffle(std::span(order_));
    cached_epoch_ = epoch;
  }
  const std::int64_t position = (iteration % batches_per_epoch_) * batch_size_;
  return std::span<const std::int64_t>(order_).subspan(static_cast<std::size_t>(position),
                                                       static_cast<std::size_t>(batch_size_));
}

}  // namespace dbench::models
