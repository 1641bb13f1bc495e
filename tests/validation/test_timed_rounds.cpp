// The calibration's timing machinery on one process: the statistics kept of the rounds, and the rounds
// themselves on a single worker (call counts and lower bounds only: nothing here asserts how fast a machine
// is); and the order and medians of the training loops' runs, each run's time injected.
#include <doctest/doctest.h>
#include <fmt/core.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <functional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "runtime/communicator.hpp"
#include "validation/timed_rounds.hpp"

namespace {

using dbench::validation::ModelCalibration;

}  // namespace

TEST_CASE("validation::median: the middle value, or the mean of the two middle ones") {
  CHECK(dbench::validation::median({3.0, 1.0, 2.0}) == 2.0);
  CHECK(dbench::validation::median({4.0, 1.0, 3.0, 2.0}) == 2.5);
  CHECK(dbench::validation::median({7.0}) == 7.0);
}

TEST_CASE("validation::record_batch: the fastest round of the step in the loop, medians of the parts alone") {
  // Rounds of (step alone, round alone, step then round). The step in the loop per round is
  // max(alone, loop - round): max(3, 4) = 4, max(1, 1.5) = 1.5, max(2, 1) = 2; the fastest is 1.5.
  const std::vector<std::vector<double>> rounds{{3.0, 1.0, 2.0}, {1.0, 0.5, 2.0}, {5.0, 2.0, 3.0}};
  ModelCalibration result;
  dbench::validation::record_batch(result, 16, rounds);
  REQUIRE(result.batches.size() == 1);
  CHECK(result.batches[0] == 16.0);
  CHECK(result.seconds[0] == 1.5);
  CHECK(result.seconds_alone[0] == 2.0);
  CHECK(result.gossip_seconds[0] == 1.0);

  // A second batch size is appended after the first; a loop faster than its parts counts as the step alone.
  dbench::validation::record_batch(result, 32, {{2.0, 2.0}, {1.0, 1.0}, {2.5, 2.5}});
  REQUIRE(result.batches.size() == 2);
  CHECK(result.batches[1] == 32.0);
  CHECK(result.seconds[1] == 2.0);
  CHECK(result.seconds_alone[1] == 2.0);
  CHECK(result.gossip_seconds[1] == 1.0);
}

TEST_CASE("validation::interleaved_rounds: seven timed rounds per body, each of at least `repeats` calls") {
  dbench::runtime::SingleWorkerCommunicator comm;
  constexpr int kRepeats = 3;
  long first = 0;
  long second = 0;
  const std::array<std::function<void()>, 2> bodies{[&] { ++first; }, [&] { ++second; }};
  const auto seconds = dbench::validation::interleaved_rounds(comm, kRepeats, bodies);
  REQUIRE(seconds.size() == 2);
  for (const auto& body : seconds) {
    REQUIRE(body.size() == 7);
    for (const double s : body) {
      CHECK(std::isfinite(s));
      CHECK(s >= 0.0);
    }
  }
  // An untimed round, then seven timed ones; a body this short is called more often, to last 20 ms a timing.
  CHECK(first >= 8 * kRepeats);
  CHECK(second >= 8 * kRepeats);
}

TEST_CASE("validation::seconds_per_call: per call, not per timing: no less than the body surely takes") {
  dbench::runtime::SingleWorkerCommunicator comm;
  int calls = 0;
  const double per_call = dbench::validation::seconds_per_call(comm, 2, [&] {
    ++calls;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  });
  CHECK(calls >= 16);
  CHECK(per_call >= 1e-3);
}

