// Every worker's per-iteration trace on every worker, so that rank 0 can write trace_worker.csv.
#pragma once

#include <span>
#include <vector>

#include "runtime/checkpoint.hpp"
#include "runtime/communicator.hpp"

namespace dbench::runtime {

/// All workers' trace rows, indexed [worker][row]: each worker fills its rows of a zero table and an
/// all-reduce sums them (workers may hold different row counts; shorter ones are padded with zero rows).
std::vector<std::vector<StepTrace>> gather_traces(Communicator& comm, int rank, int workers,
                                                  std::span<const StepTrace> mine);

}  // namespace dbench::runtime
