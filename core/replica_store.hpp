// The state of N virtual replicas: parameters, gradients, momentum and a mixing target, each an aligned [N,
// P] matrix whose rows are padded to whole cache lines. The gradients and the mixing target are allocated
// when first asked for: the fused D-PSGD step writes no gradients, and centralized training mixes nothing.
#pragma once

#include <cstddef>
#include <span>

#include "core/aligned_buffer.hpp"
#include "core/param_layout.hpp"
#include "core/replica_view.hpp"

namespace dbench::core {

/// Owns the [N, P] matrices of a set of replicas that share one parameter layout.
class ReplicaStore {
 public:
  /// Floats per row: P rounded up to a 64-byte cache line, so every row starts aligned for vector loads.
  static std::size_t padded_stride(std::size_t params) noexcept { return (params + 15) / 16 * 16; }

  /// `replicas` zeroed replicas of `layout`; throws ShapeError when either is empty.
  ReplicaStore(std::size_t replicas, ParamLayout layout);

  /// Number of replicas N.
  std::size_t replicas() const noexcept { return replicas_; }
  /// Parameters per replica P.
  std::size_t param_count() const noexcept { return layout_.size(); }
  /// Floats between consecutive rows.
  std::size_t stride() const noexcept { return stride_; }
  /// The tensors of every row.
  const ParamLayout& layout() const noexcept { return layout_; }

  /// Parameters x, one row per replica.
  ReplicaView params() noexcept { return view(params_); }
  /// Parameters x, one row per replica.
  ConstReplicaView params() const noexcept { return view(params_); }
  /// Gradients, written by the model and read by the optimizer; zeroed when first asked for.
  ReplicaView grads() { return view(allocated(grads_)); }
  /// SGD momentum buffers.
  ReplicaView momentum() noexcept { return view(momentum_); }
  /// SGD momentum buffers.
  ConstReplicaView momentum() const noexcept { return view(momentum_); }
  /// Where a mixing step writes; swap_mixed() makes it the parameters. Zeroed when first asked for.
  ReplicaView mix_target() { return view(allocated(mixed_)); }

  /// Replica i's parameters.
  std::span<float> replica(std::size_t i) noexcept { return params().row(i); }
  /// Replica i's parameters.
  std::span<const float> replica(std::size_t i) const noexcept { return params().row(i); }
  /// Tensor t of replica i's parameters.
  std::span<float> tensor(std::size_t i, std::size_t t);

  /// After mix(params, mix_target): the mixed values become the parameters, in O(1). Throws ShapeError when
  /// no mixing target was ever asked for.
  void swap_mixed();
  /// Copies replica `from`'s parameters to every replica (the usual common initialisation).
  void broadcast_params(std::size_t from);
  /// Copies replica `from`'s momentum to every replica.
  void broadcast_momentum(std::size_t from);

 private:
  static void broadcast(ReplicaView v, std::size_t from, const char* what);
  /// b, allocated as a zeroed [N, P] matrix if it is not yet.
  AlignedBuffer& allocated(AlignedBuffer& b);
  ReplicaView view(AlignedBuffer& b) noexcept { return {b.data(), replicas_, layout_.size(), stride_}; }
  ConstReplicaView view(const AlignedBuffer& b) const noexcept {
    return {b.data(), replicas_, layout_.size(), stride_};
  }

  std::size_t replicas_;
  ParamLayout layout_;
  std::size_t stride_;
  AlignedBuffer params_;
  AlignedBuffer grads_;
  AlignedBuffer momentum_;
  AlignedBuffer mixed_;
};

}  // namespace dbench::core
