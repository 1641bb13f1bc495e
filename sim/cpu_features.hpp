// Which vector instruction sets this CPU offers, for kernels chosen at run time rather than at compile time
// (binaries must run on CPUs other than the build machine's).
#pragma once

namespace dbench::sim {

/// True when AVX-512F kernels may run here.
inline bool cpu_has_avx512f() noexcept {
#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") != 0;
#else
  return false;
#endif
}

}  // namespace dbench::sim
