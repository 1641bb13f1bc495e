#include "validation/placement.hpp"

#include <sched.h>

#include <algorithm>
#include <cmath>
#include <span>
#include <vector>

namespace dbench::validation {

Placement worker_placement(runtime::Communicator& comm) {
  cpu_set_t mask;
  CPU_ZERO(&mask);
  const bool known = ::sched_getaffinity(0, sizeof(mask), &mask) == 0;
  const int cpus = known ? CPU_COUNT(&mask) : 0;
  const auto size = static_cast<std::size_t>(comm.size());
  // Per rank, the core it is pinned to plus one (0: not pinned to one core), and, for workers allowed on
  // several cores, the share of each.
  std::vector<double> pinned(size + 1, 0.0);
  if (cpus == 1) {
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
      if (CPU_ISSET(cpu, &mask)) {
        pinned[static_cast<std::size_t>(comm.rank())] = cpu + 1.0;
        break;
      }
    }
  } else {
    const double workers = comm.size();
    pinned[size] = cpus > 1 ? std::ceil(workers / cpus) : workers;
  }
  comm.allreduce(std::span<double>(pinned), runtime::ReduceOp::max);
  Placement p;
  std::vector<int> cores;
  for (std::size_t r = 0; r < size; ++r) {
    if (pinned[r] > 0.0) {
      cores.push_back(static_cast<int>(pinned[r]) - 1);
    }
  }
  std::sort(cores.begin(), cores.end());
  int most = 0;
  for (auto it = cores.begin(); it != cores.end();) {
    const auto next = std::upper_bound(it, cores.end(), *it);
    most = std::max(most, static_cast<int>(next - it));
    it = next;
  }
  p.workers_per_core = std::max({1, most, static_cast<int>(pinned[size])});
  cores.erase(std::unique(cores.begin(), cores.end()), cores.end());
  const auto count = cores.size();
  bool round_robin = pinned[size] == 0.0 && count > 0;
  for (std::size_t r = 0; r < size && round_robin; ++r) {
    round_robin = static_cast<int>(pinned[r]) - 1 == cores[r % count];
  }
  p.round_robin_cores = round_robin ? static_cast<int>(count) : 0;
  return p;
}

}  // namespace dbench::validation
