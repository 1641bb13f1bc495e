#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace dbench::models {

/// How samples are spread over the replicas.
enum class PartitionScheme {
  /// A seeded random permutation cut into equal shards.
  iid,
  /// Label skew (Hsu et al. 2019): each replica's class mix is drawn from Dirichlet(alpha K p), p the class
  /// frequencies and K their number (alpha per class for balanced labels); shards keep equal sizes.
  dirichlet,
};

/// What Partition needs besides the labels.
struct PartitionSpec {
  /// Number of replicas.
  int workers = 1;
  /// IID shards or Dirichlet label skew.
  PartitionScheme scheme = PartitionScheme::iid;
  /// Dirichlet concentration (only for PartitionScheme::dirichlet): small is skewed, large is near IID.
  double alpha = 1.0;
  /// Seeds the assignment and every replica's per-epoch order.
  std::uint64_t seed = 0;
};

/// Disjoint shards of a data set, one per replica, covering it: shard sizes differ by at most one sample.
class Partition {
 public:
  /// Assigns every sample to one replica; throws PartitionError on workers < 1, more workers than samples,
  /// or a non-positive alpha.
  Partition(std::span<const std::int32_t> labels, const PartitionSpec& spec);

  /// Number of replicas.
  int workers() const { return static_cast<int>(shards_.size()); }
  /// The spec the partition was built from.
  const PartitionSpec& spec() const { return spec_; }
  /// Sample indices of replica r, ascending.
  std::span<const std::int64_t> shard(int replica) const;
  /// Number of classes seen in the labels (largest label + 1).
  int classes() const { return classes_; }
  /// Per-class sample counts of replica r's shard.
  std::vector<std::int64_t> label_histogram(int replica) const;

 private:
  PartitionSpec spec_;
  int classes_ = 0;
  std::vector<std::int32_t> labels_;
  std::vector<std::vector<std::int64_t>> shards_;
};

/// Replica r's mini-batches: an epoch visits its shard once in an order shuffled with a seed derived from
/// (partition seed, r, epoch); the last shard_size mod batch samples of each epoch's order are skipped, so
/// every batch is full and no sample repeats within an epoch.
class BatchSampler {
 public:
  /// Samples for one replica of partition, which must outlive the sampler; throws PartitionError naming
  /// train.batch_per_worker when batch_size exceeds the shard.
  BatchSampler(const Partition& partition, int replica, std::int64_t batch_size);

  /// Full batches per epoch (floor of shard size / batch size).
  std::int64_t batches_per_epoch() const { return batches_per_epoch_; }
  /// The epoch iteration t falls in.
  std::int64_t epoch_of(std::int64_t iteration) const { return iteration / batches_per_epoch_; }
  /// Sample indices of the batch at iteration t (t >= 0); valid until the next call.
  std::span<const std::int64_t> batch(std::int64_t iteration);

 private:
  const Partition* partition_;
  int replica_;
  std::int64_t batch_size_;
  std::int64_t batches_per_epoch_;
  std::int64_t cached_epoch_ = -1;
  std::vector<std::int64_t> order_;
};

}  // namespace dbench::models
