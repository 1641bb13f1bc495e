// All-reduce timing on top of the simulated patterns: the fast path (each distinct step replayed, see
// sim/allreduce_plan.hpp), the measured all-reduce, the choice of algorithm and protocol per size ("auto"),
// buckets under the backward pass, and the closed forms full fidelity shares (sim/timing_internal.hpp).
#include <fmt/core.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "sim/allreduce_plan.hpp"
#include "sim/timing.hpp"
#include "sim/timing_internal.hpp"

namespace dbench::sim {
namespace detail {

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

std::int64_t hierarchical_messages(const HierarchicalPlan& plan) {
  std::int64_t messages = 0;
  for (int step = 0; step < plan.steps(); ++step) {
    messages += (plan.gpus_per_node > 1 && plan.intra_chunks(step) > 0 ? plan.gpus : 0) +
                (plan.nodes > 1 && plan.inter_chunks(step) > 0 ? plan.gpus : 0);
  }
  return messages;
}

double wire_factor(Protocol protocol) {
  return protocol == Protocol::low_latency ? 2.0 : 1.0;
}

double step_overhead_s(const PlatformSpec& p, Protocol protocol) {
  return protocol == Protocol::bulk ? p.bulk_step_latency_s : 0.0;
}

double nvls_message_bytes(const PlatformSpec& p, int n, double s) {
  return s * (n + 1) / n * p.intra_node_efficiency / p.nvls_efficiency;
}

int tree_channels(const PlatformSpec& p, int gpus) {
  return std::min(kTreeChannels, allreduce_channels(p, gpus));
}

bool sets_simgrid_config(const std::vector<std::string>& args) {
  return std::any_of(args.begin(), args.end(), [](const std::string& a) { return a.starts_with("--cfg"); });
}

}  // namespace detail

namespace {

// The low-latency protocol is tried for all-reduces up to this many bytes per GPU; beyond, its doubled
// bytes always cost more than the bulk protocol's handshakes.
constexpr double kLowLatencyMaxBytes = 4.0 * 1024 * 1024;

// SimGrid's coarsest event precision (SimulatedMachine: a thousandth of the shortest transfer, at most 10
// us).
constexpr double kCoarsestPrecision_s = 1e-5;

// What a message of `bytes` from GPU `from` to GPU `to` takes at least, whatever shares its links: the
// latency of the GPU ports on its route, and across nodes of the NIC links (added to SimGrid's time, not
// simulated; the fabric's links are left out), and its bytes at the rate of the narrowest of those links,
// which SimGrid's max-min sharing never exceeds in the network model SimulatedMachine sets (CM02, no
// bandwidth factor, no TCP window). The bandwidth term counts half, less the coarsest event precision:
// SimGrid may end a transfer up to its precision early and rounds sizes to whole bytes.
double message_lower_bound_s(const PlatformSpec& p, int from, int to, double bytes) {
  double latency = 2.0 * p.intra_node_latency_s;
  double rate = p.intra_node_bandwidth_Bps * p.intra_node_efficiency;
  if (from / p.gpus_per_node != to / p.gpus_per_node) {
    latency += 2.0 * p.nic_latency_s;
    rate = std::min(rate, p.nic_bandwidth_Bps * p.network_efficiency * p.nics_per_node / nic_links(p));
  }
  return latency + std::max(0.0, 0.5 * bytes / rate - kCoarsestPrecision_s);
}

// One step of a pipelined all-reduce's replay: each message starts once both its GPUs are done with the
// previous step (`ready`) and takes duration(i) plus the step's overhead; `ready` becomes each GPU's end of
// this step. The fast path and the lower bound replay with the same rule, so the bound holds step by step.
template <typename Messages, typename Duration>
void replay_step(const Messages& messages, Duration duration, double overhead, std::vector<double>& ready,
                 std::vector<double>& done) {
  done = ready;
  for (std::size_t i = 0; i < messages.size(); ++i) {
    const auto from = static_cast<std::size_t>(messages[i].from);
    const auto to = static_cast<std::size_t>(messages[i].to);
    const double end = std::max(ready[from], ready[to]) + duration(i) + overhead;
    done[from] = std::max(done[from], end);
    done[to] = std::max(done[to], end);
  }
  ready.swap(done);
}

}  // namespace

TreePlan CommSimulator::tree_plan_for(double s, double overhead_s) const {
  return tree_plan(gpus_, s, tree_chunks(platform_, gpus_, s, overhead_s),
                   std::min(platform_.gpus_per_node, gpus_), detail::tree_channels(platform_, gpus_));
}

HierarchicalPlan CommSimulator::hierarchical_plan_for(double s, double overhead_s, bool in_network) const {
  return hierarchical_plan(platform_, gpus_, s,
                           hierarchical_chunks(platform_, gpus_, s, overhead_s, in_network), in_network);
}

void CommSimulator::ring_step(int channels, double bytes, std::vector<Message>& out) const {
  const int g = std::min(platform_.gpus_per_node, gpus_);
  for (int c = 0; c < channels; ++c) {
    for (int i = 0; i < gpus_; ++i) {
      out.push_back({i, detail::ring_next(i, gpus_, g, c, channels), bytes});
    }
  }
}

void CommSimulator::tree_step(const TreePlan& plan, int step, std::vector<Message>& out) const {
  for (int t = 0; t < static_cast<int>(plan.trees.size()); ++t) {
    const auto& parent = plan.trees[static_cast<std::size_t>(t)].parent;
    for (int v = 0; v < gpus_; ++v) {
      if (plan.up_active(t, v, step)) {
        out.push_back({v, parent[static_cast<std::size_t>(v)], plan.chunk_bytes});
      }
      if (plan.down_active(t, v, step)) {
        out.push_back({parent[static_cast<std::size_t>(v)], v, plan.chunk_bytes});
      }
    }
  }
}

void CommSimulator::hierarchical_step(const HierarchicalPlan& plan, int step,
                                      std::vector<Message>& out) const {
  const double intra = plan.gpus_per_node > 1 ? plan.intra_bytes(step) : 0.0;
  const double inter = plan.nodes > 1 ? plan.inter_bytes(step) : 0.0;
  for (int i = 0; i < gpus_; ++i) {
    if (intra > 0.0) {
      out.push_back({i, plan.intra_next(i), intra});
    }
    if (inter > 0.0) {
      out.push_back({i, plan.inter_next(i), inter});
    }
  }
}

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
  const double s = data * detail::wire_factor(choice.protocol);
  const double overhead = detail::step_overhead_s(platform_, choice.protocol);
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
      replay_step(
          messages, [&](std::size_t i) { return pattern.message_seconds[i]; }, overhead, ready, done);
    }
  };
  CommTiming timing;
  timing.bytes_sent_per_gpu = detail::allreduce_bytes_per_gpu(algorithm, n, g, data);
  switch (algorithm) {
    case AllReduceAlgorithm::ring: {
      // Every step of a ring moves the same chunk between the same pairs: one step is simulated. Across
      // nodes the data is striped over one ring per NIC link.
      const int channels = allreduce_channels(platform_, n);
      const double chunk = s / (static_cast<double>(n) * channels);
      ring_step(channels, chunk, messages);
      timing.seconds =
          2.0 * (n - 1) * (cached_pattern(fmt::format("ring-step/{}", chunk), messages).seconds + overhead);
      timing.messages = 2LL * (n - 1) * n * channels;
      break;
    }
    case AllReduceAlgorithm::nvls: {
      const double each = detail::nvls_message_bytes(platform_, n, data);
      ring_step(1, each, messages);
      timing.seconds =
          cached_pattern(fmt::format("nvls/{}", each), messages).seconds + detail::kNvlsSteps * overhead;
      timing.messages = 2LL * n;
      break;
    }
    case AllReduceAlgorithm::hierarchical:
    case AllReduceAlgorithm::collnet: {
      // Steps with the same bytes in each ring move the same messages (CollNet's inter-node step is a
      // message to the next node, as an inter-node ring step is).
      const HierarchicalPlan plan =
          hierarchical_plan_for(s, overhead, algorithm == AllReduceAlgorithm::collnet);
      const auto intra = [&](int step) { return plan.gpus_per_node > 1 ? plan.intra_bytes(step) : 0.0; };
      const auto inter = [&](int step) { return plan.nodes > 1 ? plan.inter_bytes(step) : 0.0; };
      replay(
          plan.steps(),
          [&](int step) { return fmt::format("hierarchical-step/{}/{}", intra(step), inter(step)); },
          [&](int step, std::vector<Message>& m) { hierarchical_step(plan, step, m); });
      timing.seconds = *std::max_element(ready.begin(), ready.end());
      timing.messages = detail::hierarchical_messages(plan);
      break;
    }
    case AllReduceAlgorithm::tree: {
      // A step's messages are set by which heights send up and which depths receive from above.
      const TreePlan plan = tree_plan_for(s, overhead);
      replay(
          plan.steps(),
          [&](int step) { return fmt::format("tree-step/{}/{}", plan.chunk_bytes, plan.step_key(step)); },
          [&](int step, std::vector<Message>& m) { tree_step(plan, step, m); });
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

double CommSimulator::allreduce_lower_bound(std::int64_t bytes, AllReduceChoice choice) const {
  const int n = gpus_;
  const double data = static_cast<double>(bytes);
  const double s = data * detail::wire_factor(choice.protocol);
  const double overhead = detail::step_overhead_s(platform_, choice.protocol);
  const auto bound = [&](const Message& m) {
    return message_lower_bound_s(platform_, m.from, m.to, m.bytes);
  };
  // A step the fast path times as its slowest message takes at least the slowest message's bound.
  const auto slowest = [&](const std::vector<Message>& messages) {
    double longest = 0.0;
    for (const Message& m : messages) {
      longest = std::max(longest, bound(m));
    }
    return longest;
  };
  std::vector<Message> messages;
  double seconds = 0.0;
  switch (choice.algorithm) {
    case AllReduceAlgorithm::ring: {
      const int channels = allreduce_channels(platform_, n);
      const double chunk = s / (static_cast<double>(n) * channels);
      ring_step(channels, chunk, messages);
      seconds = 2.0 * (n - 1) * (slowest(messages) + overhead);
      break;
    }
    case AllReduceAlgorithm::nvls: {
      const double each = detail::nvls_message_bytes(platform_, n, data);
      ring_step(1, each, messages);
      seconds = slowest(messages) + detail::kNvlsSteps * overhead;
      break;
    }
    case AllReduceAlgorithm::hierarchical:
    case AllReduceAlgorithm::collnet: {
      // Every GPU sends one message of the same size in each ring that moves data in a step, and all of a
      // ring's messages stay in a node or all cross nodes: the replay keeps every GPU's clock equal, and each
      // step adds at least its slowest message's bound. A message's bound depends only on its bytes and on
      // whether it crosses nodes, so GPU 0's messages stand for the step's: the bound costs a step, not a
      // step per GPU (the steps grow with the nodes).
      const HierarchicalPlan plan =
          hierarchical_plan_for(s, overhead, choice.algorithm == AllReduceAlgorithm::collnet);
      for (int step = 0; step < plan.steps(); ++step) {
        double longest = -1.0;  // negative: no message in this step
        const double intra = plan.gpus_per_node > 1 ? plan.intra_bytes(step) : 0.0;
        const double inter = plan.nodes > 1 ? plan.inter_bytes(step) : 0.0;
        if (intra > 0.0) {
          longest = std::max(longest, bound({0, plan.intra_next(0), intra}));
        }
        if (inter > 0.0) {
          longest = std::max(longest, bound({0, plan.inter_next(0), inter}));
        }
        if (longest >= 0.0) {
          seconds += longest + overhead;
        }
      }
      break;
    }
    case AllReduceAlgorithm::tree: {
      // The fast path's replay with every message at its bound: maxima and sums of smaller durations.
      const TreePlan plan = tree_plan_for(s, overhead);
      std::vector<double> ready(static_cast<std::size_t>(n), 0.0);
      std::vector<double> done;
      for (int step = 0; step < plan.steps(); ++step) {
        messages.clear();
        tree_step(plan, step, messages);
        replay_step(
            messages, [&](std::size_t i) { return bound(messages[i]); }, overhead, ready, done);
      }
      seconds = *std::max_element(ready.begin(), ready.end());
      break;
    }
    case AllReduceAlgorithm::automatic:
      throw PlatformError("platform.allreduce", "auto must be resolved to an algorithm before it is bounded");
  }
  return seconds + platform_.collective_latency_s;
}

void CommSimulator::simulate_together(std::int64_t bytes, std::span<const AllReduceChoice> choices) {
  if (choices.size() < 2) {
    return;  // fast_allreduce() simulates one alone
  }
  PatternBatch batch;
  collecting_ = &batch;
  try {
    for (const AllReduceChoice& choice : choices) {
      fast_allreduce(bytes, choice);
    }
  } catch (...) {
    collecting_ = nullptr;
    throw;
  }
  collecting_ = nullptr;
  simulate_patterns(std::move(batch.keys), batch.lists);
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
  // Branch and bound: the candidate with the lowest lower bound is simulated first, then, in one SimGrid run,
  // those whose bound does not exceed its time; a candidate whose bound does cannot be the fastest. Without
  // pruning, every candidate's patterns in one SimGrid run: at 16,384 GPUs building the platform costs more
  // than most patterns.
  std::vector<bool> timed(candidates.size(), true);  // false: cannot be the fastest
  if (candidates.size() > 1 && !options_.exhaustive_auto &&
      !detail::sets_simgrid_config(options_.simgrid_args)) {
    std::vector<double> bounds;
    for (const AllReduceChoice& candidate : candidates) {
      bounds.push_back(allreduce_lower_bound(bytes, candidate));
    }
    const auto first =
        static_cast<std::size_t>(std::min_element(bounds.begin(), bounds.end()) - bounds.begin());
    const double first_s = fast_allreduce(bytes, candidates[first]).seconds;
    std::vector<AllReduceChoice> rest;
    for (std::size_t k = 0; k < candidates.size(); ++k) {
      timed[k] = k == first || bounds[k] <= first_s;
      if (timed[k] && k != first) {
        rest.push_back(candidates[k]);
      }
    }
    simulate_together(bytes, rest);
  } else {
    simulate_together(bytes, candidates);
  }
  AllReduceChoice best = candidates.front();
  double best_s = -1.0;
  for (std::size_t k = 0; k < candidates.size(); ++k) {
    if (!timed[k]) {
      continue;
    }
    const double seconds = fast_allreduce(bytes, candidates[k]).seconds;
    if (best_s < 0.0 || seconds < best_s) {
      best = candidates[k];
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

}  // namespace dbench::sim
