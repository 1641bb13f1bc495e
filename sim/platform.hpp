// The machine time is simulated on, as a plain value: GPUs per node, intra-node GPU links, NICs, the switch
// fabric and the GPUs' effective compute rate. SimGrid builds its platform from this in sim/timing.cpp only.
#pragma once

#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>

#include "models/model_profile.hpp"

namespace dbench::sim {

/// A platform description that cannot be simulated; key() names the config key to change.
class PlatformError : public std::invalid_argument {
 public:
  /// Builds "key: reason".
  PlatformError(std::string key, const std::string& reason);
  /// The offending key, e.g. "platform.nic_bandwidth_Bps".
  const std::string& key() const noexcept { return key_; }

 private:
  std::string key_;
};

/// How the nodes' NICs are connected.
enum class Fabric {
  star,       ///< one non-blocking crossbar: every node has its own port of switch_bandwidth_Bps
  fat_tree,   ///< two levels, nodes_per_switch nodes per leaf switch, full bisection to the spines
  dragonfly,  ///< nodes_per_switch nodes per router, 8 routers per chassis, 4 chassis per group
  torus,      ///< 2-D wrap-around grid of nodes (the most square shape), dimension-order routing
  /// buildings of a fat-tree each (as fat_tree, the spines one non-blocking layer), every building joined to
  /// the others through one uplink of inter_building_bandwidth_Bps
  multi_building,
};

/// Fabric names as configs spell them, in Fabric order.
std::span<const std::string_view> known_fabrics() noexcept;
/// "fat-tree" for Fabric::fat_tree, ...
std::string_view fabric_name(Fabric fabric) noexcept;
/// Parses a fabric name; throws PlatformError("platform.fabric", ...) listing the known ones.
Fabric parse_fabric(std::string_view name);

/// A machine of identical nodes, each with gpus_per_node GPUs behind a node switch (NVSwitch, xGMI) and
/// nics_per_node NICs into the fabric. All bandwidths are per direction (links are full duplex).
struct PlatformSpec {
  std::string name = "custom";  ///< preset or calibration file name, for reports
  int gpus_per_node = 1;        ///< GPUs behind one node switch
  /// One GPU's port into its node's switch (NVLink/NVSwitch, xGMI).
  double intra_node_bandwidth_Bps = 0.0;
  /// Latency of one GPU port; a GPU-to-GPU message inside a node crosses two.
  double intra_node_latency_s = 0.0;
  int nics_per_node = 1;  ///< NICs of one node, each serving its share of the GPUs (nic_links())
  /// One NIC; a node's injection bandwidth is nics_per_node times this.
  double nic_bandwidth_Bps = 0.0;
  /// Latency of the NIC, crossed once leaving and once entering a node.
  double nic_latency_s = 0.0;
  Fabric fabric = Fabric::fat_tree;  ///< how the nodes are connected
  /// Every fabric link (node to switch and switch to switch).
  double switch_bandwidth_Bps = 0.0;
  /// Latency of every fabric link (one hop).
  double switch_latency_s = 0.0;
  /// Fat-tree and multi-building: nodes per leaf switch; dragonfly: nodes per router.
  int nodes_per_switch = 16;
  /// Multi-building: the buildings the nodes are spread over, in blocks of consecutive nodes
  /// (nodes_per_building()).
  int buildings = 1;
  /// Multi-building: one building's uplink to the others (all its inter-building fibre together), per
  /// direction; 0 only where the GPUs fit in one building.
  double inter_building_bandwidth_Bps = 0.0;
  /// Multi-building: latency of one building's uplink; a message between buildings crosses two (its own
  /// building's and the other's).
  double inter_building_latency_s = 0.0;
  /// Achieved fraction of a GPU port's line rate (protocol headers, flow control, the copy engines' own
  /// limits): every intra-node transfer sees intra_node_bandwidth_Bps times this; 1: the line rate.
  double intra_node_efficiency = 1.0;
  /// Achieved fraction of the line rate of every NIC and fabric link; 1: the line rate.
  double network_efficiency = 1.0;
  /// Fixed cost of starting one collective or one round of point-to-point transfers (kernel launch, setup),
  /// paid once per all-reduce (per bucket) and per gossip round.
  double collective_latency_s = 0.0;
  /// Extra cost of every pipeline step of an all-reduce under the bulk protocol (the handshake that tells the
  /// receiver a chunk is complete). The low-latency protocol pays none, but its 8-byte lines carry 4 bytes of
  /// data and 4 of flag, so it moves twice the bytes; an all-reduce runs whichever protocol is faster.
  double bulk_step_latency_s = 0.0;
  /// In-switch reduction (NVLS): the node switch sums what the GPUs write into it and multicasts the result,
  /// so each GPU port carries S (n + 1) / n each way for an all-reduce of S bytes on n GPUs. This is the
  /// achieved fraction of the port's line rate when it does (the switch's reduction is slower than a plain
  /// transfer); 0: the switch cannot reduce.
  double nvls_efficiency = 0.0;
  /// In-network reduction (SHARP in InfiniBand switches, NCCL's CollNet): the fabric's switches sum what the
  /// nodes send and return the sum, so each GPU's NIC link carries its node's reduced shard S / g once each
  /// way, against 2 (nodes - 1) / nodes of it around an inter-node ring. This is the achieved fraction of the
  /// NIC link's line rate when they do; 0: the fabric cannot reduce.
  double collnet_efficiency = 0.0;
  /// Effective training rate of one GPU (achieved, not peak), in the FLOP convention of ModelProfile.
  double gpu_flops_per_s = 0.0;
  /// The same rate for a model that computes in bf16 (ModelProfile::compute_precision); 0: gpu_flops_per_s.
  double gpu_flops_per_s_bf16 = 0.0;
  /// The same rate for a model that computes in fp16; 0: gpu_flops_per_s.
  double gpu_flops_per_s_fp16 = 0.0;
  /// Fixed cost of an iteration besides the model's FLOPs (kernel launches, optimizer step, data loading).
  double iteration_overhead_s = 0.0;
  /// A GPU's compute in a multi-GPU job is this many times its compute alone (data loading and host
  /// contention, kernels slowed while communication overlaps them); 1: none. One GPU alone is never slowed.
  double multi_gpu_slowdown = 1.0;
  /// Per-GPU, per-iteration compute jitter: the coefficient of variation of a lognormal factor with mean 1
  /// drawn for every GPU and iteration; 0: every GPU computes the same every iteration.
  double compute_jitter_cv = 0.0;
  /// Heavy tail: the probability that a GPU's iteration is also slowed by compute_tail_factor (0: never).
  double compute_tail_probability = 0.0;
  /// See compute_tail_probability; >= 1.
  double compute_tail_factor = 1.0;
  /// Persistent stragglers: this many GPUs (a seeded choice) compute straggler_factor times slower.
  int stragglers = 0;
  /// See stragglers; >= 1.
  double straggler_factor = 1.0;
  /// A measured all-reduce (dbench calibrate's fit): when allreduce_bandwidth_Bps > 0, an all-reduce of S
  /// bytes per GPU takes allreduce_latency_s + S / allreduce_bandwidth_Bps instead of being simulated message
  /// by message over the links, for machines whose collective is not a ring over them (MPI over shared
  /// memory sums in place, with its own algorithm). 0: simulated.
  double allreduce_latency_s = 0.0;
  /// See allreduce_latency_s; bytes of the all-reduced data (S) per second.
  double allreduce_bandwidth_Bps = 0.0;
  /// Steps of its own a GPU waits each iteration for the GPUs that take turns with it on one processor,
  /// before it communicates: CPU workers that outnumber the cores (dbench calibrate fits it, at most the
  /// workers per core less one). The wait counts as communication, as the workers' own traces count it. 0:
  /// every GPU computes on its own.
  double shared_core_turns = 0.0;
  /// Processors a node's GPUs are pinned to, round-robin (the node's GPU i on processor i mod
  /// cores_per_node), as an MPI launcher maps CPU workers by core; 0: each GPU a processor of its own.
  int cores_per_node = 0;
  /// Of shared_core_turns, the steps a gossiping GPU does not wait for its in-neighbours on its own
  /// processor: it waits shared_core_turns - same_core_relief * (the share of its in-neighbours on its
  /// processor). Those take their turns with it, and their messages arrive while it waits for the others. An
  /// all-reduce waits for every GPU and pays shared_core_turns whole. dbench calibrate fits it on CPU workers
  /// (within [0, shared_core_turns]); 0: the same wait whoever the in-neighbours are.
  double same_core_relief = 0.0;
  /// The steps spared a gossiping GPU whose in-neighbours all share its processor, where that is not
  /// same_core_relief (the relief is then a line in the share up to half, same_core_relief / 2 there, and a
  /// line from there to this at a whole share). dbench calibrate fits it to the one-peer graph's loop, whose
  /// rounds alternate between in-neighbours on the other core and on the worker's own. Unset:
  /// same_core_relief.
  std::optional<double> same_core_relief_whole;
  /// Extra compute of a step whose gradient is all-reduced before it is applied (the gradient kept whole and
  /// the update a pass of its own), over a local step that applies it as it goes; dbench calibrate measures
  /// it on CPU workers, whose local step is fused. 0: none.
  double gradient_step_overhead_s = 0.0;
  /// Published per-GPU ResNet-50 training throughput (samples/s) the preset's rate is checked against; 0 for
  /// none.
  double reference_resnet50_samples_per_s = 0.0;
  /// Batch per GPU of that published figure.
  int reference_resnet50_batch = 0;
};

/// One link of a machine: its bandwidth per direction and its latency, written {bandwidth_Bps, latency_s}.
struct LinkSpec {
  double bandwidth_Bps = 0.0;
  double latency_s = 0.0;
};

/// One node of a machine: `gpus` GPUs, each with a `port` into the node switch
/// (PlatformSpec::intra_node_bandwidth_Bps and intra_node_latency_s), and `nics` NICs, each a `nic` link
/// into the fabric (nic_bandwidth_Bps and nic_latency_s).
struct NodeSpec {
  int gpus = 1;   ///< PlatformSpec::gpus_per_node
  LinkSpec port;  ///< one GPU's port into the node switch
  int nics = 1;   ///< PlatformSpec::nics_per_node
  LinkSpec nic;   ///< one NIC
};

/// The fabric between the nodes of a machine: its shape, every fabric `link` (switch_bandwidth_Bps and
/// switch_latency_s) and, for a fat-tree or dragonfly, nodes_per_switch. A multi-building fabric's buildings
/// and uplinks are set on the PlatformSpec make_platform() returns.
struct FabricSpec {
  Fabric fabric = Fabric::fat_tree;
  LinkSpec link;
  int nodes_per_switch = 16;
};

/// A machine of `node`s on `fabric`, named `name`; every other field keeps PlatformSpec's default.
PlatformSpec make_platform(const NodeSpec& node, const FabricSpec& fabric, std::string name = "custom");

/// The preset names: frontier, summit, dgx-h100, dgx-h100-campus, commodity (custom is built from the config
/// alone).
std::span<const std::string_view> known_presets() noexcept;
/// A preset machine; throws PlatformError("platform.preset", ...) on an unknown name.
PlatformSpec platform_preset(std::string_view name);

/// Checks every value and that `gpus` fills whole nodes; throws PlatformError naming the key. Rates,
/// bandwidths and times must lie in the sane ranges of check_platform_number.
void validate(const PlatformSpec& platform, int gpus);

/// Checks one rate, bandwidth or time of a platform, by its key ("gpu_flops_per_s"), against its sane range:
/// FLOP/s rates in [1e3, 1e18], bandwidths in [1e3, 1e15] B/s (0 allowed where it means none), latencies in
/// [0, 10] s, iteration_overhead_s in [0, 1e6] s. Returns the reason when the value is outside it, "" when
/// it is inside or the key is no such number.
std::string check_platform_number(std::string_view key, double value);

/// Number of nodes that hold `gpus` GPUs (validate() first).
int node_count(const PlatformSpec& platform, int gpus);

/// Nodes per building on a multi-building fabric of `nodes` nodes: ceil(nodes / buildings), the last building
/// holding what is left; `nodes` on any other fabric.
int nodes_per_building(const PlatformSpec& platform, int nodes);

/// Buildings that `nodes` nodes occupy: ceil(nodes / nodes_per_building()); 1 on any other fabric.
int building_count(const PlatformSpec& platform, int nodes);

/// Latency of the longest route through the fabric between two nodes of a machine of `gpus` GPUs (NICs and
/// GPU ports apart): four fabric hops (leaf, spine, leaf), plus two building uplinks where a multi-building
/// fabric's GPUs span more than one building.
double fabric_latency_s(const PlatformSpec& platform, int gpus);

/// The NIC links of one node: min(nics_per_node, gpus_per_node), together as wide as the node's NICs. Each
/// GPU reaches the fabric through one of them (rails: on a DGX H100 each GPU has its own 50 GB/s NIC; on
/// Frontier two GCDs share one), so a single flow gets one link's bandwidth, never the node's.
int nic_links(const PlatformSpec& platform);

/// The NIC link (0 .. nic_links() - 1) of the node's GPU `local_gpu`: local_gpu * links / gpus_per_node.
int nic_link_of(const PlatformSpec& platform, int local_gpu);

/// Channels a ring or tree all-reduce on `gpus` GPUs is striped over, as NCCL stripes its channels over all
/// NICs: one per NIC link across nodes, one on a single node.
int allreduce_channels(const PlatformSpec& platform, int gpus);

/// The effective rate (gpu_flops_per_s) that reproduces a measured throughput of `samples_per_s` at `batch`
/// once the fixed per-iteration overhead is paid, for a model of `train_flops_per_sample` (forward +
/// backward).
double rate_from_throughput(double train_flops_per_sample, double samples_per_s, int batch,
                            double overhead_s);

/// Seconds of one training iteration's compute (forward + backward) on one GPU:
/// batch * (forward + backward FLOPs per sample) / gpu_flops_per_s + iteration_overhead_s.
double compute_seconds(const models::ModelProfile& profile, int batch_per_gpu, const PlatformSpec& platform);

/// A GPU's effective rate for a model computing in `precision`: gpu_flops_per_s, or the precision's own rate
/// where the platform gives one.
double compute_rate(const PlatformSpec& platform, models::Precision precision);

/// Seconds of the backward pass alone (the window in which bucketed gradients can be all-reduced).
double backward_seconds(const models::ModelProfile& profile, int batch_per_gpu, const PlatformSpec& platform);

}  // namespace dbench::sim
