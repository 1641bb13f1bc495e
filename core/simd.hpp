// What the run-time dispatched AVX-512 kernels of core/ need: the intrinsics, a target attribute for the
// kernel functions, and the CPU check that selects them (binaries must also run on CPUs without AVX-512).
// Internal to core/; include it only in kernel translation units.
#pragma once

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#if defined(__GNUC__) && !defined(__clang__)
// GCC 12's _mm512_undefined_*() initialise a variable with itself, which -Wuninitialized then reports at
// every intrinsic built on them (cvtps_pd, shuffles, casts); the value is never read.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>
#define DBENCH_SIM_X86 1
#define DBENCH_AVX512 __attribute__((target("avx512f")))
#endif

#include <unistd.h>

#include <cstddef>

namespace dbench::core {

/// True when AVX-512F kernels may run here.
inline bool cpu_has_avx512f() noexcept {
#if defined(DBENCH_SIM_X86)
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") != 0;
#else
  return false;
#endif
}

/// True on an Intel CPU (where the choice between kernels was measured to depend on the vendor).
inline bool cpu_is_intel() noexcept {
#if defined(DBENCH_SIM_X86)
  __builtin_cpu_init();
  return __builtin_cpu_is("intel") != 0;
#else
  return false;
#endif
}

/// Bytes of L2 cache per core as the C library reports them, or `fallback` where it does not.
inline std::size_t cpu_l2_bytes(std::size_t fallback = std::size_t{1} << 20) noexcept {
#if defined(_SC_LEVEL2_CACHE_SIZE)
  const long bytes = sysconf(_SC_LEVEL2_CACHE_SIZE);
  if (bytes > 0) {
    return static_cast<std::size_t>(bytes);
  }
#endif
  return fallback;
}

}  // namespace dbench::core
