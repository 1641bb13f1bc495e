// The NCCL communicator on the GPU (gpu suite: reported as skipped where no device is visible).
#include <doctest/doctest.h>

#include <numeric>
#include <vector>

#include "gpu/skip.hpp"
#include "runtime/communicator.hpp"
#include "runtime/cuda_check.hpp"
#include "runtime/nccl_communicator.hpp"

namespace {

/// A device buffer of floats, freed at scope exit.
class DeviceFloats {
 public:
  explicit DeviceFloats(std::size_t n) : n_(n) { DBENCH_CUDA_CHECK(cudaMalloc(&data_, n * sizeof(float))); }
  ~DeviceFloats() { DBENCH_CUDA_CHECK_NOTHROW(cudaFree(data_)); }
  DeviceFloats(const DeviceFloats&) = delete;
  DeviceFloats& operator=(const DeviceFloats&) = delete;
  std::span<float> span() { return {data_, n_}; }
  void upload(const std::vector<float>& host) {
    DBENCH_CUDA_CHECK(cudaMemcpy(data_, host.data(), n_ * sizeof(float), cudaMemcpyHostToDevice));
  }
  std::vector<float> download() const {
    std::vector<float> host(n_);
    DBENCH_CUDA_CHECK(cudaMemcpy(host.data(), data_, n_ * sizeof(float), cudaMemcpyDeviceToHost));
    return host;
  }

 private:
  float* data_ = nullptr;
  std::size_t n_;
};

}  // namespace

TEST_SUITE("gpu") {
  TEST_CASE(
      "gpu::nccl: one rank all-reduces to itself and exchanges with itself through a grouped send/recv") {
    if (!dbench::testing::cuda_device_or_skip()) {
      return;
    }
    dbench::runtime::SingleWorkerCommunicator bootstrap;
    dbench::runtime::NcclCommunicator comm(bootstrap);
    CHECK(comm.size() == 1);
    CHECK(comm.device() == 0);
    std::vector<float> host(1 << 20);
    std::iota(host.begin(), host.end(), -3.5f);
    DeviceFloats a(host.size());
    DeviceFloats b(host.size());
    a.upload(host);
    comm.allreduce(a.span(), dbench::runtime::ReduceOp::sum);
    CHECK(a.download() == host);
    const dbench::runtime::SendBuffer send{0, a.span()};
    const dbench::runtime::RecvBuffer recv{0, b.span()};
    comm.exchange(std::span(&send, 1), std::span(&recv, 1), 0);
    CHECK(b.download() == host);
    CHECK(comm.counters().bytes_sent == static_cast<std::int64_t>(2 * host.size() * sizeof(float)));
    comm.barrier();
  }
}
