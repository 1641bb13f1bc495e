#include "sim/platform.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <utility>

namespace dbench::sim {
namespace {

constexpr std::array<std::string_view, 5> kFabrics = {"star", "fat-tree", "dragonfly", "torus",
                                                      "multi-building"};
constexpr std::array<std::string_view, 5> kPresets = {"frontier", "summit", "dgx-h100", "dgx-h100-campus",
                                                      "commodity"};

// The cost of starting a collective (kernel launch and setup): fitted to the 4 KB all-reduce on one 8-GPU
// NVSwitch node, ~16.7 us (github.com/deepseek-ai/DeepEP issue 303), the row it then cannot be checked on.
constexpr double kCollectiveLatency_s = 8.7e-6;
// The bulk protocol's extra cost per pipeline step over the low-latency one: NCCL's own tuning model charges
// its Simple protocol ~3 us more per NVLink hop than LL (src/graph/tuning.cc). Not measured here.
constexpr double kBulkStepLatency_s = 3e-6;

// ResNet-50 training FLOPs per sample in ModelProfile's convention: 4.1 GMACs forward = 8.2 GFLOP, backward
// twice that. Used only to turn a published throughput into an effective rate.
constexpr double kResnet50TrainFlopsPerSample = 3.0 * 8.2e9;

std::string join(std::span<const std::string_view> words) {
  std::string out;
  for (const auto word : words) {
    out += (out.empty() ? "" : ", ") + std::string(word);
  }
  return out;
}

// A preset's shared protocol costs (kCollectiveLatency_s, kBulkStepLatency_s), its fixed per-iteration
// overhead, and the GPU rate that reproduces its published ResNet-50 throughput of `samples_per_s` per GPU
// at batch 256, which it also records as the reference.
PlatformSpec with_resnet50_rate(PlatformSpec p, double iteration_overhead_s, double samples_per_s) {
  p.collective_latency_s = kCollectiveLatency_s;
  p.bulk_step_latency_s = kBulkStepLatency_s;
  p.iteration_overhead_s = iteration_overhead_s;
  p.reference_resnet50_samples_per_s = samples_per_s;
  p.reference_resnet50_batch = 256;
  p.gpu_flops_per_s = rate_from_throughput(kResnet50TrainFlopsPerSample, p.reference_resnet50_samples_per_s,
                                           p.reference_resnet50_batch, p.iteration_overhead_s);
  return p;
}

// OLCF Frontier (ORNL), from the OLCF Frontier User Guide, "System Overview" and "Node Types":
// * 4 AMD MI250X per node, 2 GCDs each: 8 GPUs as the software sees them.
// * GCD-to-GCD Infinity Fabric 50-100 GB/s per direction: the lower 50 GB/s as each GPU's port.
// * 4 HPE Slingshot-11 NICs of 200 Gb/s = 25 GB/s each.
// * Slingshot dragonfly; each Rosetta switch serves 16 NIC ports (4 nodes x 4 NICs), 32 switches (128 nodes)
//   per group. The four NICs of a node reach four switches; modelled as one 100 GB/s node link into one
//   router, with fabric links of the same width.
// * Latencies (not in the guide; typical figures): ~1 us per xGMI hop, 0.5 us per NIC, 0.3 us per Rosetta
// hop. Collective start and bulk-protocol step costs as dgx-h100's (RCCL follows NCCL's protocols).
// * Achieved fractions of the line rates: not published for this machine; the line rates are used.
// * Compute: MLPerf has no MI250X ResNet-50 entry; assumed ~1,100 samples/s per GCD (half an MI250X, which
//   trains about as fast as an A100 at ~2,200 samples/s with mixed precision). Calibrate before trusting it.
PlatformSpec frontier() {
  const PlatformSpec p = make_platform(
      {.gpus = 8, .port = {50e9, 1e-6}, .nics = 4, .nic = {25e9, 0.5e-6}},
      {.fabric = Fabric::dragonfly, .link = {100e9, 0.3e-6}, .nodes_per_switch = 4}, "frontier");
  return with_resnet50_rate(p, 5e-3, 1100.0);
}

// OLCF Summit (ORNL), from the OLCF Summit User Guide, "System Overview":
// * 6 NVIDIA V100 per node, 3 per socket; NVLink 2.0 between the GPUs of a socket at 50 GB/s per direction
//   (two 25 GB/s bricks), X-Bus between sockets at 64 GB/s: 50 GB/s as each GPU's port.
// * Dual-rail Mellanox EDR InfiniBand: 2 NICs of 100 Gb/s = 12.5 GB/s each (23 GB/s node injection measured).
// * Non-blocking fat-tree; 18 nodes per rack, modelled as 18 nodes per leaf switch with EDR links of 25 GB/s
//   (both rails as one link).
// * Latencies (typical, not in the guide): ~1 us NVLink hop, 0.5 us per HCA, 0.1 us per EDR switch hop;
//   collective start and bulk-protocol step costs as dgx-h100's.
// * EDR's Switch-IB 2 reduces only small messages (SHARP v1, for latency), so no in-network reduction is
//   modelled.
// * Achieved network rate: the guide's measured 23 GB/s node injection over the 25 GB/s line rate; NVLink 2
//   at its line rate (no published all-reduce figure for this node).
// * Compute: NVIDIA DeepLearningExamples, ResNet-50 v1.5 training on a DGX-1 V100 16 GB with mixed
//   precision, batch 256 per GPU: ~1,200 samples/s per GPU.
PlatformSpec summit() {
  PlatformSpec p =
      make_platform({.gpus = 6, .port = {50e9, 1e-6}, .nics = 2, .nic = {12.5e9, 0.5e-6}},
                    {.fabric = Fabric::fat_tree, .link = {25e9, 0.1e-6}, .nodes_per_switch = 18}, "summit");
  p.network_efficiency = 23.0 / 25.0;
  return with_resnet50_rate(p, 5e-3, 1200.0);
}

// NVIDIA DGX H100 / H200 SuperPOD, from the DGX H100 datasheet and the DGX SuperPOD reference architecture:
// * 8 H100 (or H200) per node on NVLink 4 through NVSwitch: 900 GB/s bidirectional = 450 GB/s per direction.
// * 8 ConnectX-7 NICs of 400 Gb/s = 50 GB/s each, one per GPU (compute rails).
// * Rail-optimised, full-bisection fat-tree; a scalable unit (SU) is 32 nodes, modelled as 32 nodes per leaf
//   switch with 400 GB/s node links (the 8 rails as one link).
// * Latencies (typical): ~1 us NVLink hop, 0.5 us per HCA, 0.1 us per Quantum-2 switch hop.
// * Achieved NVLink rate: nccl-tests' ring all-reduce reaches busbw ~370 GB/s of the 450 GB/s line rate
//   (github.com/NVIDIA/nccl-tests issue 212): 0.82.
// * NVLS (NVLink SHARP: NVSwitch 3 reduces in the switch): 8 H100 reach busbw ~480 GB/s, algbw ~275 GB/s
//   (NVIDIA/nccl issue 2140, nccl-tests issues 212 and 290); each port then carries algbw (n + 1) / n =
//   309 GB/s each way: 0.69 of the line rate.
// * InfiniBand NDR at its line rate: no achieved fraction is published apart from all-reduce figures.
// * In-network reduction: Quantum-2 switches reduce (SHARP v3, NCCL's CollNet). Its streaming rate is an
//   estimate, the fraction of a NIC's line rate a point-to-point ring reaches across two nodes (C4 of the
//   published timings: 46 of 50 GB/s); no published SHARP all-reduce figure is in the reference set.
// * Compute: ~3,000 samples/s per H100 for ResNet-50 training with mixed precision at batch 256 (NVIDIA's
//   published per-GPU PyTorch figures; MLPerf-tuned submissions reach roughly twice that).
PlatformSpec dgx_h100() {
  PlatformSpec p = make_platform(
      {.gpus = 8, .port = {450e9, 1e-6}, .nics = 8, .nic = {50e9, 0.5e-6}},
      {.fabric = Fabric::fat_tree, .link = {400e9, 0.1e-6}, .nodes_per_switch = 32}, "dgx-h100");
  p.intra_node_efficiency = 370.0 / 450.0;
  p.nvls_efficiency = 275.0 * 9.0 / 8.0 / 450.0;
  p.collnet_efficiency = 46.0 / 50.0;
  return with_resnet50_rate(p, 3e-3, 3000.0);
}

// DGX H100 nodes as dgx-h100, in 4 buildings of a campus, for the question of what a thin link between the
// buildings does to each algorithm at 100k+ GPUs. The nodes and each building's fabric are dgx-h100's; the
// link between buildings is an assumption, not a published machine:
// * Each building a rail-optimised full-bisection fat-tree as dgx-h100's. At 131,072 GPUs a building holds
//   4,096 nodes, whose bisection is 2,048 x 400 GB/s = 819 TB/s.
// * Each building's uplink to the others: 512 ports of 800 Gb/s (100 GB/s) of inter-building fibre, 51.2 TB/s
//   per direction, 1/16 of that bisection (operators thin the links between buildings by an order of
//   magnitude or more, against a non-blocking fabric inside one).
// * Latency between buildings ~22 us: ~4 km of fibre at ~4.9 us/km (refractive index ~1.47) plus the
//   border switches and long-reach optics (~2 us); each building's uplink carries half, 11 us.
PlatformSpec dgx_h100_campus() {
  PlatformSpec p = dgx_h100();
  p.name = "dgx-h100-campus";
  p.fabric = Fabric::multi_building;
  p.buildings = 4;
  p.inter_building_bandwidth_Bps = 512 * 100e9;
  p.inter_building_latency_s = 11e-6;
  return p;
}

// A commodity GPU cluster: off-the-shelf 8-GPU servers on 100 Gb/s Ethernet, where the network, not the
// GPUs, limits data-parallel training.
// * 8 NVIDIA A100 PCIe per node, each on its own PCIe 4.0 x16 link: 16 GT/s x 16 lanes x 128/130 = 31.5 GB/s
//   per direction (PCI-SIG PCIe 4.0 base specification; NVIDIA A100 PCIe product brief). GPU-to-GPU copies
//   through the PCIe switches reach about 25 GB/s of it (p2pBandwidthLatencyTest figures on such servers):
//   0.8.
// * One 100 GbE NIC per node (e.g. ConnectX-6 Dx): 12.5 GB/s; RoCE v2 reaches about 90 % of the line rate
//   for large messages (ib_write_bw figures the NIC vendors publish).
// * Leaf-spine Ethernet, non-blocking: 16 nodes per leaf switch, 100 Gb/s links (one per node's NIC).
// * Latencies (typical): ~2 us per PCIe hop through the switch, 1.5 us per RoCE NIC, 0.6 us per Ethernet
//   switch hop; collective start and bulk-protocol step costs as dgx-h100's.
// * Compute: one A100 trains ResNet-50 at ~2,470 samples/s with mixed precision, batch 256 (NVIDIA
//   DeepLearningExamples, PyTorch ResNet-50 v1.5; T2 of the published timings). That is the SXM board's
//   figure; the 250-300 W PCIe board may be up to ~10 % slower under sustained load.
PlatformSpec commodity() {
  PlatformSpec p = make_platform(
      {.gpus = 8, .port = {31.5e9, 2e-6}, .nics = 1, .nic = {12.5e9, 1.5e-6}},
      {.fabric = Fabric::fat_tree, .link = {12.5e9, 0.6e-6}, .nodes_per_switch = 16}, "commodity");
  p.intra_node_efficiency = 0.8;
  p.network_efficiency = 0.9;
  return with_resnet50_rate(p, 3e-3, 2470.0);
}

// A factor or probability in [min, max]; `none` names the value that changes nothing.
void require_within(double value, double min, double max, std::string_view key, std::string_view none) {
  if (!(value >= min && value <= max)) {
    throw PlatformError(fmt::format("platform.{}", key),
                        fmt::format("must be in [{}, {}] ({}), got {}", min, max, none, value));
  }
}

// The sane range of each physical number of a platform: far beyond any real machine on either side (a
// microcontroller's 1e3 FLOP/s to 1,000 times the fastest GPU's; a modem's 1 kB/s to 1 PB/s per link), so
// that a unit slip or a typo (1e-300 FLOP/s, 1e308 s) is refused at load instead of timing an iteration to
// 0 or infinite seconds.
struct NumberRange {
  std::string_view key;
  double PlatformSpec::*field;
  double min;
  double max;
  std::string_view unit;
  /// The meaning of 0 where 0 is allowed below `min` ("none", "gpu_flops_per_s"); empty where it is not.
  std::string_view zero;
};

constexpr double kMinRate = 1e3;
constexpr double kMaxRate = 1e18;
constexpr double kMinBandwidth = 1e3;
constexpr double kMaxBandwidth = 1e15;
constexpr double kMaxLatency = 10.0;
constexpr double kMaxOverhead = 1e6;

constexpr std::array<NumberRange, 17> kNumberRanges{{
    {"gpu_flops_per_s", &PlatformSpec::gpu_flops_per_s, kMinRate, kMaxRate, "FLOP/s", ""},
    {"gpu_flops_per_s_bf16", &PlatformSpec::gpu_flops_per_s_bf16, kMinRate, kMaxRate, "FLOP/s",
     "gpu_flops_per_s"},
    {"gpu_flops_per_s_fp16", &PlatformSpec::gpu_flops_per_s_fp16, kMinRate, kMaxRate, "FLOP/s",
     "gpu_flops_per_s"},
    {"intra_node_bandwidth_Bps", &PlatformSpec::intra_node_bandwidth_Bps, kMinBandwidth, kMaxBandwidth, "B/s",
     ""},
    {"nic_bandwidth_Bps", &PlatformSpec::nic_bandwidth_Bps, kMinBandwidth, kMaxBandwidth, "B/s", ""},
    {"switch_bandwidth_Bps", &PlatformSpec::switch_bandwidth_Bps, kMinBandwidth, kMaxBandwidth, "B/s", ""},
    {"inter_building_bandwidth_Bps", &PlatformSpec::inter_building_bandwidth_Bps, kMinBandwidth,
     kMaxBandwidth, "B/s", "one building"},
    {"allreduce_bandwidth_Bps", &PlatformSpec::allreduce_bandwidth_Bps, kMinBandwidth, kMaxBandwidth, "B/s",
     "simulated"},
    {"intra_node_latency_s", &PlatformSpec::intra_node_latency_s, 0.0, kMaxLatency, "s", ""},
    {"nic_latency_s", &PlatformSpec::nic_latency_s, 0.0, kMaxLatency, "s", ""},
    {"switch_latency_s", &PlatformSpec::switch_latency_s, 0.0, kMaxLatency, "s", ""},
    {"inter_building_latency_s", &PlatformSpec::inter_building_latency_s, 0.0, kMaxLatency, "s", ""},
    {"collective_latency_s", &PlatformSpec::collective_latency_s, 0.0, kMaxLatency, "s", ""},
    {"bulk_step_latency_s", &PlatformSpec::bulk_step_latency_s, 0.0, kMaxLatency, "s", ""},
    {"allreduce_latency_s", &PlatformSpec::allreduce_latency_s, 0.0, kMaxLatency, "s", ""},
    {"iteration_overhead_s", &PlatformSpec::iteration_overhead_s, 0.0, kMaxOverhead, "s", ""},
    {"gradient_step_overhead_s", &PlatformSpec::gradient_step_overhead_s, 0.0, kMaxOverhead, "s", ""},
}};

std::string range_reason(const NumberRange& range, double value) {
  if (!std::isfinite(value)) {
    return fmt::format("must be a finite number, got {}", value);
  }
  if ((value >= range.min && value <= range.max) || (value == 0.0 && !range.zero.empty())) {
    return "";
  }
  const std::string zero = range.zero.empty() ? "" : fmt::format("0 ({}) or ", range.zero);
  return fmt::format("must be {}in [{:g}, {:g}] {}, got {:g}", zero, range.min, range.max, range.unit, value);
}

}  // namespace

PlatformError::PlatformError(std::string key, const std::string& reason)
    : std::invalid_argument(key + ": " + reason), key_(std::move(key)) {}

std::span<const std::string_view> known_fabrics() noexcept {
  return kFabrics;
}

std::string_view fabric_name(Fabric fabric) noexcept {
  return kFabrics[static_cast<std::size_t>(fabric)];
}

Fabric parse_fabric(std::string_view name) {
  const auto it = std::find(kFabrics.begin(), kFabrics.end(), name);
  if (it == kFabrics.end()) {
    throw PlatformError("platform.fabric",
                        fmt::format("unknown fabric '{}' (known: {})", name, join(kFabrics)));
  }
  return static_cast<Fabric>(it - kFabrics.begin());
}

std::span<const std::string_view> known_presets() noexcept {
  return kPresets;
}

PlatformSpec make_platform(const NodeSpec& node, const FabricSpec& fabric, std::string name) {
  PlatformSpec p;
  p.name = std::move(name);
  p.gpus_per_node = node.gpus;
  p.intra_node_bandwidth_Bps = node.port.bandwidth_Bps;
  p.intra_node_latency_s = node.port.latency_s;
  p.nics_per_node = node.nics;
  p.nic_bandwidth_Bps = node.nic.bandwidth_Bps;
  p.nic_latency_s = node.nic.latency_s;
  p.fabric = fabric.fabric;
  p.switch_bandwidth_Bps = fabric.link.bandwidth_Bps;
  p.switch_latency_s = fabric.link.latency_s;
  p.nodes_per_switch = fabric.nodes_per_switch;
  return p;
}

PlatformSpec platform_preset(std::string_view name) {
  if (name == "frontier") {
    return frontier();
  }
  if (name == "summit") {
    return summit();
  }
  if (name == "dgx-h100" || name == "dgx-h200") {
    return dgx_h100();
  }
  if (name == "dgx-h100-campus") {
    return dgx_h100_campus();
  }
  if (name == "commodity") {
    return commodity();
  }
  throw PlatformError("platform.preset",
                      fmt::format("unknown preset '{}' (known: {}, custom)", name, join(kPresets)));
}

void validate(const PlatformSpec& p, int gpus) {
  if (p.gpus_per_node < 1) {
    throw PlatformError("platform.gpus_per_node", fmt::format("must be >= 1, got {}", p.gpus_per_node));
  }
  if (p.nics_per_node < 1) {
    throw PlatformError("platform.nics_per_node", fmt::format("must be >= 1, got {}", p.nics_per_node));
  }
  if (!(p.shared_core_turns >= 0.0 && p.shared_core_turns <= p.gpus_per_node - 1)) {
    throw PlatformError("platform.shared_core_turns",
                        fmt::format("must be between 0 and the node's {} GPUs less one, got {}",
                                    p.gpus_per_node, p.shared_core_turns));
  }
  if (p.cores_per_node < 0 || p.cores_per_node > p.gpus_per_node) {
    throw PlatformError("platform.cores_per_node",
                        fmt::format("must be between 0 (a processor per GPU) and the node's {} GPUs, got {}",
                                    p.gpus_per_node, p.cores_per_node));
  }
  if (!(p.same_core_relief >= 0.0 && p.same_core_relief <= p.gpus_per_node - 1)) {
    throw PlatformError("platform.same_core_relief",
                        fmt::format("must be between 0 and the node's {} GPUs less one, got {}",
                                    p.gpus_per_node, p.same_core_relief));
  }
  if (p.same_core_relief_whole &&
      !(*p.same_core_relief_whole >= 0.0 && *p.same_core_relief_whole <= p.gpus_per_node - 1)) {
    throw PlatformError("platform.same_core_relief_whole",
                        fmt::format("must be between 0 and the node's {} GPUs less one, got {}",
                                    p.gpus_per_node, *p.same_core_relief_whole));
  }
  if (p.nodes_per_switch < 1) {
    throw PlatformError("platform.nodes_per_switch", fmt::format("must be >= 1, got {}", p.nodes_per_switch));
  }
  if (p.buildings < 1) {
    throw PlatformError("platform.buildings", fmt::format("must be >= 1, got {}", p.buildings));
  }
  for (const auto& range : kNumberRanges) {
    if (const std::string reason = range_reason(range, p.*range.field); !reason.empty()) {
      throw PlatformError(fmt::format("platform.{}", range.key), reason);
    }
  }
  if (gpus >= 1 && building_count(p, node_count(p, gpus)) > 1 && p.inter_building_bandwidth_Bps == 0.0) {
    throw PlatformError("platform.inter_building_bandwidth_Bps",
                        fmt::format("must be > 0: {} GPUs span {} buildings of the multi-building fabric",
                                    gpus, building_count(p, node_count(p, gpus))));
  }
  require_within(p.intra_node_efficiency, 1e-3, 1.0, "intra_node_efficiency", "1: the line rate");
  require_within(p.network_efficiency, 1e-3, 1.0, "network_efficiency", "1: the line rate");
  require_within(p.nvls_efficiency, 0.0, 1.0, "nvls_efficiency", "0: no in-switch reduction");
  require_within(p.collnet_efficiency, 0.0, 1.0, "collnet_efficiency", "0: no in-network reduction");
  require_within(p.multi_gpu_slowdown, 1.0, 100.0, "multi_gpu_slowdown", "1: none");
  require_within(p.compute_jitter_cv, 0.0, 10.0, "compute_jitter_cv", "0: none");
  require_within(p.compute_tail_probability, 0.0, 1.0, "compute_tail_probability", "0: never");
  require_within(p.compute_tail_factor, 1.0, 1000.0, "compute_tail_factor", "1: none");
  require_within(p.straggler_factor, 1.0, 1000.0, "straggler_factor", "1: none");
  if (p.stragglers < 0 || p.stragglers > std::max(gpus, 0)) {
    throw PlatformError("platform.stragglers",
                        fmt::format("must be between 0 and the {} GPUs, got {}", gpus, p.stragglers));
  }
  if (gpus < 1) {
    throw PlatformError("train.workers", fmt::format("must be >= 1 GPU, got {}", gpus));
  }
  if (gpus > p.gpus_per_node && gpus % p.gpus_per_node != 0) {
    throw PlatformError(
        "platform.gpus_per_node",
        fmt::format("{} GPUs do not fill whole nodes of {} GPUs (train.workers must be a multiple "
                    "of platform.gpus_per_node, or at most one node)",
                    gpus, p.gpus_per_node));
  }
}

std::string check_platform_number(std::string_view key, double value) {
  for (const auto& range : kNumberRanges) {
    if (range.key == key) {
      return range_reason(range, value);
    }
  }
  return "";
}

int node_count(const PlatformSpec& platform, int gpus) {
  // In 64 bits: a count near INT_MAX (a fuzzed config) must not overflow on its way to being refused.
  const std::int64_t per_node = std::max(1, platform.gpus_per_node);
  return static_cast<int>(std::max<std::int64_t>(1, (std::int64_t{gpus} + per_node - 1) / per_node));
}

int nodes_per_building(const PlatformSpec& platform, int nodes) {
  if (platform.fabric != Fabric::multi_building) {
    return nodes;
  }
  const std::int64_t buildings = std::max(1, platform.buildings);
  return static_cast<int>(std::max<std::int64_t>(1, (std::int64_t{nodes} + buildings - 1) / buildings));
}

int building_count(const PlatformSpec& platform, int nodes) {
  const std::int64_t per_building = nodes_per_building(platform, nodes);
  return static_cast<int>(std::max<std::int64_t>(1, (std::int64_t{nodes} + per_building - 1) / per_building));
}

double fabric_latency_s(const PlatformSpec& platform, int gpus) {
  const bool between_buildings = building_count(platform, node_count(platform, gpus)) > 1;
  return 4.0 * platform.switch_latency_s +
         (between_buildings ? 2.0 * platform.inter_building_latency_s : 0.0);
}

int nic_links(const PlatformSpec& platform) {
  return std::max(1, std::min(platform.nics_per_node, platform.gpus_per_node));
}

int nic_link_of(const PlatformSpec& platform, int local_gpu) {
  return local_gpu * nic_links(platform) / std::max(1, platform.gpus_per_node);
}

int allreduce_channels(const PlatformSpec& platform, int gpus) {
  return gpus > platform.gpus_per_node ? nic_links(platform) : 1;
}

double rate_from_throughput(double train_flops_per_sample, double samples_per_s, int batch,
                            double overhead_s) {
  const double iteration_s = static_cast<double>(batch) / samples_per_s;
  return static_cast<double>(batch) * train_flops_per_sample / (iteration_s - overhead_s);
}

double compute_rate(const PlatformSpec& platform, models::Precision precision) {
  const double own = precision == models::Precision::bf16   ? platform.gpu_flops_per_s_bf16
                     : precision == models::Precision::fp16 ? platform.gpu_flops_per_s_fp16
                                                            : 0.0;
  return own > 0.0 ? own : platform.gpu_flops_per_s;
}

double compute_seconds(const models::ModelProfile& profile, int batch_per_gpu, const PlatformSpec& platform) {
  const double flops = static_cast<double>(batch_per_gpu) *
                       (profile.forward_flops_per_sample + profile.backward_flops_per_sample);
  return flops / compute_rate(platform, profile.compute_precision) + platform.iteration_overhead_s;
}

double backward_seconds(const models::ModelProfile& profile, int batch_per_gpu,
                        const PlatformSpec& platform) {
  return static_cast<double>(batch_per_gpu) * profile.backward_flops_per_sample /
         compute_rate(platform, profile.compute_precision);
}

}  // namespace dbench::sim
