// Whether this CPU computes a recorded digest's numbers: digests of training runs were recorded with
// OpenBLAS's SkylakeX (AVX-512) kernels, and the GEMMs' rounding and core/'s choice of AVX-512 kernels depend
// on the CPU. OpenBLAS picks those kernels by CPU model, so on other AVX-512 CPUs (an AMD Zen 4 or 5, say)
// the runs ask for them by name through OPENBLAS_CORETYPE and check they got them; CPUs without AVX-512 are
// not compared against recorded digests.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace dbench::testing {

/// The OpenBLAS core the digests were recorded with.
inline constexpr std::string_view kRecordedCore = "SkylakeX";

/// The environment a command line runs under to load the recorded core: OPENBLAS_VERBOSE=2 makes each run
/// print the core it loaded ("Core: SkylakeX").
inline std::string recorded_core_environment() {
  return "OPENBLAS_CORETYPE=" + std::string(kRecordedCore) + " OPENBLAS_VERBOSE=2 ";
}

/// The line a run prints when it loaded the recorded core.
inline std::string recorded_core_line() {
  return "Core: " + std::string(kRecordedCore);
}

/// Whether this CPU runs OpenBLAS's SkylakeX kernels and core/'s AVX-512 ones.
inline bool cpu_runs_recorded_kernels() {
#if defined(__x86_64__)
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl") &&
         __builtin_cpu_supports("avx512cd");
#else
  return false;
#endif
}

/// FNV-1a, 64 bits, continuing from `hash`.
inline std::uint64_t fnv1a(std::string_view bytes, std::uint64_t hash = 14695981039346656037ULL) {
  for (const char c : bytes) {
    hash = (hash ^ static_cast<unsigned char>(c)) * 1099511628211ULL;
  }
  return hash;
}

}  // namespace dbench::testing
