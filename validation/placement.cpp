#include "validation/placement.hpp"

#include <sched.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <span>
#include <vector>

namespace dbench::validation {

int workers_per_core(runtime::Communicator& comm) {
  cpu_set_t mask;
  CPU_ZERO(&mask);
  const bool known = ::sched_getaffinity(0, sizeof(mask), &mask) == 0;
  const int cpus = known ? CPU_COUNT(&mask) : 0;
  // Per core, the workers pinned to it alone.
  std::vector<double> pinned(CPU_SETSIZE, 0.0);
  // The share of a worker allowed on several cores (or whose affinity is unknown).
  std::array<double, 1> spread{0.0};
  if (cpus == 1) {
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
      if (CPU_ISSET(cpu, &mask)) {
        pinned[static_cast<std::size_t>(cpu)] = 1.0;
        break;
      }
    }
  } else {
    const double size = comm.size();
    spread[0] = cpus > 1 ? std::ceil(size / cpus) : size;
  }
  comm.allreduce(std::span<double>(pinned), runtime::ReduceOp::sum);
  comm.allreduce(std::span<double>(spread), runtime::ReduceOp::max);
  const double most = std::max(*std::max_element(pinned.begin(), pinned.end()), spread[0]);
  return std::max(1, static_cast<int>(most));
}

}  // namespace dbench::validation
