// Everything timed with SimGrid: the fast path's patterns (all of a pattern's transfers starting together,
// several patterns in one run, each cached by key), full fidelity's all-reduce (one actor per GPU stepping
// through the algorithm with mailboxes: the reference the fast path is tested against) and gossip rounds.
#include "sim/timing.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <simgrid/s4u.hpp>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "sim/allreduce_plan.hpp"
#include "sim/max_min_flows.hpp"
#include "sim/simulated_machine.hpp"
#include "sim/timing_internal.hpp"

namespace dbench::sim {
namespace {

namespace sg4 = simgrid::s4u;

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

// Each message's transfer time from its pattern's start (latencies apart) under max-min sharing of its
// route's bandwidths (max_min_finish_times): what SimGrid computes for the pattern with the model
// SimulatedMachine sets (CM02 without bandwidth factor, TCP window or cross traffic, the latencies kept out
// of SimGrid, every transfer starting at once), solved directly instead of through one actor per GPU, a
// mailbox per message and an engine event per completion, which at 16,384 GPUs cost a second per pattern.
// Empty when a route crosses a link that is not plainly shared, which SimGrid then simulates. Each route's
// latency goes into `latency_of` (by GPU pair) from the same lookup, which walks SimGrid's routing.
template <typename Message>
std::vector<std::vector<double>> max_min_transfers(const SimulatedMachine& machine,
                                                   std::span<const std::vector<Message>* const> patterns,
                                                   std::unordered_map<std::uint64_t, double>& latency_of) {
  std::unordered_map<const sg4::Link*, std::uint32_t> index;
  std::vector<double> capacity;
  // Routes by GPU pair, each looked up once: its links' indices in `store`.
  std::unordered_map<std::uint64_t, std::pair<std::uint32_t, std::uint32_t>> routes;
  std::vector<std::uint32_t> store;
  std::vector<sg4::Link*> links;
  bool plain = true;
  const auto route = [&](int from, int to) {
    const std::uint64_t pair = static_cast<std::uint64_t>(from) << 32 | static_cast<std::uint32_t>(to);
    const auto [it, fresh] = routes.try_emplace(pair);
    if (fresh) {
      links.clear();
      double ignored = 0.0;
      machine.host(from)->route_to(machine.host(to), links, &ignored);
      latency_of.emplace(pair, machine.route_latency(links));
      it->second.first = static_cast<std::uint32_t>(store.size());
      for (const sg4::Link* link : links) {
        plain = plain && link->get_sharing_policy() == sg4::Link::SharingPolicy::SHARED;
        const auto [at, added] = index.try_emplace(link, static_cast<std::uint32_t>(capacity.size()));
        if (added) {
          capacity.push_back(link->get_bandwidth());
        }
        store.push_back(at->second);
      }
      it->second.second = static_cast<std::uint32_t>(store.size());
    }
    return it->second;
  };
  std::vector<std::vector<double>> elapsed;
  for (const auto* pattern : patterns) {
    MaxMinFlows flows;
    flows.route_begin.push_back(0);
    for (const auto& m : *pattern) {
      const auto [begin, end] = route(m.from, m.to);
      flows.route_links.insert(flows.route_links.end(), store.begin() + begin, store.begin() + end);
      flows.route_begin.push_back(static_cast<std::uint32_t>(flows.route_links.size()));
      // SimGrid moves whole bytes.
      flows.bytes.push_back(static_cast<double>(std::llround(m.bytes)));
    }
    if (!plain) {
      return {};
    }
    flows.capacity_Bps = capacity;
    elapsed.push_back(max_min_finish_times(flows));
  }
  return elapsed;
}

// The same times from SimGrid itself, the patterns one after the other on the machine.
//
// Every GPU is an actor that posts its sends and receives of a pattern, waits for them, and meets the
// others at a barrier before the next pattern. Transfers between actors are kept per actor; transfers
// between hosts (Comm::sendto) are kept in one list that each finished transfer is looked up in, which
// made a pattern of 16,384 transfers quadratic.
template <typename Message>
std::vector<std::vector<double>> simgrid_transfers(const SimulatedMachine& machine, int gpus,
                                                   std::span<const std::vector<Message>* const> patterns) {
  // Per pattern, the messages each GPU sends and receives (indices into the pattern's list).
  struct Ends {
    std::vector<std::vector<std::uint32_t>> out;
    std::vector<std::vector<std::uint32_t>> in;
  };
  std::vector<Ends> ends(patterns.size());
  std::size_t longest = 0;
  for (std::size_t k = 0; k < patterns.size(); ++k) {
    ends[k].out.resize(static_cast<std::size_t>(gpus));
    ends[k].in.resize(static_cast<std::size_t>(gpus));
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
  std::vector<std::vector<double>> elapsed(patterns.size());
  for (std::size_t k = 0; k < patterns.size(); ++k) {
    elapsed[k].assign(patterns[k]->size(), 0.0);
  }
  const sg4::BarrierPtr barrier = sg4::Barrier::create(static_cast<unsigned>(gpus));
  int token = 0;  // what mailboxes carry: only the simulated size matters
  for (int me = 0; me < gpus; ++me) {
    sg4::Actor::create("gpu", machine.host(me), [&, me] {
      const auto gpu = static_cast<std::size_t>(me);
      std::vector<sg4::CommPtr> sends;
      std::vector<sg4::CommPtr> receives;
      std::vector<int*> received;
      for (std::size_t k = 0; k < patterns.size(); ++k) {
        const double start = sg4::Engine::get_clock();
        const auto& messages = *patterns[k];
        const auto& in = ends[k].in[gpu];
        const auto& out = ends[k].out[gpu];
        receives.clear();
        sends.clear();
        received.assign(in.size(), nullptr);
        for (std::size_t j = 0; j < in.size(); ++j) {
          receives.push_back(mailboxes[in[j]]->template get_async<int>(&received[j]));
        }
        for (const std::uint32_t i : out) {
          sends.push_back(
              mailboxes[i]->put_async(&token, static_cast<std::uint64_t>(std::llround(messages[i].bytes))));
        }
        for (std::size_t j = 0; j < receives.size(); ++j) {
          receives[j]->wait();
          elapsed[k][in[j]] = receives[j]->get_finish_time() - start;
        }
        for (const auto& send : sends) {
          send->wait();
        }
        barrier->wait();
      }
    });
  }
  machine.run();
  return elapsed;
}

}  // namespace

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
  // One platform for all patterns (building it is most of the cost at thousands of GPUs). A user's SimGrid
  // setting may change the network model, which SimGrid then simulates.
  SimulatedMachine machine(platform_, gpus_, shortest, true, options_.simgrid_args);
  // Route latencies by GPU pair, each looked up once (a tree's steps repeat the same edges, and a lookup
  // walks SimGrid's routing): by the max-min solution as it looks up the routes, or here.
  std::unordered_map<std::uint64_t, double> latency_of;
  std::vector<std::vector<double>> elapsed;
  if (!detail::sets_simgrid_config(options_.simgrid_args)) {
    elapsed = max_min_transfers(machine, patterns, latency_of);
  }
  if (elapsed.empty()) {
    elapsed = simgrid_transfers(machine, gpus_, patterns);
  }
  const auto route_latency = [&](int from, int to) {
    const std::uint64_t pair = static_cast<std::uint64_t>(from) << 32 | static_cast<std::uint32_t>(to);
    const auto [it, fresh] = latency_of.try_emplace(pair, 0.0);
    if (fresh) {
      it->second = machine.route_latency(from, to);
    }
    return it->second;
  };
  for (std::size_t k = 0; k < patterns.size(); ++k) {
    const auto& messages = *patterns[k];
    PatternResult& result = results[k];
    for (std::size_t i = 0; i < messages.size(); ++i) {
      const double done = elapsed[k][i] + route_latency(messages[i].from, messages[i].to);
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

CommTiming CommSimulator::full_allreduce(std::int64_t bytes, int buckets, AllReduceChoice choice,
                                         std::span<const double> ready, std::span<const double> backward) {
  const AllReduceAlgorithm algorithm = choice.algorithm;
  const int n = gpus_;
  // What one bucket puts on the wire under the protocol, and each step's extra cost.
  const double bucket = static_cast<double>(bytes) / buckets * detail::wire_factor(choice.protocol);
  const double overhead = detail::step_overhead_s(platform_, choice.protocol);
  const double launch = platform_.collective_latency_s;
  const int g = std::min(platform_.gpus_per_node, n);
  // The plans are the fast path's: the same chunks, the same steps.
  const int channels = allreduce_channels(platform_, n);
  const TreePlan tree = algorithm == AllReduceAlgorithm::tree
                            ? tree_plan(n, bucket, tree_chunks(platform_, n, bucket, overhead), g,
                                        detail::tree_channels(platform_, n))
                            : TreePlan{};
  const bool in_network = algorithm == AllReduceAlgorithm::collnet;
  const HierarchicalPlan hier = hierarchical_plan(
      platform_, n, bucket, hierarchical_chunks(platform_, n, bucket, overhead, in_network), in_network);
  const double nvls_bytes =
      algorithm == AllReduceAlgorithm::nvls
          ? detail::nvls_message_bytes(platform_, n, static_cast<double>(bytes) / buckets)
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
    ring_prev.push_back(inverse([&](int j) { return detail::ring_next(j, n, g, c, channels); }));
  }
  const std::vector<int> nvls_prev = inverse([&](int j) { return detail::ring_next(j, n, g, 0, 1); });
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
                exchange(ring_box[k], detail::ring_next(me, n, g, c, channels), ring_prev[k][i],
                         bucket / (n * channels));
              }
              finish_step();
            }
            break;
          case AllReduceAlgorithm::nvls:
            exchange(ring_box[0], detail::ring_next(me, n, g, 0, 1), nvls_prev[i], nvls_bytes);
            finish_step();
            sg4::this_actor::sleep_for((detail::kNvlsSteps - 1) * overhead);
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
      messages = detail::hierarchical_messages(hier);
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
  timing.bytes_sent_per_gpu = detail::allreduce_bytes_per_gpu(algorithm, n, g, static_cast<double>(bytes));
  simulated_messages_ += messages * buckets;
  timing.messages = messages * buckets;
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
