// Where the workers of a calibration run: how many share one core, which the calibrated platform's
// shared_core_turns is bounded by, and which cores they are pinned to, which its cores_per_node carries so
// that the simulator sees which workers take turns together.
#pragma once

#include "runtime/communicator.hpp"

namespace dbench::validation {

struct Placement {
  /// The most workers that take turns on one core. A worker pinned to one core counts there; one allowed on
  /// several counts as sharing them evenly with the others (ceil(workers / its cores)).
  int workers_per_core = 1;
  /// The cores the workers are pinned to, where every worker is pinned to one and rank r sits on the r mod
  /// cores-th of them (in the order of their numbers), as mpirun --map-by core places them; 0 otherwise (the
  /// placement is not known to be round-robin).
  int round_robin_cores = 0;
};

/// Every worker's CPU affinity, gathered. Every worker of `comm` must call it; all get the same answer.
Placement worker_placement(runtime::Communicator& comm);

}  // namespace dbench::validation
