#include "experiments/device_option.hpp"

#include <fmt/core.h>

#include <stdexcept>

namespace dbench::experiments {

bool on_gpu(const std::string& device) {
  return device.rfind("cuda", 0) == 0;
}

void check_device(const std::string& device) {
  if (device.empty()) {
    return;
  }
  const bool gpu = device == "cuda" || (device.rfind("cuda:", 0) == 0 && device.size() > 5 &&
                                        device.find_first_not_of("0123456789", 5) == std::string::npos);
  if (device != "cpu" && !gpu) {
    throw std::invalid_argument(fmt::format("--device: expected cpu, cuda or cuda:N, got '{}'", device));
  }
#if !defined(DBENCH_RUNTIME_HAVE_TORCH)
  throw std::invalid_argument(fmt::format("--device {}: this dbench was built without LibTorch", device));
#endif
#if !defined(DBENCH_RUNTIME_HAVE_NCCL)
  if (gpu) {
    throw std::invalid_argument(
        fmt::format("--device {}: this dbench was built without CUDA and NCCL", device));
  }
#endif
}

int gpu_index(const std::string& device) {
  const auto colon = device.find(':');
  return colon == std::string::npos ? -1 : std::stoi(device.substr(colon + 1));
}

}  // namespace dbench::experiments
