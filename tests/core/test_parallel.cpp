// The thread count every parallel loop uses by default (the CPUs this process may run on), and how work is
// spread over the threads.
#include <doctest/doctest.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "core/parallel.hpp"

namespace core = dbench::core;

TEST_CASE("core::available_cpus: no more than the affinity mask holds, at least one") {
  cpu_set_t set;
  CPU_ZERO(&set);
  REQUIRE(::sched_getaffinity(0, sizeof(set), &set) == 0);
  const auto allowed = static_cast<unsigned>(CPU_COUNT(&set));
  CHECK(core::available_cpus() >= 1);
  CHECK(core::available_cpus() <= allowed);
  CHECK(core::resolve_threads(0) == core::available_cpus());
  CHECK(core::resolve_threads(5) == 5);
}

TEST_CASE("core::StealingRanges: every index once; a slow worker's tail goes to the others") {
  constexpr std::size_t kCount = 1000;
  core::StealingRanges ranges(kCount, 4);
  std::vector<int> taken(kCount, 0);
  std::vector<std::size_t> per_worker(4, 0);
  // Worker 0 takes one index and stops (a worker slowed to a halt); the others finish alone.
  std::size_t index = 0;
  REQUIRE(ranges.pop(0, index));
  CHECK(index == 0);
  ++taken[index];
  ++per_worker[0];
  for (std::size_t round = 0; round < kCount; ++round) {
    for (std::size_t w = 1; w < 4; ++w) {
      if (ranges.pop(w, index)) {
        REQUIRE(index < kCount);
        ++taken[index];
        ++per_worker[w];
      }
    }
  }
  CHECK(std::all_of(taken.begin(), taken.end(), [](int n) { return n == 1; }));
  // Worker 0's 249 remaining indices were shared out; the others took about a third each.
  for (std::size_t w = 1; w < 4; ++w) {
    CHECK(per_worker[w] >= 330);
  }
  CHECK_FALSE(ranges.pop(0, index));
}

TEST_CASE("core::parallel_for_each_stealing: every index once, next is what the thread takes next") {
  for (const unsigned threads : {1u, 2u, 3u, 8u}) {
    CAPTURE(threads);
    constexpr std::size_t kCount = 5000;
    std::vector<std::atomic<int>> taken(kCount);
    std::mutex mutex;
    std::map<std::thread::id, std::vector<std::pair<std::size_t, std::size_t>>> calls;
    core::parallel_for_each_stealing(threads, kCount, [&](std::size_t i, std::size_t next) {
      taken[i].fetch_add(1);
      const std::lock_guard lock(mutex);
      calls[std::this_thread::get_id()].emplace_back(i, next);
    });
    CHECK(std::all_of(taken.begin(), taken.end(), [](const std::atomic<int>& n) { return n.load() == 1; }));
    for (const auto& [thread, sequence] : calls) {
      for (std::size_t k = 0; k + 1 < sequence.size(); ++k) {
        CHECK(sequence[k].second == sequence[k + 1].first);
      }
      CHECK(sequence.back().second == core::kNoIndex);
    }
  }
  // No indices: the body never runs.
  core::parallel_for_each_stealing(2, 0, [](std::size_t, std::size_t) { FAIL("called"); });
}
