// Centralized training's all-reduce, as arithmetic on the [N, P] matrix: every replica receives the mean.
#pragma once

#include <span>

#include "core/replica_view.hpp"

namespace dbench::core {

/// Replaces every row of `values` by the mean of all rows (summed in double, replica order); a memory-bound
/// pass that reads and writes the matrix once.
void allreduce_mean(ReplicaView values, unsigned threads = 1);

/// average[c] = mean over replicas of values[i][c] (summed in double, replica order); `average` has P
/// elements.
void replica_average(ConstReplicaView values, std::span<float> average, unsigned threads = 1);

}  // namespace dbench::core
