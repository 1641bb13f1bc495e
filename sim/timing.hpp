// The time half of the simulator: how long each iteration of a schedule takes on a platform, with the
// communication simulated by SimGrid (contention on GPU ports, NICs and switch links included). SimGrid stays
// inside sim/timing.cpp; this header holds plain values.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "models/model_profile.hpp"
#include "sim/platform.hpp"
#include "topology/graph.hpp"
#include "topology/graph_policy.hpp"

namespace dbench::sim {

struct HierarchicalPlan;
struct TreePlan;

/// How much is simulated.
enum class Fidelity {
  fast,  ///< each distinct pattern once (a tree all-reduce whole), a ring's identical steps once; reused
  full,  ///< every message of every iteration, one actor per GPU with the algorithm's real dependencies
};

/// Parses "fast" | "full"; throws PlatformError("--fidelity", ...).
Fidelity parse_fidelity(std::string_view name);

/// The all-reduce of centralized training (and of a global parameter average).
enum class AllReduceAlgorithm {
  ring,          ///< 2(n-1) steps of S/n around a ring that visits each node's GPUs consecutively
  hierarchical,  ///< intra-node reduce-scatter, inter-node ring per local rank, intra-node all-gather;
                 ///< pipelined in chunks through the three phases (HierarchicalPlan)
  tree,          ///< NCCL's double binary tree, reduce and broadcast pipelined in chunks (TreePlan)
  nvls,          ///< in-switch reduction on one node (PlatformSpec::nvls_efficiency > 0)
  collnet,       ///< intra-node reduce-scatter, in-network reduction across nodes, intra-node all-gather,
                 ///< pipelined in chunks (PlatformSpec::collnet_efficiency > 0; HierarchicalPlan)
  automatic,     ///< "auto": per all-reduce size, the fastest of the others the platform has
};

/// Names as configs spell them, in AllReduceAlgorithm order: ring, hierarchical, tree, nvls, collnet, auto.
std::span<const std::string_view> known_allreduce_algorithms() noexcept;
/// "auto" for AllReduceAlgorithm::automatic, ...
std::string_view allreduce_name(AllReduceAlgorithm algorithm) noexcept;
/// Parses "ring" | "hierarchical" | "tree" | "nvls" | "auto"; throws PlatformError("platform.allreduce",
/// ...).
AllReduceAlgorithm parse_allreduce_algorithm(std::string_view name);

/// How an all-reduce's chunks travel (PlatformSpec::bulk_step_latency_s).
enum class Protocol {
  low_latency,  ///< "LL": data and flag in each 8-byte line, twice the bytes, no handshake per step
  bulk,         ///< "bulk": the data alone, a handshake (bulk_step_latency_s) per pipeline step
};

/// "LL" or "bulk".
std::string_view protocol_name(Protocol protocol) noexcept;

/// An all-reduce as it runs: its algorithm and protocol.
struct AllReduceChoice {
  AllReduceAlgorithm algorithm = AllReduceAlgorithm::ring;
  Protocol protocol = Protocol::bulk;

