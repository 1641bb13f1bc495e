// What a simulation will hold in memory at its peak, estimated from the config before the first large
// allocation, and the memory this process may still use: a run that cannot fit is refused up front, naming
// the key to change, instead of ending in std::bad_alloc (or the kernel's OOM killer) minutes in.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "experiments/config.hpp"

namespace dbench::experiments {

/// A run that would not fit in memory; the message gives the estimate, the keys that size it and the limit.
class MemoryError : public std::runtime_error {
 public:
  /// Wraps a complete, user-facing message.
  explicit MemoryError(const std::string& message) : std::runtime_error(message) {}
};

/// One part of a run's peak memory and the config key that sizes it most.
struct MemoryPart {
  std::string what;    ///< e.g. "replica matrices (parameters, gradients, momentum, mixing buffer)"
  std::string key;     ///< the key that sizes it most, e.g. "train.workers"
  std::string advice;  ///< what to change, e.g. "lower train.workers or train.mlp_hidden"
  double bytes = 0.0;
};

/// The parts of a run's peak memory.
struct MemoryEstimate {
  std::vector<MemoryPart> parts;
  /// Sum over the parts.
  double total_bytes() const;
  /// The largest part (the first when there is none larger).
  const MemoryPart& largest() const;
};

/// Shape of the trained numerics, known once the data set is loaded.
struct NumericsShape {
  std::int64_t parameters = 0;  ///< per replica
  std::int64_t inputs = 0;      ///< features per sample
  std::int64_t tensors = 1;     ///< parameter tensors per replica
};

/// Peak memory of `dbench simulate`: the per-iteration records of the schedule and its timing (with
/// `per_gpu_trace`, one row per GPU and iteration), plus — unless `numerics` is null (--timing-only) — the
/// replicas' [N, P] matrices, their batches and activations, and the metrics rows kept per evaluation.
MemoryEstimate simulate_memory(const ExperimentConfig& config, const NumericsShape* numerics,
                               bool per_gpu_trace);

/// Bytes this process may still allocate: the smallest of the kernel's MemAvailable, the cgroup's
/// memory.max less memory.current, and DBENCH_MEMORY_LIMIT (bytes, for shared machines and tests).
double available_memory_bytes();

/// Throws MemoryError when `estimate` exceeds `available`: the estimate, its largest part with its keys, and
/// the limit, in one line.
void check_memory(const MemoryEstimate& estimate, double available);

}  // namespace dbench::experiments
