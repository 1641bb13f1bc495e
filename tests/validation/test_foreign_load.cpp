// The CPU time other processes take while DBench measures: a process that is not DBench's counts, DBench's
// own waited-for children do not.
#include <doctest/doctest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <string>

#include "support/approx.hpp"
#include "validation/foreign_load.hpp"

namespace {

using dbench::validation::CpuClock;
using dbench::validation::foreign_cores;
using dbench::validation::read_cpu_clock;

void spin_for(double seconds) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  volatile unsigned long n = 0;
  while (std::chrono::steady_clock::now() < until) {
    n = n + 1;
  }
}

/// Spins for `seconds` in a grandchild that is not this process's descendant once its parent has gone: its
/// time is never this process's own.
void spin_elsewhere(double seconds) {
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    if (::fork() == 0) {
      spin_for(seconds);
    }
    ::_exit(0);
  }
  int status = 0;
  ::waitpid(child, &status, 0);
}

}  // namespace

TEST_CASE("validation::foreign_cores: the machine's busy time less this process's own, per second") {
  const CpuClock before{.machine_busy_s = 100.0, .own_s = 10.0, .wall_s = 1000.0};
  // Over 10 s the machine was busy 14 core-seconds, 4 of them this process's: 1 core of others'.
  CHECK(foreign_cores(before, {.machine_busy_s = 114.0, .own_s = 14.0, .wall_s = 1010.0}) ==
        dbench::testing::approx(1.0));
  // Only this process: none of others'; the ticks' rounding never makes it negative.
  CHECK(foreign_cores(before, {.machine_busy_s = 103.99, .own_s = 14.0, .wall_s = 1010.0}) == 0.0);
  // No machine time read, or no time passed: nothing can be said, so nothing is.
  CHECK(foreign_cores({.machine_busy_s = 0.0, .own_s = 0.0, .wall_s = 1.0},
                      {.machine_busy_s = 0.0, .own_s = 0.0, .wall_s = 2.0}) == 0.0);
  CHECK(foreign_cores(before, before) == 0.0);
}

TEST_CASE("validation::foreign_cores: a process that is not DBench's counts, its own waited-for child not") {
  const CpuClock start = read_cpu_clock();
  REQUIRE(start.machine_busy_s > 0.0);
  // A child of its own that spins for a second and is waited for: this process's time.
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    spin_for(1.0);
    ::_exit(0);
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  const CpuClock own = read_cpu_clock();
  CHECK(own.own_s - start.own_s >= 0.8);
  CHECK(foreign_cores(start, own) < 0.5);
  // A process that is not its descendant spinning for 1.5 s while this one sleeps: about one core of others'.
  spin_elsewhere(1.5);
  ::usleep(1'500'000);
  const CpuClock later = read_cpu_clock();
  CHECK(foreign_cores(own, later) > 0.6);
}

TEST_CASE("validation::shared_machine_refusal: a busy neighbour and an error beyond 15 % give no verdict") {
  using dbench::validation::shared_machine_refusal;
  // The busy core of a validation that reported 45.6 % as a result.
  const std::string line = shared_machine_refusal(0.98, 2, 0.456, "out/validation.md");
  CHECK(line ==
        "validate: other processes kept 0.98 of the machine's 2 cores busy while the runs were measured and "
        "the largest error is 45.6 %, beyond the 15 % a shared machine is held to: the runs measured the "
        "neighbours as much as the machine, so the figures in out/validation.md are no verdict; run it again "
        "on a machine to itself");
  CHECK(line.find('\n') == std::string::npos);
  // Within the bound beside a neighbour, or any error on a machine to itself: reported, not refused.
  CHECK(shared_machine_refusal(0.98, 2, 0.15, "v.md").empty());
  CHECK(shared_machine_refusal(0.25, 2, 0.456, "v.md").empty());
  CHECK(shared_machine_refusal(0.0, 2, 0.9, "v.md").empty());
}
