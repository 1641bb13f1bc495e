// Non-owning views of an [N, P] replica matrix: N rows of P floats, `stride` floats apart, or the same
// values column block by column block.
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

/// An [N, P] matrix held column block by column block, in the buffer of a row-major one whose rows are
/// `stride` floats apart: block b (columns [b width, (b + 1) width)) starts at data + b N width and holds
/// every row's slice of it, row i's at i spacing(b). Each block's slices are `width` floats apart except the
/// last block's, which take what is left of a row's `stride`, so the blocks fill exactly the N stride floats
/// of the row-major buffer. A block is then one contiguous piece of memory (mix() reads it so).
template <class T>
struct BasicBlockedView {
  /// Start of block 0 (and of the buffer).
  T* data = nullptr;
  /// Number of replicas N.
  std::size_t rows = 0;
  /// Elements per replica P.
  std::size_t cols = 0;
  /// Floats per row of the row-major buffer this fills (>= cols).
  std::size_t stride = 0;
  /// Columns per block (the last block may have fewer).
  std::size_t width = 0;

  /// Number of column blocks.
  std::size_t blocks() const noexcept { return (cols + width - 1) / width; }
  /// Distance between the slices of consecutive rows in block b.
  std::size_t spacing(std::size_t b) const noexcept { return b + 1 < blocks() ? width : stride - b * width; }
  /// Start of row i's slice of block b (column b width).
  T* slice(std::size_t i, std::size_t b) const noexcept { return data + b * rows * width + i * spacing(b); }

  /// A float view converts to a const float view.
  operator BasicBlockedView<const T>() const noexcept requires(!std::is_const_v<T>) {
    return {data, rows, cols, stride, width};
  }
};

/// A mutable column-blocked [N, P] view.
using BlockedView = BasicBlockedView<float>;
/// A read-only column-blocked [N, P] view.
using ConstBlockedView = BasicBlockedView<const float>;

}  // namespace dbench::core
