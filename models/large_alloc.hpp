// Memory for large arrays that are read at random rows or with a stride of a whole row: a data set's images,
// the replicas' parameter matrices. With 4 KB pages such walks miss the TLB at nearly every row, so blocks of
// 2 MB and more are 2 MB-aligned and advised for transparent huge pages where the platform offers them.
#pragma once

#include <cstddef>
#include <cstdlib>
#include <new>

namespace dbench::models {

/// `bytes` of uninitialised memory, 64-byte aligned, and 2 MB-aligned and advised for huge pages from 2 MB
/// on; release it with std::free. Throws std::bad_alloc when the memory is not there.
void* allocate_large(std::size_t bytes);

/// A standard allocator over allocate_large(), for containers that may grow large.
template <class T>
struct LargeAllocator {
  using value_type = T;

  LargeAllocator() noexcept = default;
  template <class U>
  LargeAllocator(const LargeAllocator<U>&) noexcept {}

  T* allocate(std::size_t n) {
    if (n > static_cast<std::size_t>(-1) / sizeof(T)) {
      throw std::bad_array_new_length();
    }
    return static_cast<T*>(allocate_large(n * sizeof(T)));
  }
  void deallocate(T* p, std::size_t) noexcept { std::free(p); }

  template <class U>
  bool operator==(const LargeAllocator<U>&) const noexcept {
    return true;
  }
};

}  // namespace dbench::models
