// Where the workers of a calibration run: how many share one core, which the calibrated platform's
// workers_per_core carries so that the simulator charges their turns on it.
#pragma once

#include "runtime/communicator.hpp"

namespace dbench::validation {

/// The most workers of `comm` that take turns on one core: every worker's CPU affinity, gathered. A worker
/// pinned to one core counts there; one allowed on several counts as sharing them evenly with the others
/// (ceil(workers / its cores)). Every worker must call it; all get the same answer.
int workers_per_core(runtime::Communicator& comm);

}  // namespace dbench::validation
