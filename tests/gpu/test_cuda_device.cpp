#include <doctest/doctest.h>

#include <cstddef>
#include <numeric>
#include <vector>

#include "skip.hpp"

TEST_SUITE("gpu") {
  TEST_CASE("gpu::cuda: a host buffer survives a round trip through device memory") {
    if (!dbench::testing::cuda_device_or_skip()) {
      return;
    }
    std::vector<float> host(1 << 20);
    std::iota(host.begin(), host.end(), 0.5f);
    const std::size_t bytes = host.size() * sizeof(float);
    void* device = nullptr;
    REQUIRE(cudaMalloc(&device, bytes) == cudaSuccess);
    REQUIRE(cudaMemcpy(device, host.data(), bytes, cudaMemcpyHostToDevice) == cudaSuccess);
    std::vector<float> back(host.size(), -1.0f);
    REQUIRE(cudaMemcpy(back.data(), device, bytes, cudaMemcpyDeviceToHost) == cudaSuccess);
    CHECK(cudaFree(device) == cudaSuccess);
    CHECK(back == host);
  }
}
