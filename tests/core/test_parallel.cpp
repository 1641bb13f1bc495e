// The thread count every parallel loop uses by default: the CPUs this process may run on.
#include <doctest/doctest.h>
#include <sched.h>

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
