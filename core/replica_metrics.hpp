// What the study watches across replicas: per-tensor norms and their spread, and the distance to consensus.
#pragma once

#include <cstddef>
#include <vector>

#include "core/param_layout.hpp"
#include "core/replica_view.hpp"

namespace dbench::core {

/// Statistics of one [N, P] parameter matrix under a tensor layout; sums are in double.
struct ReplicaMetrics {
  /// Number of replicas N.
  std::size_t replicas = 0;
  /// Number of tensors T.
  std::size_t tensors = 0;
  /// L2 norm of tensor t of replica i at [i * tensors + t].
  std::vector<double> norms;
  /// Per tensor: variance over replicas of the norms above (population variance, divided by N).
  std::vector<double> norm_variance;
  /// Per tensor: mean over replicas of ||x_i,t - mean_t||^2.
  std::vector<double> consensus_per_tensor;
  /// Mean over replicas of ||x_i - x_bar||^2: the sum of consensus_per_tensor.
  double consensus_distance = 0.0;
  /// The replica average x_bar, P elements (computed in double, stored as float).
  std::vector<float> average;

  /// L2 norm of tensor t of replica i.
  double norm(std::size_t i, std::size_t t) const { return norms[i * tensors + t]; }
};

/// Computes every field of ReplicaMetrics in one read of `params` (column blocks stay in cache for the second
/// look); results do not depend on `threads`. Throws ShapeError when the layout does not match P.
ReplicaMetrics compute_replica_metrics(ConstReplicaView params, const ParamLayout& layout,
                                       unsigned threads = 1);

}  // namespace dbench::core
