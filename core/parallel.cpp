#include "core/parallel.hpp"

#include <sched.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>

namespace dbench::core {
namespace {

/// The CPUs of this process's affinity mask; nullopt where it cannot be read.
std::optional<unsigned> affinity_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof(set), &set) != 0) {
    return std::nullopt;
  }
  const int count = CPU_COUNT(&set);
  return count > 0 ? std::optional<unsigned>(static_cast<unsigned>(count)) : std::nullopt;
}

/// The path of this process's cgroup in the hierarchy whose controllers' line in /proc/self/cgroup
/// satisfies `matches` ("0::/a/b" for v2, "4:cpu,cpuacct:/a/b" for v1).
template <class Matches>
std::optional<std::string> cgroup_path(Matches matches) {
  std::ifstream in("/proc/self/cgroup");
  for (std::string line; std::getline(in, line);) {
    const auto first = line.find(':');
    const auto second = first == std::string::npos ? std::string::npos : line.find(':', first + 1);
    if (second != std::string::npos && matches(line.substr(first + 1, second - first - 1))) {
      return line.substr(second + 1);
    }
  }
  return std::nullopt;
}

/// CPUs' worth of time a quota allows per period, rounded up; nullopt when unlimited or unreadable.
std::optional<double> quota_cpus(double quota, double period) {
  if (!(quota > 0.0) || !(period > 0.0)) {
    return std::nullopt;
  }
  return std::ceil(quota / period);
}

/// The smallest CPU quota on the way from this process's cgroup up to the root: cgroup v2's cpu.max
/// ("max 100000" or "200000 100000"), else v1's cpu.cfs_quota_us / cpu.cfs_period_us.
std::optional<double> cgroup_quota_cpus() {
  std::optional<double> least;
  const auto keep = [&least](std::optional<double> cpus) {
    if (cpus && (!least || *cpus < *least)) {
      least = cpus;
    }
  };
  if (const auto v2 = cgroup_path([](const std::string& controllers) { return controllers.empty(); })) {
    for (std::string dir = *v2;; dir = dir.substr(0, dir.rfind('/'))) {
      std::ifstream in("/sys/fs/cgroup" + dir + "/cpu.max");
      std::string quota;
      double period = 0.0;
      if (in >> quota >> period && quota != "max") {
        keep(quota_cpus(std::stod(quota), period));
      }
      if (dir.empty() || dir == "/") {
        break;
      }
    }
  }
  const auto is_cpu = [](const std::string& controllers) {
    std::size_t begin = 0;
    while (begin <= controllers.size()) {
      const auto end = std::min(controllers.find(',', begin), controllers.size());
      if (controllers.compare(begin, end - begin, "cpu") == 0) {
        return true;
      }
      begin = end + 1;
    }
    return false;
  };
  if (const auto v1 = cgroup_path(is_cpu)) {
    for (std::string dir = *v1;; dir = dir.substr(0, dir.rfind('/'))) {
      std::ifstream quota_in("/sys/fs/cgroup/cpu" + dir + "/cpu.cfs_quota_us");
      std::ifstream period_in("/sys/fs/cgroup/cpu" + dir + "/cpu.cfs_period_us");
      double quota = 0.0;
      double period = 0.0;
      if (quota_in >> quota && period_in >> period) {
        keep(quota_cpus(quota, period));
      }
      if (dir.empty() || dir == "/") {
        break;
      }
    }
  }
  return least;
}

unsigned count_available_cpus() noexcept {
  try {
    unsigned cpus = affinity_cpus().value_or(std::max(1u, std::thread::hardware_concurrency()));
    if (const auto quota = cgroup_quota_cpus(); quota && *quota < static_cast<double>(cpus)) {
      cpus = static_cast<unsigned>(*quota);
    }
    return std::max(1u, cpus);
  } catch (...) {
    // A cgroup file in an unexpected form: the affinity mask alone.
    return std::max(1u, affinity_cpus().value_or(1u));
  }
}

}  // namespace

unsigned available_cpus() noexcept {
  static const unsigned cpus = count_available_cpus();
  return cpus;
}

StealingRanges::StealingRanges(std::size_t count, std::size_t workers)
    : ranges_(std::max<std::size_t>(workers, 1)) {
  if (count > std::numeric_limits<std::uint32_t>::max()) {
    throw std::length_error("StealingRanges: more than 2^32 - 1 indices");
  }
  const std::size_t n = ranges_.size();
  for (std::size_t w = 0; w < n; ++w) {
    const std::uint64_t front = count * w / n;
    const std::uint64_t back = count * (w + 1) / n;
    ranges_[w].bounds.store(front << 32 | back, std::memory_order_relaxed);
  }
}

bool StealingRanges::pop(std::size_t worker, std::size_t& index) noexcept {
  constexpr std::uint64_t kLow = 0xFFFFFFFFu;
  // Own range first, from the front.
  std::atomic<std::uint64_t>& own = ranges_[worker].bounds;
  std::uint64_t b = own.load(std::memory_order_relaxed);
  while ((b >> 32) < (b & kLow)) {
    if (own.compare_exchange_weak(b, b + (std::uint64_t{1} << 32), std::memory_order_relaxed)) {
      index = static_cast<std::size_t>(b >> 32);
      return true;
    }
  }
  // Then the back of whichever range has the most left, until none has any.
  for (;;) {
    std::size_t victim = ranges_.size();
    std::uint64_t most = 0;
    for (std::size_t v = 0; v < ranges_.size(); ++v) {
      const std::uint64_t r = ranges_[v].bounds.load(std::memory_order_relaxed);
      const std::uint64_t left = (r >> 32) < (r & kLow) ? (r & kLow) - (r >> 32) : 0;
      if (left > most) {
        most = left;
        victim = v;
      }
    }
    if (victim == ranges_.size()) {
      return false;
    }
    std::atomic<std::uint64_t>& theirs = ranges_[victim].bounds;
    std::uint64_t r = theirs.load(std::memory_order_relaxed);
    while ((r >> 32) < (r & kLow)) {
      if (theirs.compare_exchange_weak(r, r - 1, std::memory_order_relaxed)) {
        index = static_cast<std::size_t>((r & kLow) - 1);
        return true;
      }
    }
  }
}

}  // namespace dbench::core
