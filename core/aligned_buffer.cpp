#include "core/aligned_buffer.hpp"

#include <cstdlib>
#include <cstring>
#include <new>

#if defined(__x86_64__)
#include <emmintrin.h>
#endif

#include "models/large_alloc.hpp"

namespace dbench::core {

AlignedBuffer::AlignedBuffer(std::size_t size) : size_(size) {
  if (size == 0) {
    return;
  }
  const std::size_t bytes = size * sizeof(float);
  // Replica matrices are walked with a stride of a whole replica (hundreds of KB): with 4 KB pages a column
  // block of 1008 replicas touches more pages than the TLB holds.
  void* p = models::allocate_large(bytes);
  std::memset(p, 0, bytes);
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