  /// "ring/LL", "tree/bulk", ...
  std::string name() const;
  friend bool operator==(const AllReduceChoice&, const AllReduceChoice&) = default;
};

/// How an iteration's communication is simulated.
struct TimingOptions {
  Fidelity fidelity = Fidelity::fast;  ///< fast (reused patterns) or full (every message)
  /// The all-reduce of centralized steps and global averages; automatic picks one per size.
  AllReduceAlgorithm allreduce = AllReduceAlgorithm::automatic;
  /// Gradient bucket for all-reduce overlapped with the backward pass; 0: the whole gradient after it.
  std::int64_t bucket_bytes = 0;
  /// SimGrid options applied to every simulation, e.g. "--cfg=network/model:CM02" or "--log=...".
  std::vector<std::string> simgrid_args;
  /// auto simulates every candidate instead of skipping those whose lower bound exceeds the best time found
  /// (CommSimulator::allreduce_choice): the same choice, kept as the reference the skipping is checked
  /// against.
  bool exhaustive_auto = false;
};

/// One message of a gossip round and how long it took with the round's messages all leaving at once.
struct TimedMessage {
  int from = 0;
  int to = 0;
  double seconds = 0.0;
};

/// The simulated time of one communication (a gossip round or one all-reduce).
struct CommTiming {
  double seconds = 0.0;             ///< start to the last GPU's completion
  double bytes_sent_per_gpu = 0.0;  ///< mean over GPUs
  /// Per GPU: start to the completion of everything it receives (a fast all-reduce: the collective's time).
  std::vector<double> gpu_seconds;
  std::int64_t messages = 0;  ///< messages the real communication sends
  /// Fast gossip: every message with its duration (what staggered_finish delays by its sender's start).
  std::vector<TimedMessage> message_times;
  /// Fast all-reduce: every GPU waits for the last one to be ready (gpu_seconds count from then).
  bool collective = false;
  /// Fast all-reduce in buckets under the backward pass: bucket count and one bucket's all-reduce time
  /// (0: not bucketed).
  int buckets = 0;
  double bucket_seconds = 0.0;
};

/// When each GPU's communication ends, in the fast path's model, if GPU i becomes ready at `ready[i]` (its
/// compute done; for a bucketed all-reduce, its backward pass started, and `backward[i]` long) instead of all
/// at 0: a gossip message leaves when its sender is ready and takes its duration, a GPU is done when it is
/// ready and has everything it receives; an all-reduce starts when the last GPU is ready; bucket b leaves
/// when every GPU has produced it and bucket b-1 is done. Full fidelity simulates the same with one actor per
/// GPU (CommSimulator's `ready` arguments).
void staggered_finish(const CommTiming& comm, std::span<const double> ready, std::span<const double> backward,
                      std::span<double> finish);

/// Per GPU of `graph`, the share of its in-neighbours pinned to its own processor (the platform's
/// cores_per_node, round-robin within a node; 0 for every GPU where cores_per_node is 0 or a GPU has no
/// in-neighbour): what reduces its wait for the GPUs sharing that processor by same_core_relief steps.
std::vector<double> same_core_share(const topology::Graph& graph, const PlatformSpec& platform);

/// The steps of its own a gossiping GPU waits before it communicates, `share` of its in-neighbours being on
/// its processor: 1 + shared_core_turns less the steps spared (same_core_relief x share, or beyond half a
/// share the line to same_core_relief_whole where that is set), never less than its own step (1).
/// time_schedule charges it; dbench calibrate subtracts it from what the loops communicated.
double gossip_wait_steps(const PlatformSpec& platform, double share);

/// Checks the platform for `gpus` GPUs and the options against it (an nvls all-reduce needs a node switch
/// that reduces and one node, a collnet one a fabric that reduces and several nodes); throws PlatformError
/// naming the key. CommSimulator's constructor runs it; a config loader runs it without building a simulator.
void validate_timing(const PlatformSpec& platform, int gpus, const TimingOptions& options);

/// Times communications on one platform and GPU count, caching each distinct pattern in fast fidelity.
///
/// Each simulation builds its own SimGrid engine and platform and tears them down, so several simulators may
/// live in one process; SimGrid allows one engine at a time, so they must not run concurrently.
class CommSimulator {
 public:
  /// Validates the platform for `gpus` GPUs and the options (validate_timing; throws PlatformError).
  CommSimulator(PlatformSpec platform, int gpus, TimingOptions options);

  /// One all-reduce of `bytes` per GPU with allreduce_choice(bytes), or the platform's measured
  /// all-reduce when it has one (PlatformSpec::allreduce_bandwidth_Bps > 0, either fidelity). `ready`
  /// (empty: all 0): when each GPU may start, as in staggered_finish; gpu_seconds then count from 0.
  CommTiming allreduce(std::int64_t bytes, std::span<const double> ready = {});
  /// The algorithm and protocol an all-reduce of `bytes` per GPU runs: the algorithm options().allreduce
  /// names, or for automatic each one the platform has (hierarchical with several nodes of several GPUs,
  /// nvls on one node whose switch reduces); with the protocol, the pair whose fast-path time is the
  /// shortest (ties: the earlier algorithm, bulk), as NCCL's tuner picks the cheapest per size and scale.
  /// The low-latency protocol is tried up to 4 MiB per GPU. Full fidelity makes the same choice, then runs
  /// it. Candidates are simulated in the order of their allreduce_lower_bound(), and one whose bound exceeds
  /// the first one's time is not simulated: it cannot be the fastest (unless options().exhaustive_auto, or a
  /// --cfg SimGrid option could change the network model the bound assumes).
  AllReduceChoice allreduce_choice(std::int64_t bytes);
  /// A lower bound of the fast path's time for an all-reduce of `bytes` per GPU run as `choice`, without
  /// SimGrid: the same plan replayed with every message at what it takes alone on an idle machine, at most
  /// (its route's GPU ports and NICs, half its bytes at their rate; see collective_timing.cpp).
  double allreduce_lower_bound(std::int64_t bytes, AllReduceChoice choice) const;
  /// One all-reduce of `bytes` split into buckets of options().bucket_bytes, bucket b leaving as soon as the
  /// backward pass has produced it (`backward_s` spread evenly over the buckets) and after bucket b-1:
  /// returns the time from the start of the backward pass to the end of the last bucket. `ready` and
  /// `backward` (empty: all 0 and backward_s): each GPU's backward pass, as in staggered_finish.
  CommTiming overlapped_allreduce(std::int64_t bytes, double backward_s, std::span<const double> ready = {},
                                  std::span<const double> backward = {});
  /// One gossip round: every GPU sends `bytes` to each out-neighbour in `graph` (j is an out-neighbour of i
  /// when row j holds i), all at once, or each when it is `ready` (empty: all 0), as in staggered_finish.
  CommTiming gossip(const topology::Graph& graph, std::int64_t bytes, std::span<const double> ready = {});

