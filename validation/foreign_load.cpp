#include "validation/foreign_load.hpp"

#include <fmt/core.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <sstream>
#include <string>

namespace dbench::validation {
namespace {

double seconds(const timeval& t) {
  return static_cast<double>(t.tv_sec) + 1e-6 * static_cast<double>(t.tv_usec);
}

double cpu_seconds(int who) {
  rusage usage{};
  if (::getrusage(who, &usage) != 0) {
    return 0.0;
  }
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

/// The first line of /proc/stat: "cpu user nice system idle iowait irq softirq steal guest guest_nice" in
/// clock ticks; busy is all but idle and iowait (guest time is inside user already).
double machine_busy_seconds() {
  std::ifstream stat("/proc/stat");
  std::string line;
  if (!std::getline(stat, line) || !line.starts_with("cpu ")) {
    return 0.0;
  }
  std::istringstream fields(line.substr(4));
  double user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0;
  if (!(fields >> user >> nice >> system >> idle >> iowait >> irq >> softirq)) {
    return 0.0;
  }
  fields >> steal;  // absent on old kernels
  const long ticks = ::sysconf(_SC_CLK_TCK);
  return ticks > 0 ? (user + nice + system + irq + softirq + steal) / static_cast<double>(ticks) : 0.0;
}

}  // namespace

CpuClock read_cpu_clock() {
  CpuClock c;
  c.machine_busy_s = machine_busy_seconds();
  c.own_s = cpu_seconds(RUSAGE_SELF) + cpu_seconds(RUSAGE_CHILDREN);
  c.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  return c;
}

double foreign_cores(const CpuClock& before, const CpuClock& after) {
  const double wall = after.wall_s - before.wall_s;
  if (wall <= 0.0 || before.machine_busy_s <= 0.0 || after.machine_busy_s <= 0.0) {
    return 0.0;
  }
  const double others = (after.machine_busy_s - before.machine_busy_s) - (after.own_s - before.own_s);
  return std::max(0.0, others / wall);
}

std::string shared_machine_refusal(double foreign_cores, unsigned cores, double largest_error,
                                   const std::string& figures) {
  if (foreign_cores <= kForeignCores || largest_error <= kSharedErrorBound) {
    return {};
  }
  return fmt::format(
      "validate: other processes kept {:.2f} of the machine's {} cores busy while the runs were measured and "
      "the largest error is {:.1f} %, beyond the {:.0f} % a shared machine is held to: the runs measured the "
      "neighbours as much as the machine, so the figures in {} are no verdict; run it again on a machine to "
      "itself",
      foreign_cores, cores, 100.0 * largest_error, 100.0 * kSharedErrorBound, figures);
}

}  // namespace dbench::validation
