// Fork-join over an index range with std::jthread. Work is split by index, never by thread, so results do not
// depend on the thread count as long as each index is computed the same way.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <thread>
#include <vector>

namespace dbench::core {

/// The CPUs this process may use, at least 1: those of its affinity mask (taskset, a Slurm allocation's
/// binding, a container's cpuset), fewer where its cgroup's CPU quota (cgroup v2 cpu.max, v1
/// cpu.cfs_quota_us) allows less than that many CPUs' time, rounded up. Read once, at the first call.
unsigned available_cpus() noexcept;

/// The thread count to use for `requested`: itself, or every CPU this process may use when 0.
inline unsigned resolve_threads(unsigned requested) noexcept {
  return requested != 0 ? requested : available_cpus();
}

/// Calls body(begin, end) on `threads` contiguous slices of [0, count), one per thread, the caller taking the
/// first; rethrows the first exception a slice threw after all have finished.
template <class Body>
void parallel_for(unsigned threads, std::size_t count, Body&& body) {
  const std::size_t workers = std::min<std::size_t>(resolve_threads(threads), count);
  if (workers <= 1) {
    if (count > 0) {
      body(std::size_t{0}, count);
    }
    return;
  }
  std::vector<std::exception_ptr> errors(workers);
  auto slice = [&](std::size_t w) {
    try {
      body(count * w / workers, count * (w + 1) / workers);
    } catch (...) {
      errors[w] = std::current_exception();
    }
  };
  {
    std::vector<std::jthread> pool;
    pool.reserve(workers - 1);
    for (std::size_t w = 1; w < workers; ++w) {
      pool.emplace_back(slice, w);
    }
    slice(0);
  }
  for (const std::exception_ptr& e : errors) {
    if (e) {
      std::rethrow_exception(e);
    }
  }
}

/// [0, count) split into one contiguous range per worker, each worker taking indices from the front of its
/// own range and, once that is empty, from the back of the range with the most left: a worker slowed by other
/// work on its CPU, or running on a slower core, leaves its tail to the others. Workers stay on long runs of
/// neighbouring indices (neighbouring columns or rows of a matrix), which a split into small interleaved
/// chunks loses. Which worker computes which index varies from run to run, so results must not depend on it.
class StealingRanges {
 public:
  StealingRanges(std::size_t count, std::size_t workers);

  /// The next index for `worker` into `index`, or false when every range is empty.
  bool pop(std::size_t worker, std::size_t& index) noexcept;

  /// Calls body(index, next) for every index `worker` pops, where `next` is the index it computes after this
  /// one, already popped (no other worker will compute it), or kNoIndex: a body may start loading next's data
  /// while it computes index.
  template <class Body>
  void for_each(std::size_t worker, Body&& body);

 private:
  // (front << 32) | back of one worker's range, on a cache line of its own.
  struct alignas(64) Range {
    std::atomic<std::uint64_t> bounds{0};
  };
  std::vector<Range> ranges_;
};

/// StealingRanges::for_each's `next` when a worker has no index left.
inline constexpr std::size_t kNoIndex = static_cast<std::size_t>(-1);

template <class Body>
void StealingRanges::for_each(std::size_t worker, Body&& body) {
  std::size_t index = 0;
  bool more = pop(worker, index);
  while (more) {
    std::size_t next = kNoIndex;
    more = pop(worker, next);
    body(index, more ? next : kNoIndex);
    index = next;
  }
}

/// Calls body(index, next) for every index in [0, count) on `threads` threads, spread by StealingRanges (see
/// its for_each for `next`). Rethrows the first exception after all have finished.
template <class Body>
void parallel_for_each_stealing(unsigned threads, std::size_t count, Body&& body) {
  const std::size_t workers = std::min<std::size_t>(resolve_threads(threads), count);
  StealingRanges ranges(count, workers);
  parallel_for(threads, workers, [&](std::size_t w, std::size_t) { ranges.for_each(w, body); });
}

/// Calls body(index) for every index in [0, count), handed out one at a time to `threads` threads: for items
/// of uneven cost. Rethrows the first exception after all have finished.
template <class Body>
void parallel_for_each_index(unsigned threads, std::size_t count, Body&& body) {
  std::atomic<std::size_t> next{0};
  parallel_for(threads, std::min<std::size_t>(resolve_threads(threads), count),
               [&](std::size_t, std::size_t) {
                 for (std::size_t i = next.fetch_add(1); i < count; i = next.fetch_add(1)) {
                   body(i);
                 }
               });
}

}  // namespace dbench::core