  /// Fast fidelity: simulates the gossip rounds of `graphs` not yet simulated in one SimGrid run (one
  /// platform build for all, the rounds one after the other), so that gossip() finds them ready; full
  /// fidelity: nothing.
  void prepare_gossip(std::span<const topology::Graph* const> graphs, std::int64_t bytes);

  /// The platform simulated.
  const PlatformSpec& platform() const noexcept { return platform_; }
  /// Number of GPUs.
  int gpus() const noexcept { return gpus_; }
  /// The options given.
  const TimingOptions& options() const noexcept { return options_; }
  /// Patterns and full-fidelity communications simulated so far (patterns prepared together share one
  /// SimGrid run).
  std::int64_t simulations() const noexcept { return simulations_; }
  /// Messages simulated so far, summed over runs.
  std::int64_t simulated_messages() const noexcept { return simulated_messages_; }
  /// Every all-reduce size (bytes per GPU) timed so far and how it ran (a measured all-reduce is not
  /// listed).
  const std::map<std::int64_t, AllReduceChoice>& allreduce_algorithms() const noexcept { return algorithms_; }

 private:
  struct Message {
    int from;
    int to;
    double bytes;
  };
  struct PatternResult {
    double seconds = 0.0;
    std::vector<double> message_seconds;  ///< each message's own duration, in input order
    std::vector<double> gpu_seconds;      ///< per GPU: completion of its last incoming message
  };

  PatternResult run_pattern(const std::vector<Message>& messages);
  /// Several patterns in one SimGrid run, one after the other.
  std::vector<PatternResult> run_patterns(std::span<const std::vector<Message>* const> patterns);
  /// run_patterns, each result cached under its key.
  void simulate_patterns(std::vector<std::string> keys, const std::vector<std::vector<Message>>& lists);
  std::string gossip_key(const topology::Graph& graph, std::int64_t bytes) const;
  std::vector<Message> gossip_messages(const topology::Graph& graph, std::int64_t bytes) const;
  const PatternResult& cached_pattern(const std::string& key, const std::vector<Message>& messages);
  CommTiming fast_allreduce(std::int64_t bytes, AllReduceChoice choice);
  /// The plans fast_allreduce() and allreduce_lower_bound() replay, for `s` bytes on the wire per GPU.
  TreePlan tree_plan_for(double s, double overhead_s) const;
  HierarchicalPlan hierarchical_plan_for(double s, double overhead_s, bool in_network) const;
  /// One ring step: every GPU sends `bytes` to the next GPU of each of `channels` rings.
  void ring_step(int channels, double bytes, std::vector<Message>& out) const;
  /// The messages of a plan's step, appended to `out`.
  void tree_step(const TreePlan& plan, int step, std::vector<Message>& out) const;
  void hierarchical_step(const HierarchicalPlan& plan, int step, std::vector<Message>& out) const;
  /// The patterns of every one of `choices` (fast path, all-reduces of `bytes`) in one SimGrid run: at
  /// 16,384 GPUs building the platform costs more than most patterns.
  void simulate_together(std::int64_t bytes, std::span<const AllReduceChoice> choices);
  CommTiming measured_allreduce(std::int64_t bytes) const;
  /// `timing` with every GPU's finish from staggered_finish when `ready` is given.
  CommTiming staggered(CommTiming timing, std::span<const double> ready,
                       std::span<const double> backward) const;
  CommTiming full_allreduce(std::int64_t bytes, int buckets, AllReduceChoice choice,
                            std::span<const double> ready, std::span<const double> backward);

