#include "core/aligned_buffer.hpp"

#include <cstdlib>
#include <cstring>
#include <new>

#if defined(__x86_64__)
#include <emmintrin.h>
#endif

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace dbench::core {
namespace {

constexpr std::size_t kHugePage = std::size_t{2} << 20;

}  // namespace

AlignedBuffer::AlignedBuffer(std::size_t size) : size_(size) {
  if (size == 0) {
    return;
  }
  const std::size_t bytes = size * sizeof(float);
  // Replica matrices are walked with a stride of a whole replica (hundreds of KB): with 4 KB pages a column
  // block of 1008 replicas touches more pages than the TLB holds, so large buffers are huge-page aligned and
  // advised.
  const std::size_t alignment = bytes >= kHugePage ? kHugePage : 64;
  const std::size_t rounded = (bytes + alignment - 1) / alignment * alignment;
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
  std::memset(p, 0, rounded);
  data_.reset(static_cast<float*>(p));
}

void AlignedBuffer::Free::operator()(float* p) const noexcept {
  std::free(p);
}

void copy_past_cache(float* to, const float* from, std::size_t n) noexcept {
#if defined(__x86_64__)
  std::size_t k = 0;
  for (; k + 4 <= n; k += 4) {
    _mm_stream_ps(to + k, _mm_loadu_ps(from + k));
  }
  for (; k < n; ++k) {
    to[k] = from[k];
  }
  // Streaming stores are weakly ordered: make them visible before another thread reads them.
  _mm_sfence();
#else
  std::memcpy(to, from, n * sizeof(float));
#endif
}

}  // namespace dbench::core
