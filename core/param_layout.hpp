// Where each named parameter tensor lives inside one replica's flat parameter vector.
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

namespace dbench::core {

/// One parameter tensor of a replica: elements [offset, offset + elements) of its row.
struct TensorSlice {
  /// Name as the model reports it, e.g. "fc1.weight".
  std::string name;
  /// First element within the replica's row.
  std::size_t offset = 0;
  /// Number of elements.
  std::size_t elements = 0;
};

/// The tensors of one replica back to back, in order, covering [0, size()).
class ParamLayout {
 public:
  /// An empty layout.
  ParamLayout() = default;
  /// Tensors laid out contiguously in the given order; throws ValueError on an empty tensor or duplicate
  /// name.
  explicit ParamLayout(const std::vector<std::pair<std::string, std::size_t>>& tensors);

  /// The tensors in order.
  const std::vector<TensorSlice>& tensors() const noexcept { return tensors_; }
  /// Number of tensors.
  std::size_t tensor_count() const noexcept { return tensors_.size(); }
  /// Total elements per replica P.
  std::size_t size() const noexcept { return size_; }

 private:
  std::vector<TensorSlice> tensors_;
  std::size_t size_ = 0;
};

}  // namespace dbench::core
