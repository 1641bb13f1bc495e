// DBENCH_CUDA_CHECK and DBENCH_NCCL_CHECK: every CUDA runtime and NCCL call goes through them, so a failure
// becomes a CommError naming the call.
#pragma once

#include <cuda_runtime_api.h>
#include <nccl.h>

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

}  // namespace dbench::runtime::detail

/// Calls a CUDA runtime function and throws dbench::runtime::CommError unless it returns cudaSuccess.
#define DBENCH_CUDA_CHECK(call) ::dbench::runtime::detail::check_cuda((call), #call)
/// Calls an NCCL function and throws dbench::runtime::CommError unless it returns ncclSuccess.
#define DBENCH_NCCL_CHECK(call) ::dbench::runtime::detail::check_nccl((call), #call)
