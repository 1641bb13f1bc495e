// The calibration's timing machinery on one process: the statistics kept of the rounds, and the rounds
// themselves on a single worker (call counts and lower bounds only: nothing here asserts how fast a machine
// is).
#include <doctest/doctest.h>

#include <array>
#include <chrono>
#include <cmath>
#include <functional>
#include <thread>
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
