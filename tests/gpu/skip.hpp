#pragma once

#include <cstdio>

#include <cuda_runtime_api.h>

namespace dbench::testing {

/// True when a CUDA device can be used; otherwise prints the marker that makes ctest report a skip.
inline bool cuda_device_or_skip() {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess || count == 0) {
    std::printf("%s no usable CUDA device: %s\n", DBENCH_SKIP_MARKER,
                status == cudaSuccess ? "device count is 0" : cudaGetErrorString(status));
    return false;
  }
  return true;
}

}  // namespace dbench::testing
