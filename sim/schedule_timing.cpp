// A whole schedule's timing: every GPU's clock through the iterations, each iteration's compute from the
// ComputeModel and its communication from the CommSimulator (SimGrid stays in timing.cpp).
#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <numeric>
#include <utility>

#include "sim/compute_model.hpp"
#include "sim/timing.hpp"

namespace dbench::sim {
namespace {

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Whether a step's communication is an all-reduce: of the gradients, of the parameters (a global average),
// or gossip over the complete graph, which averages as an all-reduce does and is run as one — except on a
// platform whose all-reduce is measured (CPU workers' MPI_Allreduce in double), where the workers gossip over
// the complete graph with point-to-point messages like over any other graph.
bool timed_as_allreduce(const topology::ScheduleStep& step, std::size_t gpus, const PlatformSpec& platform) {
  switch (step.communication) {
    case topology::Communication::all_reduce:
    case topology::Communication::global_average:
      return true;
    case topology::Communication::gossip:
      return step.graph->entries().size() == gpus * gpus && platform.allreduce_bandwidth_Bps == 0.0;
    case topology::Communication::none:
      return false;
  }
  return false;
}

// The bytes each GPU sends in a step: gossip, one parameter copy per out-neighbour; an all-reduce, the mean,
// which is exact for the ring and hierarchical ones, where every GPU sends the same.
void gpu_bytes(IterationTiming& row, const topology::ScheduleStep& step, bool allreduce, double bytes,
               std::size_t gpus) {
  row.gpu_bytes_sent.assign(gpus, allreduce ? row.bytes_sent : 0.0);
  if (allreduce || !topology::communicates(step)) {
    return;
  }
  for (int j = 0; j < step.graph->nodes(); ++j) {
    for (const auto& e : step.graph->row(j)) {
      if (e.from != j) {
        row.gpu_bytes_sent[static_cast<std::size_t>(e.from)] += bytes;
      }
    }
  }
}

double mean(const std::vector<double>& v) {
  return std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(std::max<std::size_t>(1, v.size()));
}

}  // namespace

std::vector<double> same_core_share(const topology::Graph& graph, const PlatformSpec& platform) {
  const auto n = static_cast<std::size_t>(graph.nodes());
  std::vector<double> share(n, 0.0);
  const int cores = platform.cores_per_node;
  if (cores <= 0) {
    return share;
  }
  const int per_node = platform.gpus_per_node;
  const auto processor = [&](int gpu) { return std::pair{gpu / per_node, (gpu % per_node) % cores}; };
  for (int i = 0; i < graph.nodes(); ++i) {
    int peers = 0;
    int same = 0;
    for (const topology::MixingEntry& e : graph.row(i)) {
      if (e.from != i) {
        ++peers;
        same += processor(e.from) == processor(i) ? 1 : 0;
      }
    }
    share[static_cast<std::size_t>(i)] = peers > 0 ? static_cast<double>(same) / peers : 0.0;
  }
  return share;
}

double gossip_wait_steps(const PlatformSpec& platform, double share) {
  double spared = platform.same_core_relief * share;
  if (platform.same_core_relief_whole && share > 0.5) {
    const double half = 0.5 * platform.same_core_relief;
    spared = half + (*platform.same_core_relief_whole - half) * (share - 0.5) / 0.5;
  }
  return std::max(1.0, 1.0 + platform.shared_core_turns - spared);
}

void staggered_finish(const CommTiming& comm, std::span<const double> ready, std::span<const double> backward,
                      std::span<double> finish) {
  const std::size_t n = finish.size();
  if (comm.buckets > 0) {
    double end = 0.0;
    for (int b = 0; b < comm.buckets; ++b) {
      const double share = static_cast<double>(b + 1) / comm.buckets;
      double produced = 0.0;
      for (std::size_t i = 0; i < n; ++i) {
        produced = std::max(produced, ready[i] + backward[i] * share);
      }
      end = std::max(end, produced) + comm.bucket_seconds;
    }
    for (std::size_t i = 0; i < n; ++i) {
      finish[i] = std::max(end, ready[i] + backward[i]);
    }
  } else if (comm.collective) {
    const double last = *std::max_element(ready.begin(), ready.end());
    for (std::size_t i = 0; i < n; ++i) {
      finish[i] = last + comm.gpu_seconds[i];
    }
  } else {
    std::copy(ready.begin(), ready.end(), finish.begin());
    for (const TimedMessage& m : comm.message_times) {
      auto& f = finish[static_cast<std::size_t>(m.to)];
      f = std::max(f, ready[static_cast<std::size_t>(m.from)] + m.seconds);
    }
  }
}

TimingResult time_schedule(const TimingSpec& spec, std::span<const topology::ScheduleStep> schedule,
                           bool per_gpu) {
  const double started = now_s();
  CommSimulator simulator(spec.platform, spec.gpus, spec.options);
  const ComputeModel compute(spec.platform, spec.gpus, spec.seed);
  const std::int64_t bytes = spec.profile.parameter_bytes();
  const double compute_s = compute_seconds(spec.profile, spec.batch_per_gpu, spec.platform);
  const double backward_s = backward_seconds(spec.profile, spec.batch_per_gpu, spec.platform);
  if (!std::isfinite(compute_s) || !std::isfinite(backward_s)) {
    throw PlatformError(
        "platform.timing_model",
        fmt::format("one GPU's compute per iteration is not a finite time ({} s from {} FLOPs per "
                    "sample at batch {} and {} FLOP/s); no timing is written",
                    compute_s, spec.profile.forward_flops_per_sample + spec.profile.backward_flops_per_sample,
                    spec.batch_per_gpu, compute_rate(spec.platform, spec.profile.compute_precision)));
  }
  const double gradient_overhead_s = spec.platform.gradient_step_overhead_s;
  const double turns = 1.0 + spec.platform.shared_core_turns;
  const bool overlap = spec.options.bucket_bytes > 0;
  const bool fast = spec.options.fidelity == Fidelity::fast;
  const auto n = static_cast<std::size_t>(spec.gpus);

  // Fast: per graph of the schedule (the all-reduces keyed by nullptr, gradients and parameters apart), its
  // communication simulated once with every GPU starting together; each iteration then shifts it by when
  // each GPU is ready. Full: simulated every iteration with those start times.
  std::map<std::pair<const topology::Graph*, bool>, CommTiming> seen;
  // Per gossip graph, each GPU's steps of waiting for the GPUs sharing its processor, where its in-neighbours
  // among them relieve it (same_core_relief); every other step waits `turns`.
  std::map<const topology::Graph*, std::vector<double>> relieved_turns;
  const bool relieved =
      spec.platform.same_core_relief > 0.0 || spec.platform.same_core_relief_whole.value_or(0.0) > 0.0;
  const auto turns_of = [&](const topology::ScheduleStep& step) -> const std::vector<double>* {
    if (!relieved || step.communication != topology::Communication::gossip) {
      return nullptr;
    }
    auto it = relieved_turns.find(step.graph);
    if (it == relieved_turns.end()) {
      std::vector<double> own = same_core_share(*step.graph, spec.platform);
      for (double& t : own) {
        t = gossip_wait_steps(spec.platform, t);
      }
      it = relieved_turns.emplace(step.graph, std::move(own)).first;
    }
    return &it->second;
  };
  if (fast) {
    // Every gossip graph of the schedule in one SimGrid run: one platform build instead of one per graph.
    std::vector<const topology::Graph*> graphs;
    for (const topology::ScheduleStep& step : schedule) {
      if (topology::communicates(step) && !timed_as_allreduce(step, n, spec.platform) &&
          std::find(graphs.begin(), graphs.end(), step.graph) == graphs.end()) {
        graphs.push_back(step.graph);
      }
    }
    simulator.prepare_gossip(graphs, bytes);
  }
  std::vector<double> clock(n, 0.0);   // each GPU's time at the start of the iteration
  std::vector<double> factor(n, 1.0);  // its compute factor this iteration
  std::vector<double> own_compute(n), own_backward(n), ready(n), finish(n), offset(n);
  TimingResult result;
  result.iterations.reserve(schedule.size());
  double total = 0.0;
  double bytes_sum = 0.0;
  for (std::size_t t = 0; t < schedule.size(); ++t) {
    const topology::ScheduleStep& step = schedule[t];
    // Only the gradients' all-reduce can run under the backward pass; a parameter average follows the step.
    const bool overlapped = overlap && step.communication == topology::Communication::all_reduce;
    const bool allreduce = timed_as_allreduce(step, n, spec.platform);
    if (!compute.uniform() || t == 0) {
      compute.factors(static_cast<std::int64_t>(t), factor);
    }
    // A step whose gradient is all-reduced applies it in a pass of its own.
    const double step_s =
        compute_s + (step.communication == topology::Communication::all_reduce ? gradient_overhead_s : 0.0);
    const std::vector<double>* own_turns = allreduce ? nullptr : turns_of(step);
    for (std::size_t i = 0; i < n; ++i) {
      own_compute[i] = step_s * factor[i];
      own_backward[i] = backward_s * factor[i];
      // With buckets a GPU's communication can start with its backward pass; otherwise after its compute, and
      // after the turns of the GPUs sharing its processor (each as long as its own).
      const double waits = own_turns != nullptr ? (*own_turns)[i] : turns;
      ready[i] = clock[i] + waits * own_compute[i] - (overlapped ? own_backward[i] : 0.0);
    }
    double bytes_sent = 0.0;
    if (!topology::communicates(step)) {
      // A local step: each GPU is done when its own compute is, and waits for no one.
      std::copy(ready.begin(), ready.end(), finish.begin());
    } else if (fast) {
      const std::pair<const topology::Graph*, bool> key = {
          step.graph, step.communication == topology::Communication::global_average};
      auto it = seen.find(key);
      if (it == seen.end()) {
        CommTiming fresh = overlapped  ? simulator.overlapped_allreduce(bytes, backward_s)
                           : allreduce ? simulator.allreduce(bytes)
                                       : simulator.gossip(*step.graph, bytes);
        it = seen.emplace(key, std::move(fresh)).first;
      }
      staggered_finish(it->second, ready, own_backward, finish);
      bytes_sent = it->second.bytes_sent_per_gpu;
    } else {
      // SimGrid's clock starts at the earliest ready GPU.
      const double first = *std::min_element(ready.begin(), ready.end());
      for (std::size_t i = 0; i < n; ++i) {
        offset[i] = ready[i] - first;
      }
      const CommTiming comm = overlapped
                                  ? simulator.overlapped_allreduce(bytes, backward_s, offset, own_backward)
                              : allreduce ? simulator.allreduce(bytes, offset)
                                          : simulator.gossip(*step.graph, bytes, offset);
      for (std::size_t i = 0; i < n; ++i) {
        finish[i] = first + comm.gpu_seconds[i];
      }
      bytes_sent = comm.bytes_sent_per_gpu;
    }
    IterationTiming row;
    row.iteration = static_cast<std::int64_t>(t);
    row.graph = step.name;
    row.compute_s = mean(own_compute);
    row.total_s = mean(finish) - mean(clock);
    row.comm_s = row.total_s - row.compute_s;
    row.bytes_sent = bytes_sent;
    if (per_gpu) {
      row.gpu_total_s.resize(n);
      row.gpu_comm_s.resize(n);
      for (std::size_t i = 0; i < n; ++i) {
        row.gpu_total_s[i] = finish[i] - clock[i];
        row.gpu_comm_s[i] = row.gpu_total_s[i] - own_compute[i];
      }
      gpu_bytes(row, step, allreduce, static_cast<double>(bytes), n);
    }
    clock.swap(finish);
    total += row.total_s;
    bytes_sum += row.bytes_sent;
    result.iterations.push_back(std::move(row));
  }
  const double count = std::max<double>(1.0, static_cast<double>(schedule.size()));
  result.seconds_per_iteration = total / count;
  if (!std::isfinite(result.seconds_per_iteration)) {
    // A last guard behind the platform's and the profile's ranges: a summary never holds a null time.
    throw PlatformError("platform",
                        fmt::format("the simulated time per iteration is not finite ({}); check the "
                                    "platform's rates, bandwidths and latencies",
                                    result.seconds_per_iteration));
  }
  result.samples_per_second =
      result.seconds_per_iteration > 0.0
          ? spec.gpus * static_cast<double>(spec.batch_per_gpu) / result.seconds_per_iteration
          : 0.0;
  result.single_gpu_seconds_per_iteration = compute_s;
  result.scaling_efficiency =
      result.seconds_per_iteration > 0.0 ? compute_s / result.seconds_per_iteration : 0.0;
  result.bytes_per_gpu_per_iteration = bytes_sum / count;
  result.simulations = simulator.simulations();
  result.simulated_messages = simulator.simulated_messages();
  result.allreduce_algorithms = simulator.allreduce_algorithms();
  result.straggler_gpus = compute.straggler_gpus();
  if (per_gpu) {
    result.gpu_clock_s = clock;
  }
  result.wall_seconds = now_s() - started;
  return result;
}

}  // namespace dbench::sim
