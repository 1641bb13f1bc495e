// Fork-join over an index range with std::jthread. Work is split by index, never by thread, so results do not
// depend on the thread count as long as each index is computed the same way.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
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
