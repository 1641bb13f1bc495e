// What an all-reduce's two fidelities share (the fast path in collective_timing.cpp, full fidelity in
// timing.cpp): the ring order, the bytes and messages it sends, the protocols' costs. Defined in
// collective_timing.cpp; not part of sim/'s public interface.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sim/platform.hpp"
#include "sim/timing.hpp"

namespace dbench::sim {

struct HierarchicalPlan;

namespace detail {

/// The GPU that receives what `gpu` sends in a ring step of channel `c` of `channels`, on nodes of `g` GPUs
/// (GPUs are numbered node by node). Each channel's ring visits the nodes in turn and each node's GPUs
/// consecutively, starting at local GPU c g / channels: it enters every node at that GPU and leaves it from
/// the one before, so one edge per channel crosses a node's NICs in each direction, on NIC link c (rails).
/// One channel: gpu + 1.
int ring_next(int gpu, int gpus, int g, int c, int channels);

/// Bytes one GPU sends in an all-reduce of `s` bytes (the mean over GPUs; exact for every GPU but the
/// tree's).
double allreduce_bytes_per_gpu(AllReduceAlgorithm algorithm, int n, int g, double s);

/// Messages a pipelined hierarchical all-reduce sends: n per step for each ring that moves data in it.
std::int64_t hierarchical_messages(const HierarchicalPlan& plan);

/// Bytes on the wire per byte of data: the low-latency protocol's lines carry as much flag as data.
double wire_factor(Protocol protocol);

/// The extra cost of every pipeline step under `protocol`.
double step_overhead_s(const PlatformSpec& p, Protocol protocol);

/// In-switch reduction as point-to-point traffic: every GPU port carries S (n + 1) / n each way at
/// nvls_efficiency of its line rate, which a shift by one (each GPU sends to the next) puts on every port
/// once in each direction, scaled from the port's achieved rate to the switch's.
double nvls_message_bytes(const PlatformSpec& p, int n, double s);

/// A tree is striped over at most this many channels (2 trees per channel): each tree step is one simulated
/// pattern of every edge of every tree, and SimGrid's cost grows faster than linearly in a pattern's
/// transfers (a tree over 8 channels on 1008 GPUs: 13,000 transfers a step, a minute per all-reduce size).
/// With 2 channels the tree's inter-node edges use 4 NIC links of a node (of 8 on a DGX H100), so its
/// bandwidth across nodes is underestimated where NCCL uses all of them.
inline constexpr int kTreeChannels = 2;

/// The channels a tree all-reduce on `gpus` GPUs is striped over: allreduce_channels(), at most
/// kTreeChannels.
int tree_channels(const PlatformSpec& p, int gpus);

/// Whether SimGrid options (TimingOptions::simgrid_args) set a configuration, which could change the network
/// model that the lower bounds and the fast path's max-min solution of a pattern assume.
bool sets_simgrid_config(const std::vector<std::string>& args);

/// NVLS has two steps, the reduction into the switch and the multicast out of it.
inline constexpr int kNvlsSteps = 2;

}  // namespace detail
}  // namespace dbench::sim
