#include "validation/timed_rounds.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <thread>

namespace dbench::validation {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

std::vector<std::vector<double>> interleaved_rounds(runtime::Communicator& comm, int repeats,
                                                    std::span<const std::function<void()>> bodies) {
  constexpr int kRounds = 7;
  constexpr double kMinTiming = 0.02;
  std::vector<std::vector<double>> seconds(bodies.size());
  std::vector<int> calls(bodies.size(), repeats);
  std::array<double, 1> token{0.0};
  for (int k = -1; k < kRounds; ++k) {
    for (std::size_t i = 0; i < bodies.size(); ++i) {
      // Each worker pauses a different while before the barrier, different in every round, so that the
      // order in which workers sharing a core take their turns starts afresh in each timing.
      std::this_thread::sleep_for(std::chrono::microseconds(
          (static_cast<std::int64_t>(comm.rank()) * 97 + static_cast<std::int64_t>(k + 1) * 389) % 1000));
      comm.allreduce(std::span<double>(token), runtime::ReduceOp::sum);
      const auto start = Clock::now();
      for (int r = 0; r < calls[i]; ++r) {
        bodies[i]();
      }
      std::array<double, 1> elapsed{seconds_since(start)};
      comm.allreduce(std::span<double>(elapsed), runtime::ReduceOp::max);
      const double per_call = elapsed[0] / calls[i];
      if (k >= 0) {
        seconds[i].push_back(per_call);
      } else if (elapsed[0] < kMinTiming) {
        // Every worker sees the same maximum, so all settle on the same count.
        calls[i] = static_cast<int>(std::ceil(kMinTiming / std::max(per_call, 1e-9)));
      }
    }
  }
  return seconds;
}

double seconds_per_call(runtime::Communicator& comm, int repeats, const std::function<void()>& body) {
  const std::array<std::function<void()>, 1> bodies{body};
  return median(interleaved_rounds(comm, repeats, bodies).front());
}

void record_batch(ModelCalibration& result, int batch, const std::vector<std::vector<double>>& rounds) {
  std::vector<double> in_loop;
  for (std::size_t k = 0; k < rounds[0].size(); ++k) {
    in_loop.push_back(std::max(rounds[0][k], rounds[2][k] - rounds[1][k]));
  }
  result.batches.push_back(batch);
  result.seconds.push_back(*std::min_element(in_loop.begin(), in_loop.end()));
  result.kernel_seconds.push_back(result.seconds.back());
  result.seconds_alone.push_back(median(rounds[0]));
  result.gossip_seconds.push_back(median(rounds[1]));
}

void time_training_loops(const std::string& model, int workers, bool exponential, int runs,
                         const LoopRun& run, ModelCalibration& m, const RoundPart& each_part) {
  for (auto* loop : {&m.ring_loop_seconds, &m.ring_loop_compute_s, &m.ring_loop_comm_s,
                     &m.allreduce_loop_seconds, &m.allreduce_loop_compute_s, &m.allreduce_loop_comm_s,
                     &m.one_peer_loop_comm_s, &m.exponential_loop_comm_s}) {
    loop->clear();
  }
  enum Loop : std::size_t { kRing, kCentralized, kOnePeer, kDirected, kLoops };
  const std::size_t loops = exponential ? kLoops : kDirected;
  std::vector<std::array<std::vector<std::string>, kLoops>> overrides(m.batches.size());
  for (std::size_t i = 0; i < m.batches.size(); ++i) {
    // Runs long enough for the steady iteration (about 0.5 s as the kernels timed them): the first tens of
    // iterations are slower (LeNet on 4 workers sharing 2 cores: 60-iteration runs 5 % slower than
    // 300-iteration ones; the MLP's all-reduce on 2 workers 2-3 times slower over up to 150 iterations).
    const double estimate = std::max(m.kernel_seconds[i] + m.gossip_seconds[i], 1e-6);
    const auto iterations =
        std::clamp<std::int64_t>(static_cast<std::int64_t>(0.5 / estimate), kLoopIterations, 2000);
    const std::vector<std::string> common{
        "train.model=" + model, fmt::format("train.batch_per_worker={:g}", m.batches[i]),
        fmt::format("train.workers={}", workers), fmt::format("train.iterations={}", iterations),
        fmt::format("train.eval_every={}", iterations)};
    auto with = [&](std::vector<std::string> algorithm) {
      algorithm.insert(algorithm.begin(), common.begin(), common.end());
      return algorithm;
    };
    overrides[i] = {with({"algorithm.kind=dpsgd", "algorithm.graph=ring"}),
                    with({"algorithm.kind=centralized"}),
                    with({"algorithm.kind=dpsgd", "algorithm.graph=one-peer-exponential"}),
                    with({"algorithm.kind=dpsgd", "algorithm.graph=exponential"})};
  }
  std::vector<std::array<std::vector<PartTimes>, kLoops>> measured(m.batches.size());
  for (auto& batch : measured) {
    for (std::size_t loop = 0; loop < loops; ++loop) {
      batch[loop].resize(static_cast<std::size_t>(runs));
    }
  }
  for (int r = 0; r < runs; ++r) {
    for (std::size_t i = 0; i < m.batches.size(); ++i) {
      const auto measure = [&] {
        for (std::size_t loop = 0; loop < loops; ++loop) {
          measured[i][loop][static_cast<std::size_t>(r)] = run(overrides[i][loop]);
        }
      };
      if (each_part) {
        each_part(r, m.batches[i], measure);
      } else {
        measure();
      }
    }
  }
  for (std::size_t i = 0; i < m.batches.size(); ++i) {
    const PartTimes ring_run = median_parts(measured[i][kRing]);
    const PartTimes centralized_run = median_parts(measured[i][kCentralized]);
    m.one_peer_loop_comm_s.push_back(median_parts(measured[i][kOnePeer]).comm_s);
    if (exponential) {
      m.exponential_loop_comm_s.push_back(median_parts(measured[i][kDirected]).comm_s);
    }
    m.ring_loop_seconds.push_back(ring_run.total_s);
    m.ring_loop_compute_s.push_back(ring_run.compute_s);
    m.ring_loop_comm_s.push_back(ring_run.comm_s);
    m.allreduce_loop_seconds.push_back(centralized_run.total_s);
    m.allreduce_loop_compute_s.push_back(centralized_run.compute_s);
    m.allreduce_loop_comm_s.push_back(centralized_run.comm_s);
  }
}

}  // namespace dbench::validation
