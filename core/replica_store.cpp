#include "core/replica_store.hpp"

#include <algorithm>
#include <string>
#include <utility>

#include "core/errors.hpp"

namespace dbench::core {

ReplicaStore::ReplicaStore(std::size_t replicas, ParamLayout layout)
    : replicas_(replicas), layout_(std::move(layout)), stride_(padded_stride(layout_.size())) {
  if (replicas_ == 0) {
    throw ShapeError("ReplicaStore: replicas must be at least 1");
  }
  if (layout_.size() == 0) {
    throw ShapeError("ReplicaStore: the parameter layout is empty");
  }
  params_ = AlignedBuffer(replicas_ * stride_);
  momentum_ = AlignedBuffer(replicas_ * stride_);
}

AlignedBuffer& ReplicaStore::allocated(AlignedBuffer& b) {
  if (b.size() == 0) {
    b = AlignedBuffer(replicas_ * stride_);
  }
  return b;
}

void ReplicaStore::swap_mixed() {
  if (mixed_.size() == 0) {
    throw ShapeError("ReplicaStore::swap_mixed: nothing was mixed (no mixing target was asked for)");
  }
  params_.swap(mixed_);
}

std::span<float> ReplicaStore::tensor(std::size_t i, std::size_t t) {
  if (i >= replicas_ || t >= layout_.tensor_count()) {
    throw ShapeError("ReplicaStore::tensor: replica " + std::to_string(i) + " / tensor " + std::to_string(t) +
                     " out of range (" + std::to_string(replicas_) + " replicas, " +
                     std::to_string(layout_.tensor_count()) + " tensors)");
  }
  const TensorSlice& s = layout_.tensors()[t];
  return replica(i).subspan(s.offset, s.elements);
}

void ReplicaStore::broadcast_params(std::size_t from) {
  broadcast(params(), from, "ReplicaStore::broadcast_params");
}

void ReplicaStore::broadcast_momentum(std::size_t from) {
  broadcast(momentum(), from, "ReplicaStore::broadcast_momentum");
}

void ReplicaStore::broadcast(ReplicaView v, std::size_t from, const char* what) {
  if (from >= v.rows) {
    throw ShapeError(std::string(what) + ": replica " + std::to_string(from) + " out of range (" +
                     std::to_string(v.rows) + " replicas)");
  }
  const std::span<const float> src = v.row(from);
  for (std::size_t i = 0; i < v.rows; ++i) {
    if (i != from) {
      std::copy(src.begin(), src.end(), v.row(i).begin());
    }
  }
}

}  // namespace dbench::core
