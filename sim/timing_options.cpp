// The names of the timing options as configs and the command line spell them (fidelity, all-reduce
// algorithm, protocol), and CommSimulator's constructor, which checks the options against the platform.
#include <fmt/core.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <string>
#include <string_view>
#include <utility>

#include "sim/timing.hpp"

namespace dbench::sim {
namespace {

constexpr std::array<std::string_view, 6> kAllReduce = {"ring", "hierarchical", "tree",
                                                        "nvls", "collnet",      "auto"};
constexpr std::array<std::string_view, 2> kProtocols = {"LL", "bulk"};

}  // namespace

Fidelity parse_fidelity(std::string_view name) {
  if (name == "fast") {
    return Fidelity::fast;
  }
  if (name == "full") {
    return Fidelity::full;
  }
  throw PlatformError("--fidelity", fmt::format("must be fast or full, got '{}'", name));
}

std::span<const std::string_view> known_allreduce_algorithms() noexcept {
  return kAllReduce;
}

std::string_view allreduce_name(AllReduceAlgorithm algorithm) noexcept {
  return kAllReduce[static_cast<std::size_t>(algorithm)];
}

AllReduceAlgorithm parse_allreduce_algorithm(std::string_view name) {
  const auto it = std::find(kAllReduce.begin(), kAllReduce.end(), name);
  if (it == kAllReduce.end()) {
    throw PlatformError("platform.allreduce", fmt::format("unknown all-reduce '{}' (known: {})", name,
                                                          fmt::join(kAllReduce, ", ")));
  }
  return static_cast<AllReduceAlgorithm>(it - kAllReduce.begin());
}

std::string_view protocol_name(Protocol protocol) noexcept {
  return kProtocols[static_cast<std::size_t>(protocol)];
}

std::string AllReduceChoice::name() const {
  return fmt::format("{}/{}", allreduce_name(algorithm), protocol_name(protocol));
}

void validate_timing(const PlatformSpec& platform, int gpus, const TimingOptions& options) {
  validate(platform, gpus);
  if (options.bucket_bytes < 0) {
    throw PlatformError("platform.bucket_bytes", fmt::format("must be >= 0, got {}", options.bucket_bytes));
  }
  if (options.allreduce == AllReduceAlgorithm::nvls && platform.allreduce_bandwidth_Bps == 0.0 &&
      (platform.nvls_efficiency == 0.0 || gpus > platform.gpus_per_node)) {
    throw PlatformError(
        "platform.allreduce",
        fmt::format("nvls needs a node switch that reduces (platform.nvls_efficiency > 0, got {}) "
                    "and every GPU on one node ({} GPUs, {} per node)",
                    platform.nvls_efficiency, gpus, platform.gpus_per_node));
  }
  if (options.allreduce == AllReduceAlgorithm::collnet && platform.allreduce_bandwidth_Bps == 0.0 &&
      (platform.collnet_efficiency == 0.0 || gpus <= platform.gpus_per_node)) {
    throw PlatformError(
        "platform.allreduce",
        fmt::format("collnet needs a fabric that reduces (platform.collnet_efficiency > 0, got {}) "
                    "and GPUs on several nodes ({} GPUs, {} per node)",
                    platform.collnet_efficiency, gpus, platform.gpus_per_node));
  }
}

CommSimulator::CommSimulator(PlatformSpec platform, int gpus, TimingOptions options)
    : platform_(std::move(platform)), gpus_(gpus), options_(std::move(options)) {
  validate_timing(platform_, gpus_, options_);
}

}  // namespace dbench::sim
