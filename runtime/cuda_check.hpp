// DBENCH_CUDA_CHECK and DBENCH_NCCL_CHECK: every CUDA runtime and NCCL call goes through them, so a failure
// becomes a CommError naming the call.
#pragma once

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <cstdio>
#include <string>

#include "runtime/errors.hpp"

namespace dbench::runtime::detail {

/// Throws CommError naming `call` and CUDA's reason unless `code` is cudaSuccess.
inline void check_cuda(cudaError_t code, const char* call) {
  if (code != cudaSuccess) {
    throw CommError(std::string(call) + " failed: " + cudaGetErrorString(code));
  }
}

/// Throws CommError naming `call` and NCCL's reason unless `code` is ncclSuccess.
inline void check_nccl(ncclResult_t code, const char* call) {
  if (code != ncclSuccess) {
    throw CommError(std::string(call) + " failed: " + ncclGetErrorString(code));
  }
}

/// check_cuda for places that must not throw (destructors): the failure goes to stderr as a warning.
inline void warn_cuda(cudaError_t code, const char* call) noexcept {
  if (code != cudaSuccess) {
    std::fprintf(stderr, "dbench: warning: %s failed: %s\n", call, cudaGetErrorString(code));
  }
}

/// check_nccl for places that must not throw (destructors): the failure goes to stderr as a warning.
inline void warn_nccl(ncclResult_t code, const char* call) noexcept {
  if (code != ncclSuccess) {
    std::fprintf(stderr, "dbench: warning: %s failed: %s\n", call, ncclGetErrorString(code));
  }
}

}  // namespace dbench::runtime::detail

/// Calls a CUDA runtime function and throws dbench::runtime::CommError unless it returns cudaSuccess.
#define DBENCH_CUDA_CHECK(call) ::dbench::runtime::detail::check_cuda((call), #call)
/// Calls an NCCL function and throws dbench::runtime::CommError unless it returns ncclSuccess.
#define DBENCH_NCCL_CHECK(call) ::dbench::runtime::detail::check_nccl((call), #call)
/// DBENCH_CUDA_CHECK where throwing is not allowed (destructors): a failure is reported on stderr.
#define DBENCH_CUDA_CHECK_NOTHROW(call) ::dbench::runtime::detail::warn_cuda((call), #call)
/// DBENCH_NCCL_CHECK where throwing is not allowed (destructors): a failure is reported on stderr.
#define DBENCH_NCCL_CHECK_NOTHROW(call) ::dbench::runtime::detail::warn_nccl((call), #call)