  PlatformSpec platform_;
  int gpus_;
  TimingOptions options_;
  std::map<std::string, PatternResult> patterns_;
  std::map<std::string, CommTiming> collectives_;  ///< fast all-reduces, by algorithm and size
  std::map<std::int64_t, AllReduceChoice> algorithms_;
  /// While set, the patterns a computation needs are listed here instead of simulated, so that several
  /// computations' patterns share one SimGrid run (allreduce_choice()); results are then placeholders.
  struct PatternBatch {
    std::vector<std::string> keys;
    std::vector<std::vector<Message>> lists;
  };
  PatternBatch* collecting_ = nullptr;
  PatternResult placeholder_;
  std::int64_t simulations_ = 0;
  std::int64_t simulated_messages_ = 0;
};

/// What to time: a model's compute and its parameters' communication on a platform.
struct TimingSpec {
  PlatformSpec platform;         ///< the machine
  int gpus = 1;                  ///< GPUs used, one replica each
  models::ModelProfile profile;  ///< FLOPs per sample and the parameters every exchange carries
  int batch_per_gpu = 32;        ///< samples per GPU per iteration
  TimingOptions options;         ///< fidelity, all-reduce, buckets, SimGrid options
  std::uint64_t seed = 1;        ///< compute jitter, tail and the choice of stragglers (ComputeModel)
};

/// One row of trace.csv.
struct IterationTiming {
  std::int64_t iteration = 0;  ///< 0-based
  std::string graph;           ///< as schedule.csv names it
  double compute_s = 0.0;      ///< forward + backward + fixed overhead (mean over GPUs)
  /// Communication not hidden behind compute (all of it without buckets), waiting for peers included
  /// (mean over GPUs).
  double comm_s = 0.0;
  double total_s = 0.0;     ///< the iteration, overlap taken into account: the mean GPU clock's advance
  double bytes_sent = 0.0;  ///< per GPU (mean)
  std::vector<double> gpu_comm_s;  ///< per GPU: communication not hidden behind compute (only when asked for)
  std::vector<double> gpu_total_s;     ///< per GPU: compute + its communication (only when asked for)
  std::vector<double> gpu_bytes_sent;  ///< per GPU: bytes it sends (only when asked for)
};

/// The timing of a whole schedule.
struct TimingResult {
  std::vector<IterationTiming> iterations;        ///< one row per step of the schedule
  double seconds_per_iteration = 0.0;             ///< mean simulated seconds
  double samples_per_second = 0.0;                ///< gpus * batch / seconds_per_iteration
  double single_gpu_seconds_per_iteration = 0.0;  ///< compute alone: one GPU needs no communication
  double scaling_efficiency = 0.0;  ///< samples_per_second / (gpus * one GPU's samples per second)
  double bytes_per_gpu_per_iteration = 0.0;
  std::int64_t simulations = 0;  ///< SimGrid runs it took
  std::int64_t simulated_messages = 0;
  /// Per all-reduce size timed (bytes per GPU: the gradient, a bucket, the parameters): how it ran.
  std::map<std::int64_t, AllReduceChoice> allreduce_algorithms;
  /// The GPUs the platform's stragglers slow (ComputeModel::straggler_gpus()).
  std::vector<int> straggler_gpus;
  /// Per GPU: its clock at the end of the schedule (only when asked for per-GPU rows).
  std::vector<double> gpu_clock_s;
  double wall_seconds = 0.0;  ///< how long timing took
};

/// Times every step of a schedule (an all-reduce of the gradients, or of the parameters after the step for a
/// global average or gossip on the complete graph; gossip; nothing for local steps); `per_gpu` keeps each
/// GPU's communication time in the rows.
///
/// Every GPU keeps its own clock: its iteration ends when its own compute (ComputeModel: slowdown, jitter,
/// stragglers) and the communication it needs are done — an all-reduce waits for the slowest GPU, a gossip
/// round only for the GPU's in-neighbours (staggered_finish; full fidelity simulates the same every
/// iteration). A row's times are means over GPUs, so the rows add up to the mean GPU clock.
TimingResult time_schedule(const TimingSpec& spec, std::span<const topology::ScheduleStep> schedule,
                           bool per_gpu = false);

}  // namespace dbench::sim
