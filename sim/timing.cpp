// Communication timing with SimGrid. Two ways to get the same number:
// * fast: a pattern (every message of one gossip round, or one step of an all-reduce) is simulated once, all
//   its transfers starting together, and reused; an all-reduce's time is its steps'
//   (a ring's steps are all alike; a pipelined tree or hierarchical all-reduce has a few distinct ones while
//   its pipeline fills and drains, see sim/allreduce_plan.hpp).
// * full: one actor per GPU runs the algorithm with mailboxes, step after step, every message of every
//   iteration: the reference the fast path is tested against.
#include "sim/timing.hpp"

#include <fmt/core.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <map>
#include <memory>
#include <numeric>
#include <simgrid/s4u.hpp>
#include <unordered_map>
#include <utility>

#include "sim/allreduce_plan.hpp"
#include "sim/simulated_machine.hpp"
#include "topology/generators.hpp"

namespace dbench::sim {
namespace {

namespace sg4 = simgrid::s4u;

constexpr std::array<std::string_view, 6> kAllReduce = {"ring", "hierarchical", "tree",
                                                        "nvls", "collnet",      "auto"};
constexpr std::array<std::string_view, 2> kProtocols = {"LL", "bulk"};
// The low-latency protocol is tried for all-reduces up to this many bytes per GPU; beyond, its doubled
// bytes always cost more than the bulk protocol's handshakes.
constexpr double kLowLatencyMaxBytes = 4.0 * 1024 * 1024;

// The GPU that receives what `gpu` sends in a ring step of channel `c` of `channels`, on nodes of `g` GPUs
// (GPUs are numbered node by node). Each channel's ring visits the nodes in turn and each node's GPUs
// consecutively, starting at local GPU c g / channels: it enters every node at that GPU and leaves it from
// the one before, so one edge per channel crosses a node's NICs in each direction, on NIC link c (rails). One
// channel: gpu + 1.
int ring_next(int gpu, int gpus, int g, int c, int channels) {
  g = std::min(g, gpus);
  const int shift = c * g / channels;
  const int node = gpu / g;
  const int local = gpu % g;
  if ((local - shift + g) % g < g - 1) {
    return node * g + (local + 1) % g;
  }
  return (node + 1) % (gpus / g) * g + shift;
}

// FNV-1a over a graph's edges: the identity of a gossip pattern, whatever its name.
std::uint64_t edges_hash(const topology::Graph& graph) {
  std::uint64_t h = 1469598103934665603ULL;
  const auto mix = [&h](std::uint64_t v) {
    h ^= v;
    h *= 1099511628211ULL;
  };
  mix(static_cast<std::uint64_t>(graph.nodes()));
  for (int i = 0; i < graph.nodes(); ++i) {
    mix(0xffffffffULL);
    for (const auto& e : graph.row(i)) {
      mix(static_cast<std::uint64_t>(e.from));
    }
  }
  return h;
}

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

CommSimulator::CommSimulator(PlatformSpec platform, int gpus, TimingOptions options)
    : platform_(std::move(platform)), gpus_(gpus), options_(std::move(options)) {
  validate(platform_, gpus_);
  if (options_.bucket_bytes < 0) {
    throw PlatformError("platform.bucket_bytes", fmt::format("must be >= 0, got {}", options_.bucket_bytes));
  }
  if (options_.allreduce == AllReduceAlgorithm::nvls && platform_.allreduce_bandwidth_Bps == 0.0 &&
      (platform_.nvls_efficiency == 0.0 || gpus_ > platform_.gpus_per_node)) {
    throw PlatformError(
        "platform.allreduce",
        fmt::format("nvls needs a node switch that reduces (platform.nvls_efficiency > 0, got {}) "
                    "and every GPU on one node ({} GPUs, {} per node)",
                    platform_.nvls_efficiency, gpus_, platform_.gpus_per_node));
  }
  if (options_.allreduce == AllReduceAlgorithm::collnet && platform_.allreduce_bandwidth_Bps == 0.0 &&
      (platform_.collnet_efficiency == 0.0 || gpus_ <= platform_.gpus_per_node)) {
    throw PlatformError(
        "platform.allreduce",
        fmt::format("collnet needs a fabric that reduces (platform.collnet_efficiency > 0, got {}) "
                    "and GPUs on several nodes ({} GPUs, {} per node)",
                    platform_.collnet_efficiency, gpus_, platform_.gpus_per_node));
  }
}

std::vector<CommSimulator::PatternResult> CommSimulator::run_patterns(
    std::span<const std::vector<Message>* const> patterns) {
  std::vector<PatternResult> results(patterns.size());
  double shortest = 0.0;
  for (std::size_t k = 0; k < patterns.size(); ++k) {
    results[k].message_seconds.assign(patterns[k]->size(), 0.0);
    results[k].gpu_seconds.assign(static_cast<std::size_t>(gpus_), 0.0);
    for (const auto& m : *patterns[k]) {
      shortest = shortest == 0.0 ? m.bytes : std::min(shortest, m.bytes);
    }
  }
  if (shortest == 0.0) {
    return results;
  }
  // One platform for all patterns (building it is most of the cost at thousands of GPUs): each pattern
  // starts once the previous one is done, so they do not share links.
  //
  // Every GPU is an actor that posts its sends and receives of a pattern, waits for them, and meets the
  // others at a barrier before the next pattern. Transfers between actors are kept per actor; transfers
  // between hosts (Comm::sendto) are kept in one list that each finished transfer is looked up in, which
  // made a pattern of 16,384 transfers quadratic.
  SimulatedMachine machine(platform_, gpus_, shortest, true, options_.simgrid_args);
  // Per pattern, the messages each GPU sends and receives (indices into the pattern's list).
  struct Ends {
    std::vector<std::vector<std::uint32_t>> out;
    std::vector<std::vector<std::uint32_t>> in;
  };
  std::vector<Ends> ends(patterns.size());
  std::size_t longest = 0;
  for (std::size_t k = 0; k < patterns.size(); ++k) {
    ends[k].out.resize(static_cast<std::size_t>(gpus_));
    ends[k].in.resize(static_cast<std::size_t>(gpus_));
    const auto& messages = *patterns[k];
    longest = std::max(longest, messages.size());
    for (std::size_t i = 0; i < messages.size(); ++i) {
      ends[k].out[static_cast<std::size_t>(messages[i].from)].push_back(static_cast<std::uint32_t>(i));
      ends[k].in[static_cast<std::size_t>(messages[i].to)].push_back(static_cast<std::uint32_t>(i));
    }
  }
  // Message i of a pattern goes through mailbox i: one sender and one receiver each, reused by the next
  // pattern once this one is done.
  std::vector<sg4::Mailbox*> mailboxes(longest);
  for (std::size_t i = 0; i < longest; ++i) {
    mailboxes[i] = sg4::Mailbox::by_name(fmt::format("m{}", i));
  }
  std::vector<std::vector<double>> finished(patterns.size());
  for (std::size_t k = 0; k < patterns.size(); ++k) {
    finished[k].assign(patterns[k]->size(), 0.0);
  }
  std::vector<double> starts(patterns.size(), 0.0);
  const sg4::BarrierPtr barrier = sg4::Barrier::create(static_cast<unsigned>(gpus_));
  int token = 0;  // what mailboxes carry: only the simulated size matters
  for (int me = 0; me < gpus_; ++me) {
    sg4::Actor::create("gpu", machine.host(me), [&, me] {
      const auto gpu = static_cast<std::size_t>(me);
      std::vector<sg4::CommPtr> sends;
      std::vector<sg4::CommPtr> receives;
      std::vector<int*> received;
      for (std::size_t k = 0; k < patterns.size(); ++k) {
        if (me == 0) {
          starts[k] = sg4::Engine::get_clock();
        }
        const auto& messages = *patterns[k];
        const auto& in = ends[k].in[gpu];
        const auto& out = ends[k].out[gpu];
        receives.clear();
        sends.clear();
        received.assign(in.size(), nullptr);
        for (std::size_t j = 0; j < in.size(); ++j) {
          receives.push_back(mailboxes[in[j]]->get_async<int>(&received[j]));
        }
        for (const std::uint32_t i : out) {
          sends.push_back(
              mailboxes[i]->put_async(&token, static_cast<std::uint64_t>(std::llround(messages[i].bytes))));
        }
        for (std::size_t j = 0; j < receives.size(); ++j) {
          receives[j]->wait();
          finished[k][in[j]] = receives[j]->get_finish_time();
        }
        for (const auto& send : sends) {
          send->wait();
        }
        barrier->wait();
      }
    });
  }
  machine.run();
  for (std::size_t k = 0; k < patterns.size(); ++k) {
    const auto& messages = *patterns[k];
    PatternResult& result = results[k];
    for (std::size_t i = 0; i < messages.size(); ++i) {
      const double done =
          finished[k][i] - starts[k] + machine.route_latency(messages[i].from, messages[i].to);
      result.message_seconds[i] = done;
      auto& gpu = result.gpu_seconds[static_cast<std::size_t>(messages[i].to)];
      gpu = std::max(gpu, done);
      result.seconds = std::max(result.seconds, done);
    }
    simulated_messages_ += static_cast<std::int64_t>(messages.size());
  }
  simulations_ += static_cast<std::int64_t>(patterns.size());
  return results;
}

CommSimulator::PatternResult CommSimulator::run_pattern(const std::vector<Message>& messages) {
  const std::vector<Message>* one = &messages;
  return std::move(run_patterns(std::span(&one, 1)).front());
}

void CommSimulator::prepare_gossip(std::span<const topology::Graph* const> graphs, std::int64_t bytes) {
  if (options_.fidelity != Fidelity::fast) {
    return;
  }
  std::vector<std::string> keys;
  std::vector<std::vector<Message>> lists;
  for (const topology::Graph* graph : graphs) {
    std::string key = gossip_key(*graph, bytes);
    if (patterns_.contains(key) || std::find(keys.begin(), keys.end(), key) != keys.end()) {
      continue;
    }
    keys.push_back(std::move(key));
    lists.push_back(gossip_messages(*graph, bytes));
  }
  simulate_patterns(std::move(keys), lists);
}

void CommSimulator::simulate_patterns(std::vector<std::string> keys,
                                      const std::vector<std::vector<Message>>& lists) {
  if (collecting_ != nullptr) {
    for (std::size_t k = 0; k < keys.size(); ++k) {
      auto& batch = *collecting_;
      if (std::find(batch.keys.begin(), batch.keys.end(), keys[k]) == batch.keys.end()) {
        batch.keys.push_back(std::move(keys[k]));
        batch.lists.push_back(lists[k]);
      }
    }
    return;
  }
  std::vector<const std::vector<Message>*> pointers;
  for (const auto& list : lists) {
    pointers.push_back(&list);
  }
  std::vector<PatternResult> results = run_patterns(pointers);
  for (std::size_t k = 0; k < keys.size(); ++k) {
    patterns_.emplace(std::move(keys[k]), std::move(results[k]));
  }
}

std::string CommSimulator::gossip_key(const topology::Graph& graph, std::int64_t bytes) const {
  return fmt::format("gossip/{:016x}/{}", edges_hash(graph), static_cast<double>(bytes));
}

std::vector<CommSimulator::Message> CommSimulator::gossip_messages(const topology::Graph& graph,
                                                                   std::int64_t bytes) const {
  const double s = static_cast<double>(bytes);
  std::vector<Message> messages;
  messages.reserve(graph.entries().size());
  for (int j = 0; j < graph.nodes(); ++j) {
    for (const auto& e : graph.row(j)) {
      if (e.from != j) {
        messages.push_back({e.from, j, s});
      }
    }
  }
  return messages;
}

const CommSimulator::PatternResult& CommSimulator::cached_pattern(const std::string& key,
                                                                  const std::vector<Message>& messages) {
  if (const auto it = patterns_.find(key); it != patterns_.end()) {
    return it->second;
  }
  if (collecting_ != nullptr) {
    simulate_patterns({key}, {messages});
    return placeholder_;
  }
  return patterns_.emplace(key, run_pattern(messages)).first->second;
}

namespace {

// Bytes one GPU sends in an all-reduce of `s` bytes (the mean over GPUs; exact for every GPU but the tree's).
double allreduce_bytes_per_gpu(AllReduceAlgorithm algorithm, int n, int g, double s) {
  if (algorithm == AllReduceAlgorithm::hierarchical) {
    const int nodes = n / g;
    return 2.0 * (g - 1) * s / g + 2.0 * (nodes - 1) * s / (static_cast<double>(g) * nodes);
  }
  if (algorithm == AllReduceAlgorithm::nvls) {
    return s * (n + 1) / n;  // all of S into the switch, the GPU's reduced S / n back out to every GPU
  }
  if (algorithm == AllReduceAlgorithm::collnet) {
    return (2.0 * (g - 1) + 1.0) * s / g;  // reduce-scatter and all-gather in the node, its shard up once
  }
  // Ring: 2 (n - 1) chunks of S / n. Tree: each tree's n - 1 edges carry S / 2 up and S / 2 down.
  return 2.0 * (n - 1) * s / n;
}

// Messages a pipelined hierarchical all-reduce sends: n per step for each ring that moves data in it.
std::int64_t hierarchical_messages(const HierarchicalPlan& plan) {
  std::int64_t messages = 0;
  for (int step = 0; step < plan.steps(); ++step) {
    messages += (plan.gpus_per_node > 1 && plan.intra_chunks(step) > 0 ? plan.gpus : 0) +
                (plan.nodes > 1 && plan.inter_chunks(step) > 0 ? plan.gpus : 0);
  }
  return messages;
}

// Bytes on the wire per byte of data: the low-latency protocol's lines carry as much flag as data.
double wire_factor(Protocol protocol) {
  return protocol == Protocol::low_latency ? 2.0 : 1.0;
}

// The extra cost of every pipeline step under `protocol`.
double step_overhead_s(const PlatformSpec& p, Protocol protocol) {
  return protocol == Protocol::bulk ? p.bulk_step_latency_s : 0.0;
}

// In-switch reduction as point-to-point traffic: every GPU port carries S (n + 1) / n each way at
// nvls_efficiency of its line rate, which a shift by one (each GPU sends to the next) puts on every port once
// in each direction, scaled from the port's achieved rate to the switch's.
double nvls_message_bytes(const PlatformSpec& p, int n, double s) {
  return s * (n + 1) / n * p.gpu_link_efficiency / p.nvls_efficiency;
}

// A tree is striped over at most this many channels (2 trees per channel): each tree step is one simulated
// pattern of every edge of every tree, and SimGrid's cost grows faster than linearly in a pattern's transfers
// (a tree over 8 channels on 1008 GPUs: 13,000 transfers a step, a minute per all-reduce size). With 2
// channels the tree's inter-node edges use 4 NIC links of a node (of 8 on a DGX H100), so its bandwidth
// across nodes is underestimated where NCCL uses all of them.
constexpr int kTreeChannels = 2;

int tree_channels(const PlatformSpec& p, int gpus) {
  return std::min(kTreeChannels, allreduce_channels(p, gpus));
}

// NVLS has two steps, the reduction into the switch and the multicast out of it.
constexpr int kNvlsSteps = 2;

}  // namespace

CommTiming CommSimulator::fast_allreduce(std::int64_t bytes, AllReduceChoice choice) {
  const std::string key = fmt::format("{}/{}", choice.name(), bytes);
  if (const auto it = collectives_.find(key); it != collectives_.end()) {
    return it->second;
  }
  const AllReduceAlgorithm algorithm = choice.algorithm;
  const int n = gpus_;
  const int g = std::min(platform_.gpus_per_node, n);
  const double data = static_cast<double>(bytes);
  // What the protocol puts on the wire, and what each step costs besides its messages.
  const double s = data * wire_factor(choice.protocol);
  const double overhead = step_overhead_s(platform_, choice.protocol);
  // A pipelined all-reduce is replayed step by step with each message's duration from its step's pattern
  // (simulated the first time the step's key is seen; `build` lists the step's messages): a message starts
  // once both its GPUs are done with the previous step, as full fidelity's actors do, so a GPU whose step is
  // light does not wait for the busiest one elsewhere. A ring's steps are all alike: one suffices.
  std::vector<double> ready(static_cast<std::size_t>(n), 0.0);
  std::vector<double> done(static_cast<std::size_t>(n), 0.0);
  std::vector<Message> messages;
  // `key_of(step)` names a step's pattern, `build(step, messages)` lists its messages. The distinct steps not
  // simulated yet go first, all in one SimGrid run (one platform build for all of them); then the replay.
  const auto replay = [&](int steps, auto key_of, auto build) {
    std::vector<std::string> keys;
    std::vector<std::vector<Message>> lists;
    for (int step = 0; step < steps; ++step) {
      std::string step_key = key_of(step);
      if (!patterns_.contains(step_key) && std::find(keys.begin(), keys.end(), step_key) == keys.end()) {
        keys.push_back(std::move(step_key));
        build(step, lists.emplace_back());
      }
    }
    simulate_patterns(std::move(keys), lists);
    if (collecting_ != nullptr) {
      return;
    }
    for (int step = 0; step < steps; ++step) {
      messages.clear();
      build(step, messages);
      const PatternResult& pattern = patterns_.at(key_of(step));
      done = ready;
      for (std::size_t i = 0; i < messages.size(); ++i) {
        const auto from = static_cast<std::size_t>(messages[i].from);
        const auto to = static_cast<std::size_t>(messages[i].to);
        const double end = std::max(ready[from], ready[to]) + pattern.message_seconds[i] + overhead;
        done[from] = std::max(done[from], end);
        done[to] = std::max(done[to], end);
      }
      ready.swap(done);
    }
  };
  CommTiming timing;
  timing.bytes_sent_per_gpu = allreduce_bytes_per_gpu(algorithm, n, g, data);
  switch (algorithm) {
    case AllReduceAlgorithm::ring: {
      // Every step of a ring moves the same chunk between the same pairs: one step is simulated. Across
      // nodes the data is striped over one ring per NIC link.
      const int channels = allreduce_channels(platform_, n);
      const double chunk = s / (static_cast<double>(n) * channels);
      for (int c = 0; c < channels; ++c) {
        for (int i = 0; i < n; ++i) {
          messages.push_back({i, ring_next(i, n, g, c, channels), chunk});
        }
      }
      timing.seconds =
          2.0 * (n - 1) * (cached_pattern(fmt::format("ring-step/{}", chunk), messages).seconds + overhead);
      timing.messages = 2LL * (n - 1) * n * channels;
      break;
    }
    case AllReduceAlgorithm::nvls: {
      const double each = nvls_message_bytes(platform_, n, data);
      for (int i = 0; i < n; ++i) {
        messages.push_back({i, ring_next(i, n, g, 0, 1), each});
      }
      timing.seconds = cached_pattern(fmt::format("nvls/{}", each), messages).seconds + kNvlsSteps * overhead;
      timing.messages = 2LL * n;
      break;
    }
    case AllReduceAlgorithm::hierarchical:
    case AllReduceAlgorithm::collnet: {
      // Steps with the same bytes in each ring move the same messages (CollNet's inter-node step is a
      // message to the next node, as an inter-node ring step is).
      const bool in_network = algorithm == AllReduceAlgorithm::collnet;
      const HierarchicalPlan plan = hierarchical_plan(
          platform_, n, s, hierarchical_chunks(platform_, n, s, overhead, in_network), in_network);
      const auto intra = [&](int step) { return plan.gpus_per_node > 1 ? plan.intra_bytes(step) : 0.0; };
      const auto inter = [&](int step) { return plan.nodes > 1 ? plan.inter_bytes(step) : 0.0; };
      replay(
          plan.steps(),
          [&](int step) { return fmt::format("hierarchical-step/{}/{}", intra(step), inter(step)); },
          [&](int step, std::vector<Message>& m) {
            for (int i = 0; i < n; ++i) {
              if (intra(step) > 0.0) {
                m.push_back({i, plan.intra_next(i), intra(step)});
              }
              if (inter(step) > 0.0) {
                m.push_back({i, plan.inter_next(i), inter(step)});
              }
            }
          });
      timing.seconds = *std::max_element(ready.begin(), ready.end());
      timing.messages = hierarchical_messages(plan);
      break;
    }
    case AllReduceAlgorithm::tree: {
      // A step's messages are set by which heights send up and which depths receive from above.
      const TreePlan plan =
          tree_plan(n, s, tree_chunks(platform_, n, s, overhead), g, tree_channels(platform_, n));
      replay(
          plan.steps(),
          [&](int step) { return fmt::format("tree-step/{}/{}", plan.chunk_bytes, plan.step_key(step)); },
          [&](int step, std::vector<Message>& m) {
            for (int t = 0; t < static_cast<int>(plan.trees.size()); ++t) {
              const auto& parent = plan.trees[static_cast<std::size_t>(t)].parent;
              for (int v = 0; v < n; ++v) {
                if (plan.up_active(t, v, step)) {
                  m.push_back({v, parent[static_cast<std::size_t>(v)], plan.chunk_bytes});
                }
                if (plan.down_active(t, v, step)) {
                  m.push_back({parent[static_cast<std::size_t>(v)], v, plan.chunk_bytes});
                }
              }
            }
          });
      timing.seconds = *std::max_element(ready.begin(), ready.end());
      timing.messages = 2LL * plan.chunks * (n - 1) * static_cast<std::int64_t>(plan.trees.size());
      break;
    }
    case AllReduceAlgorithm::automatic:
      throw PlatformError("platform.allreduce", "auto must be resolved to an algorithm before it is timed");
  }
  timing.seconds += platform_.collective_latency_s;
  timing.gpu_seconds.assign(static_cast<std::size_t>(n), timing.seconds);
  timing.collective = true;
  if (collecting_ != nullptr) {
    return timing;
  }
  return collectives_.emplace(key, std::move(timing)).first->second;
}

CommTiming CommSimulator::full_allreduce(std::int64_t bytes, int buckets, AllReduceChoice choice,
                                         std::span<const double> ready, std::span<const double> backward) {
  const AllReduceAlgorithm algorithm = choice.algorithm;
  const int n = gpus_;
  // What one bucket puts on the wire under the protocol, and each step's extra cost.
  const double bucket = static_cast<double>(bytes) / buckets * wire_factor(choice.protocol);
  const double overhead = step_overhead_s(platform_, choice.protocol);
  const double launch = platform_.collective_latency_s;
  const int g = std::min(platform_.gpus_per_node, n);
  // The plans are the fast path's: the same chunks, the same steps.
  const int channels = allreduce_channels(platform_, n);
  const TreePlan tree =
      algorithm == AllReduceAlgorithm::tree
          ? tree_plan(n, bucket, tree_chunks(platform_, n, bucket, overhead), g, tree_channels(platform_, n))
          : TreePlan{};
  const bool in_network = algorithm == AllReduceAlgorithm::collnet;
  const HierarchicalPlan hier = hierarchical_plan(
      platform_, n, bucket, hierarchical_chunks(platform_, n, bucket, overhead, in_network), in_network);
  const double nvls_bytes = algorithm == AllReduceAlgorithm::nvls
                                ? nvls_message_bytes(platform_, n, static_cast<double>(bytes) / buckets)
                                : 0.0;
  double shortest = bucket / (static_cast<double>(n) * channels);
  if (algorithm == AllReduceAlgorithm::tree) {
    shortest = tree.chunk_bytes;
  } else if (algorithm == AllReduceAlgorithm::hierarchical || in_network) {
    shortest = bucket / (static_cast<double>(hier.chunks) * n);
  } else if (algorithm == AllReduceAlgorithm::nvls) {
    shortest = nvls_bytes;
  }
  SimulatedMachine machine(platform_, gpus_, shortest, false, options_.simgrid_args);
  // Each mailbox has one sender: ring and intra-node ring (the previous GPU), inter-node ring, and per tree
  // a GPU's way up (it sends, its parent receives) and its way down (its parent sends).
  const auto boxes = [n](const std::string& name) {
    std::vector<sg4::Mailbox*> out(static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i) {
      out[static_cast<std::size_t>(i)] = sg4::Mailbox::by_name(fmt::format("{}{}", name, i));
    }
    return out;
  };
  std::vector<std::vector<sg4::Mailbox*>> ring_box;
  for (int c = 0; c < channels; ++c) {
    ring_box.push_back(boxes(fmt::format("ring{}-", c)));
  }
  const std::vector<sg4::Mailbox*> inter_box = boxes("inter");
  std::vector<std::vector<sg4::Mailbox*>> up_box;
  std::vector<std::vector<sg4::Mailbox*>> down_box;
  for (std::size_t t = 0; t < tree.trees.size(); ++t) {
    up_box.push_back(boxes(fmt::format("up{}-", t)));
    down_box.push_back(boxes(fmt::format("down{}-", t)));
  }
  // Each ring's previous GPU, whose messages arrive in a GPU's own mailbox.
  const auto inverse = [n](auto next) {
    std::vector<int> prev(static_cast<std::size_t>(n), 0);
    for (int j = 0; j < n; ++j) {
      prev[static_cast<std::size_t>(next(j))] = j;
    }
    return prev;
  };
  std::vector<std::vector<int>> ring_prev;
  for (int c = 0; c < channels; ++c) {
    ring_prev.push_back(inverse([&](int j) { return ring_next(j, n, g, c, channels); }));
  }
  const std::vector<int> nvls_prev = inverse([&](int j) { return ring_next(j, n, g, 0, 1); });
  const std::vector<int> intra_prev = inverse([&](int j) { return hier.intra_next(j); });
  const std::vector<int> inter_prev = inverse([&](int j) { return hier.inter_next(j); });
  std::vector<double> finish(static_cast<std::size_t>(n), 0.0);
  int token = 0;  // what mailboxes carry: only the simulated size matters
  const auto size_of = [](double b) { return static_cast<std::uint64_t>(std::llround(b)); };

  for (int me = 0; me < n; ++me) {
    sg4::Actor::create(fmt::format("gpu{}", me), machine.host(me), [&, me] {
      const auto at = [](const std::vector<sg4::Mailbox*>& box, int i) {
        return box[static_cast<std::size_t>(i)];
      };
      int* received = nullptr;
      // One step: everything this GPU sends and receives in it, then the next step.
      std::vector<sg4::CommPtr> comms;
      // The longest route latency among the step's messages (each peer's looked up once).
      double step_latency = 0.0;
      std::map<int, double> latency_to;
      const auto peer = [&](int other) {
        auto it = latency_to.find(other);
        if (it == latency_to.end()) {
          it = latency_to.emplace(other, machine.route_latency(me, other)).first;
        }
        step_latency = std::max(step_latency, it->second);
      };
      const auto send = [&](sg4::Mailbox* box, int to, double size) {
        comms.push_back(box->put_async(&token, size_of(size)));
        peer(to);
      };
      const auto receive = [&](sg4::Mailbox* box, int from) {
        comms.push_back(box->get_async<int>(&received));
        peer(from);
      };
      // A ring step: to the next GPU's mailbox, from the previous GPU into this one's.
      const auto exchange = [&](const std::vector<sg4::Mailbox*>& box, int to, int from, double size) {
        send(at(box, to), to, size);
        receive(at(box, me), from);
      };
      // A step ends when its messages are through, their routes' latency on top (the fast path adds each
      // message's own), and, under the bulk protocol, its handshake is done.
      const auto finish_step = [&] {
        if (!comms.empty()) {
          sg4::Comm::wait_all(comms);
          comms.clear();
          sg4::this_actor::sleep_for(step_latency + overhead);
          step_latency = 0.0;
        }
      };
      const double start = sg4::Engine::get_clock();
      const auto i = static_cast<std::size_t>(me);
      const double own_ready = ready.empty() ? 0.0 : ready[i];
      const double own_backward = backward.empty() ? 0.0 : backward[i];
      for (int b = 0; b < buckets; ++b) {
        // Bucket b is ready once this GPU's backward pass has produced its share of the gradient.
        sg4::this_actor::sleep_until(start + own_ready + own_backward * (b + 1) / buckets);
        // Every GPU starts the collective (the fast path adds the same to its time).
        sg4::this_actor::sleep_for(launch);
        switch (algorithm) {
          case AllReduceAlgorithm::ring:
            for (int step = 0; step < 2 * (n - 1); ++step) {
              for (int c = 0; c < channels; ++c) {
                const auto k = static_cast<std::size_t>(c);
                exchange(ring_box[k], ring_next(me, n, g, c, channels), ring_prev[k][i],
                         bucket / (n * channels));
              }
              finish_step();
            }
            break;
          case AllReduceAlgorithm::nvls:
            exchange(ring_box[0], ring_next(me, n, g, 0, 1), nvls_prev[i], nvls_bytes);
            finish_step();
            sg4::this_actor::sleep_for((kNvlsSteps - 1) * overhead);
            break;
          case AllReduceAlgorithm::hierarchical:
          case AllReduceAlgorithm::collnet:
            for (int step = 0; step < hier.steps(); ++step) {
              if (hier.gpus_per_node > 1 && hier.intra_chunks(step) > 0) {
                exchange(ring_box[0], hier.intra_next(me), intra_prev[i], hier.intra_bytes(step));
              }
              if (hier.nodes > 1 && hier.inter_chunks(step) > 0) {
                exchange(inter_box, hier.inter_next(me), inter_prev[i], hier.inter_bytes(step));
              }
              finish_step();
            }
            break;
          case AllReduceAlgorithm::tree:
            for (int step = 0; step < tree.steps(); ++step) {
              for (int t = 0; t < static_cast<int>(tree.trees.size()); ++t) {
                const auto& up = up_box[static_cast<std::size_t>(t)];
                const auto& down = down_box[static_cast<std::size_t>(t)];
                const BinaryTree& shape = tree.trees[static_cast<std::size_t>(t)];
                const int parent = shape.parent[i];
                if (tree.up_active(t, me, step)) {
                  send(at(up, me), parent, tree.chunk_bytes);
                }
                if (tree.down_active(t, me, step)) {
                  receive(at(down, me), parent);
                }
                for (const int child : shape.children[i]) {
                  if (child >= 0 && tree.up_active(t, child, step)) {
                    receive(at(up, child), child);
                  }
                  if (child >= 0 && tree.down_active(t, child, step)) {
                    send(at(down, child), child, tree.chunk_bytes);
                  }
                }
              }
              finish_step();
            }
            break;
          case AllReduceAlgorithm::automatic:
            break;  // resolved by the caller
        }
      }
      // The GPU's iteration also waits for its own backward pass (done before its last bucket leaves).
      finish[i] = std::max(sg4::Engine::get_clock() - start, own_ready + own_backward);
    });
  }
  machine.run();
  ++simulations_;
  CommTiming timing;
  std::int64_t messages = 0;
  switch (algorithm) {
    case AllReduceAlgorithm::ring:
      messages = 2LL * (n - 1) * n;
      break;
    case AllReduceAlgorithm::hierarchical:
    case AllReduceAlgorithm::collnet:
      messages = hierarchical_messages(hier);
      break;
    case AllReduceAlgorithm::tree:
      messages = 2LL * tree.chunks * (n - 1) * static_cast<std::int64_t>(tree.trees.size());
      break;
    case AllReduceAlgorithm::nvls:
      messages = 2LL * n;
      break;
    case AllReduceAlgorithm::automatic:
      throw PlatformError("platform.allreduce", "auto must be resolved to an algorithm before it is timed");
  }
  timing.bytes_sent_per_gpu = allreduce_bytes_per_gpu(algorithm, n, g, static_cast<double>(bytes));
  simulated_messages_ += messages * buckets;
  timing.messages = messages * buckets;
  timing.seconds = *std::max_element(finish.begin(), finish.end());
  timing.gpu_seconds = std::move(finish);
  return timing;
}

CommTiming CommSimulator::measured_allreduce(std::int64_t bytes) const {
  // The platform's fitted collective: its time as measured; the bytes and messages a ring would send.
  const int n = gpus_;
  const double s = static_cast<double>(bytes);
  CommTiming timing;
  timing.seconds = platform_.allreduce_latency_s + s / platform_.allreduce_bandwidth_Bps;
  timing.bytes_sent_per_gpu = 2.0 * (n - 1) * s / n;
  timing.messages = 2LL * (n - 1) * n;
  timing.gpu_seconds.assign(static_cast<std::size_t>(n), timing.seconds);
  timing.collective = true;
  return timing;
}

AllReduceChoice CommSimulator::allreduce_choice(std::int64_t bytes) {
  if (const auto it = algorithms_.find(bytes); it != algorithms_.end()) {
    return it->second;
  }
  const int g = std::min(platform_.gpus_per_node, gpus_);
  std::vector<AllReduceAlgorithm> algorithms;
  if (options_.allreduce != AllReduceAlgorithm::automatic) {
    algorithms.push_back(options_.allreduce);
  } else {
    algorithms.push_back(AllReduceAlgorithm::ring);
    // A hierarchy needs several GPUs per node and several nodes; otherwise it is the ring.
    if (g > 1 && gpus_ / g > 1) {
      algorithms.push_back(AllReduceAlgorithm::hierarchical);
    }
    algorithms.push_back(AllReduceAlgorithm::tree);
    if (platform_.nvls_efficiency > 0.0 && gpus_ <= platform_.gpus_per_node) {
      algorithms.push_back(AllReduceAlgorithm::nvls);
    }
    if (platform_.collnet_efficiency > 0.0 && gpus_ > platform_.gpus_per_node) {
      algorithms.push_back(AllReduceAlgorithm::collnet);
    }
  }
  // Without a handshake to save, the low-latency protocol's doubled bytes never pay; in-switch and in-network
  // reduction run the bulk protocol only (as NCCL runs NVLS and CollNet).
  const bool try_low_latency =
      platform_.bulk_step_latency_s > 0.0 && static_cast<double>(bytes) <= kLowLatencyMaxBytes;
  std::vector<AllReduceChoice> candidates;
  for (const AllReduceAlgorithm algorithm : algorithms) {
    for (const Protocol protocol : {Protocol::bulk, Protocol::low_latency}) {
      const bool in_switch =
          algorithm == AllReduceAlgorithm::nvls || algorithm == AllReduceAlgorithm::collnet;
      if (protocol == Protocol::bulk || (try_low_latency && !in_switch)) {
        candidates.push_back({algorithm, protocol});
      }
    }
  }
  // Every candidate's patterns first, in one SimGrid run: at 16,384 GPUs building the platform costs more
  // than most patterns.
  if (candidates.size() > 1) {
    PatternBatch batch;
    collecting_ = &batch;
    try {
      for (const AllReduceChoice& candidate : candidates) {
        fast_allreduce(bytes, candidate);
      }
    } catch (...) {
      collecting_ = nullptr;
      throw;
    }
    collecting_ = nullptr;
    simulate_patterns(std::move(batch.keys), batch.lists);
  }
  AllReduceChoice best = candidates.front();
  double best_s = -1.0;
  for (const AllReduceChoice& candidate : candidates) {
    const double seconds = fast_allreduce(bytes, candidate).seconds;
    if (best_s < 0.0 || seconds < best_s) {
      best = candidate;
      best_s = seconds;
    }
  }
  algorithms_[bytes] = best;
  return best;
}

CommTiming CommSimulator::allreduce(std::int64_t bytes, std::span<const double> ready) {
  CommTiming timing;
  // A measured all-reduce is what the runtime's collective costs, which it calls on one worker as well.
  if (platform_.allreduce_bandwidth_Bps > 0.0) {
    timing = measured_allreduce(bytes);
  } else if (gpus_ == 1) {
    timing.gpu_seconds = {0.0};
    timing.collective = true;
  } else {
    const AllReduceChoice choice = allreduce_choice(bytes);
    if (options_.fidelity == Fidelity::full) {
      return full_allreduce(bytes, 1, choice, ready, {});
    }
    timing = fast_allreduce(bytes, choice);
  }
  return staggered(std::move(timing), ready, {});
}

CommTiming CommSimulator::overlapped_allreduce(std::int64_t bytes, double backward_s,
                                               std::span<const double> ready,
                                               std::span<const double> backward) {
  const std::int64_t bucket_bytes = options_.bucket_bytes > 0 ? options_.bucket_bytes : bytes;
  const int buckets = static_cast<int>(std::max<std::int64_t>(1, (bytes + bucket_bytes - 1) / bucket_bytes));
  const bool measured = platform_.allreduce_bandwidth_Bps > 0.0;
  std::vector<double> own_backward(backward.begin(), backward.end());
  if (own_backward.empty()) {
    own_backward.assign(static_cast<std::size_t>(gpus_), backward_s);
  }
  // Every bucket is an all-reduce of its own size, and auto chooses for that size.
  const AllReduceChoice choice =
      measured || gpus_ == 1 ? AllReduceChoice{} : allreduce_choice(bytes / buckets);
  if (options_.fidelity == Fidelity::full && !measured && gpus_ > 1) {
    return full_allreduce(bytes, buckets, choice, ready, own_backward);
  }
  // Buckets are equal, so one bucket's all-reduce time serves all; they leave in order, each when ready and
  // when the previous one is done (one communication stream, as in DDP/Horovod).
  CommTiming one;
  if (measured) {
    one = measured_allreduce(bytes / buckets);
  } else if (gpus_ > 1) {
    one = fast_allreduce(bytes / buckets, choice);
  }
  CommTiming timing;
  timing.buckets = buckets;
  timing.bucket_seconds = one.seconds;
  timing.bytes_sent_per_gpu = one.bytes_sent_per_gpu * buckets;
  timing.messages = one.messages * buckets;
  timing.gpu_seconds.assign(static_cast<std::size_t>(gpus_), 0.0);
  std::vector<double> zero;
  if (ready.empty()) {
    zero.assign(static_cast<std::size_t>(gpus_), 0.0);
    ready = zero;
  }
  staggered_finish(timing, ready, own_backward, timing.gpu_seconds);
  timing.seconds = *std::max_element(timing.gpu_seconds.begin(), timing.gpu_seconds.end());
  return timing;
}

CommTiming CommSimulator::staggered(CommTiming timing, std::span<const double> ready,
                                    std::span<const double> backward) const {
  if (ready.empty()) {
    return timing;
  }
  std::vector<double> finish(static_cast<std::size_t>(gpus_), 0.0);
  staggered_finish(timing, ready, backward, finish);
  timing.seconds = *std::max_element(finish.begin(), finish.end());
  timing.gpu_seconds = std::move(finish);
  return timing;
}

CommTiming CommSimulator::gossip(const topology::Graph& graph, std::int64_t bytes,
                                 std::span<const double> ready) {
  if (graph.nodes() != gpus_) {
    throw PlatformError(
        "train.workers",
        fmt::format("the graph has {} nodes but the platform simulates {} GPUs", graph.nodes(), gpus_));
  }
  const double s = static_cast<double>(bytes);
  const std::vector<Message> messages = gossip_messages(graph, bytes);
  CommTiming timing;
  timing.messages = static_cast<std::int64_t>(messages.size());
  timing.bytes_sent_per_gpu = s * static_cast<double>(messages.size()) / gpus_;
  // A round of transfers is started as one (a group of sends and receives): its senders pay the start.
  const double launch = platform_.collective_latency_s;
  if (options_.fidelity == Fidelity::fast) {
    const auto& result = cached_pattern(gossip_key(graph, bytes), messages);
    timing.seconds = result.seconds + launch;
    timing.gpu_seconds.assign(static_cast<std::size_t>(gpus_), 0.0);
    timing.message_times.reserve(messages.size());
    for (std::size_t i = 0; i < messages.size(); ++i) {
      const double done = result.message_seconds[i] + launch;
      timing.message_times.push_back({messages[i].from, messages[i].to, done});
      auto& gpu = timing.gpu_seconds[static_cast<std::size_t>(messages[i].to)];
      gpu = std::max(gpu, done);
    }
    return staggered(std::move(timing), ready, {});
  }
  // Full: each GPU sends to its out-neighbours and receives from its in-neighbours, then is done.
  std::vector<std::vector<int>> out(static_cast<std::size_t>(gpus_));
  std::vector<std::vector<int>> in(static_cast<std::size_t>(gpus_));
  for (const auto& m : messages) {
    out[static_cast<std::size_t>(m.from)].push_back(m.to);
    in[static_cast<std::size_t>(m.to)].push_back(m.from);
  }
  SimulatedMachine machine(platform_, gpus_, s, true, options_.simgrid_args);
  std::vector<double> finish(static_cast<std::size_t>(gpus_), 0.0);
  int token = 0;  // what mailboxes carry: only the simulated size matters
  for (int me = 0; me < gpus_; ++me) {
    sg4::Actor::create(fmt::format("gpu{}", me), machine.host(me), [&, me] {
      const double start = sg4::Engine::get_clock();
      const double own_ready = ready.empty() ? 0.0 : ready[static_cast<std::size_t>(me)];
      // Receives are posted before the compute (into buffers set aside for them), so a neighbour's
      // parameters flow as soon as that neighbour is done; its own leave once its compute is done.
      auto* own = sg4::Mailbox::by_name(fmt::format("params{}", me));
      std::vector<sg4::CommPtr> receives;
      const auto& senders = in[static_cast<std::size_t>(me)];
      std::vector<int*> received(senders.size(), nullptr);
      for (auto& slot : received) {
        receives.push_back(own->get_async<int>(&slot));
      }
      sg4::this_actor::sleep_until(start + own_ready + launch);
      std::vector<sg4::CommPtr> sends;
      for (const int to : out[static_cast<std::size_t>(me)]) {
        sends.push_back(sg4::Mailbox::by_name(fmt::format("params{}", to))
                            ->put_async(&token, static_cast<std::uint64_t>(std::llround(s))));
      }
      sg4::Comm::wait_all(receives);
      // The longest route any of its messages took (the fast path adds each message's own).
      double latency = 0.0;
      for (const int from : senders) {
        latency = std::max(latency, machine.route_latency(from, me));
      }
      finish[static_cast<std::size_t>(me)] = std::max(sg4::Engine::get_clock() - start + latency, own_ready);
      sg4::Comm::wait_all(sends);
    });
  }
  machine.run();
  ++simulations_;
  simulated_messages_ += timing.messages;
  timing.seconds = *std::max_element(finish.begin(), finish.end());
  timing.gpu_seconds = std::move(finish);
  return timing;
}

}  // namespace dbench::sim
