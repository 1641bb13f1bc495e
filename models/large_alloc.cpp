#include "models/large_alloc.hpp"

#include <cstdlib>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace dbench::models {
namespace {

constexpr std::size_t kHugePage = std::size_t{2} << 20;

}  // namespace

void* allocate_large(std::size_t bytes) {
  const std::size_t alignment = bytes >= kHugePage ? kHugePage : 64;
  // aligned_alloc wants a multiple of the alignment (and at least one byte).
  const std::size_t rounded = bytes == 0 ? alignment : (bytes + alignment - 1) / alignment * alignment;
  if (rounded < bytes) {
    throw std::bad_alloc();
  }
  void* p = std::aligned_alloc(alignment, rounded);
  if (p == nullptr) {
    throw std::bad_alloc();
  }
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  if (alignment == kHugePage) {
    // Advice only: where transparent huge pages are off this fails harmlessly.
    (void)madvise(p, rounded, MADV_HUGEPAGE);
  }
#endif
  return p;
}

}  // namespace dbench::models
