// An owning, 64-byte aligned, zero-initialised float array: the storage behind replica matrices.
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <utility>

namespace dbench::core {

/// Heap floats aligned for full-width vector loads; large buffers also ask the kernel for huge pages.
class AlignedBuffer {
 public:
  /// An empty buffer.
  AlignedBuffer() = default;
  /// `size` zeroed floats; throws std::bad_alloc when the memory is not there.
  explicit AlignedBuffer(std::size_t size);

  /// Number of floats.
  std::size_t size() const noexcept { return size_; }
  /// First float; 64-byte aligned (nullptr when empty).
  float* data() noexcept { return data_.get(); }
  /// First float; 64-byte aligned (nullptr when empty).
  const float* data() const noexcept { return data_.get(); }
  /// The whole buffer.
  std::span<float> span() noexcept { return {data_.get(), size_}; }
  /// The whole buffer.
  std::span<const float> span() const noexcept { return {data_.get(), size_}; }

  /// Exchanges storage with `other` in O(1).
  void swap(AlignedBuffer& other) noexcept {
    data_.swap(other.data_);
    std::swap(size_, other.size_);
  }

 private:
  struct Free {
    void operator()(float* p) const noexcept;
  };
  std::unique_ptr<float, Free> data_;
  std::size_t size_ = 0;
};

/// to[0, n) = from[0, n), written past the caches where the CPU allows it (x86 streaming stores): for
/// results nothing reads soon, which then cost no read of the destination's lines. `to` is 16-byte aligned.
void copy_past_cache(float* to, const float* from, std::size_t n) noexcept;

}  // namespace dbench::core
