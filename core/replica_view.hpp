// Non-owning views of an [N, P] replica matrix: N rows of P floats, `stride` floats apart.
#pragma once

#include <cstddef>
#include <span>
#include <type_traits>

namespace dbench::core {

/// Rows of equal length at a fixed stride; T is float or const float. Padding between rows is not part of it.
template <class T>
struct BasicReplicaView {
  /// First element of row 0.
  T* data = nullptr;
  /// Number of replicas N.
  std::size_t rows = 0;
  /// Elements per replica P.
  std::size_t cols = 0;
  /// Distance between consecutive rows in elements (>= cols).
  std::size_t stride = 0;

  /// Row i as a span of `cols` elements.
  std::span<T> row(std::size_t i) const noexcept { return {data + i * stride, cols}; }
  /// Start of row i.
  T* row_data(std::size_t i) const noexcept { return data + i * stride; }

  /// A float view converts to a const float view.
  operator BasicReplicaView<const T>() const noexcept requires(!std::is_const_v<T>) {
    return {data, rows, cols, stride};
  }
};

/// A mutable [N, P] view.
using ReplicaView = BasicReplicaView<float>;
/// A read-only [N, P] view.
using ConstReplicaView = BasicReplicaView<const float>;

}  // namespace dbench::core
