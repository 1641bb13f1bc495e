// The CPU time other processes took while DBench measured: a neighbour that keeps a core busy moves every
// timing taken beside it, whether or not the reference kernel saw its speed change.
#pragma once

#include <string>

namespace dbench::validation {

/// Cores other processes may keep busy on average while a validation measures before the machine counts as
/// shared: a desktop's background stays well below a quarter of a core, a busy neighbour takes a whole one.
inline constexpr double kForeignCores = 0.25;
/// The largest error of seconds per iteration a shared machine's validation is reported with; beyond it the
/// error is the neighbours' as much as the model's.
inline constexpr double kSharedErrorBound = 0.15;

/// A reading of the machine's CPU time against this process's own.
struct CpuClock {
  double machine_busy_s = 0.0;  ///< every CPU's non-idle time since boot (/proc/stat: user to steal)
  double own_s = 0.0;           ///< this process's CPU time and that of its descendants it has waited for
  double wall_s = 0.0;          ///< a steady clock
};

/// Reads the clocks now; machine_busy_s is 0 where /proc/stat cannot be read.
CpuClock read_cpu_clock();

/// Cores that processes other than this one and its waited-for descendants kept busy on average between two
/// readings (0 where the machine's time could not be read or no time passed). Descendants still running at
/// `after` count as other processes.
double foreign_cores(const CpuClock& before, const CpuClock& after);

/// Where other processes kept more than kForeignCores of the machine's `cores` busy and the largest error of
/// seconds per iteration exceeds kSharedErrorBound: the one line with which validate refuses a verdict on the
/// figures it wrote to `figures`; empty otherwise.
std::string shared_machine_refusal(double foreign_cores, unsigned cores, double largest_error,
                                   const std::string& figures);

}  // namespace dbench::validation