TEST_CASE(
    "validation::time_training_loops: rounds of one run of every loop at every batch, medians over them") {
  ModelCalibration m;
  m.batches = {8, 16};
  m.kernel_seconds = {1e-4, 1e-3};
  m.gossip_seconds = {1e-5, 1e-5};
  m.ring_loop_seconds = {9.0};  // an earlier attempt's figures are replaced
  std::vector<std::vector<std::string>> calls;
  std::vector<std::pair<int, double>> parts;
  // Each run's seconds are its call's number: the median over rounds then names which runs it kept.
  const dbench::validation::LoopRun run = [&](const std::vector<std::string>& overrides) {
    calls.push_back(overrides);
    const double n = static_cast<double>(calls.size());
    return dbench::validation::PartTimes{.total_s = n, .compute_s = 0.25 * n, .comm_s = 0.75 * n};
  };
  const auto has = [](const std::vector<std::string>& call, const std::string& set) {
    return std::find(call.begin(), call.end(), set) != call.end();
  };
  SUBCASE("workers with a core each: ring, all-reduce and one-peer, three rounds") {
    dbench::validation::time_training_loops(
        "mlp", 2, false, 3, run, m, [&](int round, double batch, const std::function<void()>& measure) {
          parts.emplace_back(round, batch);
          measure();
        });
    REQUIRE(calls.size() == 3 * 2 * 3);  // rounds x batches x loops
    CHECK(parts == std::vector<std::pair<int, double>>{{0, 8}, {0, 16}, {1, 8}, {1, 16}, {2, 8}, {2, 16}});
    // Round by round, batch by batch within a round, the loops in turn within a batch.
    for (std::size_t k = 0; k < calls.size(); ++k) {
      const std::size_t batch = (k / 3) % 2;
      const std::size_t loop = k % 3;
      CHECK(has(calls[k], batch == 0 ? "train.batch_per_worker=8" : "train.batch_per_worker=16"));
      CHECK(has(calls[k], "train.model=mlp"));
      CHECK(has(calls[k], "train.workers=2"));
      CHECK(has(calls[k], loop == 1 ? "algorithm.kind=centralized" : "algorithm.kind=dpsgd"));
      if (loop != 1) {
        CHECK(has(calls[k], loop == 0 ? "algorithm.graph=ring" : "algorithm.graph=one-peer-exponential"));
      }
    }
    // Runs long enough: 0.5 s at the kernels' estimate, never under kLoopIterations nor over 2000.
    CHECK(has(calls[0], "train.iterations=2000"));  // 4950 at 0.11 ms
    CHECK(has(calls[3], "train.iterations=495"));   // 0.5 s at 1.01 ms
    CHECK(has(calls[3], "train.eval_every=495"));   // one evaluation, at the end
    // The ring at batch 8 ran as calls 1, 7 and 13: its median is the second round's.
    CHECK(m.ring_loop_seconds == std::vector<double>{7.0, 10.0});
    CHECK(m.ring_loop_compute_s == std::vector<double>{0.25 * 7.0, 0.25 * 10.0});
    CHECK(m.allreduce_loop_seconds == std::vector<double>{8.0, 11.0});
    CHECK(m.allreduce_loop_comm_s == std::vector<double>{0.75 * 8.0, 0.75 * 11.0});
    CHECK(m.one_peer_loop_comm_s == std::vector<double>{0.75 * 9.0, 0.75 * 12.0});
    CHECK(m.exponential_loop_comm_s.empty());
  }
  SUBCASE("a part measured again replaces its own runs, and only those") {
    // Batch 8's part of round 2 runs twice (as after a drift): its first runs (calls 7-9) are not kept.
    dbench::validation::time_training_loops(
        "mlp", 2, false, 3, run, m, [&](int round, double batch, const std::function<void()>& measure) {
          measure();
          if (round == 1 && batch == 8) {
            measure();
          }
        });
    REQUIRE(calls.size() == 3 * 2 * 3 + 3);
    // The ring at batch 8 kept calls 1, 10 and 16 (not 7); at batch 16, calls 4, 13 and 19.
    CHECK(m.ring_loop_seconds == std::vector<double>{10.0, 13.0});
    CHECK(m.allreduce_loop_seconds == std::vector<double>{11.0, 14.0});
    CHECK(m.one_peer_loop_comm_s == std::vector<double>{0.75 * 12.0, 0.75 * 15.0});
  }
  SUBCASE("workers sharing cores: the directed exponential graph too") {
    m.kernel_seconds = {1e-2, 2e-2};  // 0.5 s is 50 and 25 iterations: kLoopIterations instead
    dbench::validation::time_training_loops("lenet", 4, true, 1, run, m);
    REQUIRE(calls.size() == 2 * 4);
    CHECK(has(calls[3], "algorithm.graph=exponential"));
    CHECK(has(calls[0], fmt::format("train.iterations={}", dbench::validation::kLoopIterations)));
    CHECK(m.exponential_loop_comm_s == std::vector<double>{0.75 * 4.0, 0.75 * 8.0});
  }
}
