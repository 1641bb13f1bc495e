// Centralized training's all-reduce, as arithmetic on the [N, P] matrix: every replica receives the mean.
#pragma once

#include <span>

#include "core/replica_view.hpp"

namespace dbench::core {

class Sgd;

/// Replaces every row of `values` by the mean of all rows (summed in double, replica order); a memory-bound
/// pass that reads and writes the matrix once.
void allreduce_mean(ReplicaView values, unsigned threads = 1);

/// Centralized training's all-reduce fused into its SGD step: every replica steps with the replica mean of
/// `grads` (summed as allreduce_mean() sums it), computed a column block at a time and applied while in
/// cache. Bitwise the parameters and momentum of allreduce_mean(grads) then sgd.step(), without writing the
/// mean to every row of `grads` and reading it back (which leaves `grads` as it was). With LARS, whose ratios
/// need each tensor's whole mean gradient, the mean is taken first (replica_average()), then every replica
/// steps. Throws ShapeError when the views differ in shape.
void allreduce_mean_step(Sgd& sgd, double lr, ReplicaView params, ConstReplicaView grads,
                         ReplicaView momentum, unsigned threads = 1);

/// average[c] = mean over replicas of values[i][c] (summed in double, replica order); `average` has P
/// elements.
void replica_average(ConstReplicaView values, std::span<float> average, unsigned threads = 1);

}  // namespace dbench::core
