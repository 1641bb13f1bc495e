// The LibTorch worker's calibration pieces on the GPU (gpu suite: reported as skipped where no device is
// visible): device buffers and a worker's iterations through NCCL, as `dbench calibrate --device cuda` times
// them.
#include <cuda_runtime_api.h>
#include <doctest/doctest.h>

#include <array>
#include <numeric>
#include <string>
#include <vector>

#include "core/numerics.hpp"
#include "experiments/sim_setup.hpp"
#include "gpu/skip.hpp"
#include "runtime/communicator.hpp"
#include "runtime/cuda_check.hpp"
#include "runtime/nccl_communicator.hpp"
#include "runtime/torch_worker.hpp"
#include "support/approx.hpp"

namespace {

std::vector<float> download(std::span<const float> device) {
  std::vector<float> host(device.size());
  DBENCH_CUDA_CHECK(
      cudaMemcpy(host.data(), device.data(), device.size() * sizeof(float), cudaMemcpyDeviceToHost));
  return host;
}

void upload(std::span<float> device, const std::vector<float>& host) {
  DBENCH_CUDA_CHECK(
      cudaMemcpy(device.data(), host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice));
}

}  // namespace

TEST_SUITE("gpu") {
  TEST_CASE("gpu::torch: device buffers mix and scale on the GPU and average through NCCL") {
    if (!dbench::testing::cuda_device_or_skip()) {
      return;
    }
    dbench::runtime::DeviceBuffers buffers("cuda:0", 4096, 3);
    CHECK(download(buffers[1]) == std::vector<float>(4096, 1.0f));
    std::vector<float> a(4096);
    std::iota(a.begin(), a.end(), -100.0f);
    const std::vector<float> b(4096, 3.0f);
    upload(buffers[0], a);
    upload(buffers[2], b);
    const std::array<std::size_t, 2> sources{0, 2};
    const std::array<float, 2> weights{0.5f, 0.25f};
    buffers.mix(1, sources, weights);
    const auto mixed = download(buffers[1]);
    for (std::size_t i = 0; i < a.size(); ++i) {
      CHECK(mixed[i] == dbench::testing::approx(0.5f * a[i] + 0.25f * b[i]));
    }
    buffers.swap(0, 1);
    CHECK(download(buffers[0]) == mixed);
    buffers.scale(0, 2.0);
    dbench::runtime::SingleWorkerCommunicator bootstrap;
    dbench::runtime::NcclCommunicator nccl(bootstrap);
    nccl.allreduce(buffers[0], dbench::runtime::ReduceOp::sum);
    const auto doubled = download(buffers[0]);
    for (std::size_t i = 0; i < a.size(); ++i) {
      CHECK(doubled[i] == dbench::testing::approx(2.0f * mixed[i]));
    }
  }

  TEST_CASE("gpu::torch: a LibTorch worker's step and centralized iteration run on the GPU through NCCL") {
    if (!dbench::testing::cuda_device_or_skip()) {
      return;
    }
    // One worker: centralized, as dbench train --local 1 needs (no graph has a single node).
    const std::vector<std::string> overrides{"train.model=lenet", "train.workers=1",
                                             "algorithm.kind=centralized"};
    const auto config = dbench::experiments::load_config("", overrides, "<test>");
    const auto train = dbench::core::load_dataset("fashion-mnist", dbench::models::Split::train, "", 1);
    const auto spec = dbench::experiments::numerics_spec(config, train);
    dbench::runtime::SingleWorkerCommunicator host;
    dbench::runtime::NcclCommunicator nccl(host);
    dbench::runtime::TorchWorkerBench gpu(spec, train, host, nccl, "cuda:0");
    dbench::runtime::TorchWorkerBench cpu(spec, train, host, host, "cpu");
    CHECK(gpu.parameters() == cpu.parameters());
    gpu.local_step(0);
    gpu.iterate(
        1, dbench::topology::ScheduleStep{"allreduce", nullptr, dbench::topology::Communication::all_reduce});
    CHECK(nccl.counters().messages >= 1);
  }
}
