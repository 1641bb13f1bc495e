#include "experiments/memory_estimate.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <sstream>

#include "sim/timing.hpp"
#include "topology/graph_policy.hpp"

namespace dbench::experiments {
namespace {

// Text of a CSV cell as the recorders print it (a double with its separator), and a short string's heap
// block: the sizes the per-iteration and per-evaluation records are estimated with.
constexpr double kCsvNumberBytes = 20.0;
constexpr double kStringBytes = 32.0;

std::string human(double bytes) {
  if (bytes >= 1e12) {
    return fmt::format("{:.1f} TB", bytes / 1e12);
  }
  if (bytes >= 1e9) {
    return fmt::format("{:.1f} GB", bytes / 1e9);
  }
  return fmt::format("{:.0f} MB", std::ceil(bytes / 1e6));
}

// The first number of a one-value file (cgroup files), or NaN ("max" and unreadable files included).
double read_number(const std::string& path) {
  std::ifstream in(path);
  std::string word;
  if (!(in >> word)) {
    return std::numeric_limits<double>::quiet_NaN();
  }
  char* end = nullptr;
  const double value = std::strtod(word.c_str(), &end);
  return end != word.c_str() && *end == '\0' ? value : std::numeric_limits<double>::quiet_NaN();
}

// MemAvailable of /proc/meminfo in bytes, or NaN.
double mem_available() {
  std::ifstream in("/proc/meminfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("MemAvailable:", 0) == 0) {
      std::istringstream fields(line.substr(13));
      double kib = 0.0;
      if (fields >> kib) {
        return kib * 1024.0;
      }
    }
  }
  return std::numeric_limits<double>::quiet_NaN();
}

// What the process's cgroup (v2) still allows, or NaN without a limit.
double cgroup_room() {
  std::ifstream in("/proc/self/cgroup");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("0::", 0) == 0) {
      const std::string dir = "/sys/fs/cgroup" + line.substr(3);
      const double max = read_number(dir + "/memory.max");
      const double current = read_number(dir + "/memory.current");
      if (std::isfinite(max) && std::isfinite(current)) {
        return std::max(0.0, max - current);
      }
    }
  }
  return std::numeric_limits<double>::quiet_NaN();
}

}  // namespace

double MemoryEstimate::total_bytes() const {
  double total = 0.0;
  for (const auto& p : parts) {
    total += p.bytes;
  }
  return total;
}

const MemoryPart& MemoryEstimate::largest() const {
  return *std::max_element(parts.begin(), parts.end(),
                           [](const MemoryPart& a, const MemoryPart& b) { return a.bytes < b.bytes; });
}

MemoryEstimate simulate_memory(const ExperimentConfig& config, const NumericsShape* numerics,
                               bool per_gpu_trace) {
  const auto workers = static_cast<double>(config.train.workers);
  const auto iterations = static_cast<double>(config.train.iterations);
  MemoryEstimate e;
  // The schedule (one step and its schedule.csv line per iteration) and its timing (a row and its trace.csv
  // line per iteration): both live until the results are written.
  e.parts.push_back({"the schedule and its timing, per iteration", "train.iterations",
                     "lower train.iterations",
                     iterations * (sizeof(topology::ScheduleStep) + sizeof(sim::IterationTiming) +
                                   4 * kStringBytes + 8 * kCsvNumberBytes)});
  if (per_gpu_trace) {
    e.parts.push_back({"the per-GPU trace (--per-gpu-trace)", "train.iterations",
                       "lower train.iterations or train.workers, or leave out --per-gpu-trace",
                       iterations * workers * (3 * sizeof(double) + 6 * kCsvNumberBytes)});
  }
  if (numerics == nullptr) {
    return e;
  }
  const auto parameters = static_cast<double>(numerics->parameters);
  const auto batch = static_cast<double>(config.train.batch_per_worker);
  double widths = 0.0;  // every layer's outputs: the MLP's activations, deltas and back-propagated inputs
  for (int w : config.train.mlp_hidden) {
    widths += static_cast<double>(w);
  }
  const std::string model_keys = config.train.model == "mlp"
                                     ? "lower train.workers or train.mlp_hidden"
                                     : "lower train.workers or choose a smaller train.model";
  // The [N, P] float matrices the engine allocates (core::ReplicaStore), and one replica's average for
  // evaluation: parameters and momentum always; the mixing buffer where replicas gossip; gradients, and all
  // batches in one matrix, for models without a fused step (the MLP steps each replica in place, from its
  // own batch in cache).
  const bool fused = config.train.model == "mlp";
  const bool gossip = config.algorithm.kind != "centralized";
  const double matrices = 2.0 + (gossip ? 1.0 : 0.0) + (fused ? 0.0 : 1.0);
  const std::string names =
      fmt::format("parameters, momentum{}{}", gossip ? ", mixing buffer" : "", fused ? "" : ", gradients");
  e.parts.push_back({fmt::format("replica matrices ({})", names), "train.workers", model_keys,
                     (matrices * workers + 1.0) * parameters * sizeof(float)});
  // Labels and losses per replica; without a fused step, also every batch and the model's activations.
  const double per_sample = fused ? 2.0 : static_cast<double>(numerics->inputs) + 3.0 * (widths + 16.0) + 2.0;
  e.parts.push_back({fused ? "labels and losses" : "batches and activations", "train.workers",
                     "lower train.workers or train.batch_per_worker",
                     workers * batch * per_sample * sizeof(float)});
  // The training set is indexed per sample, views included (its images are held once, whatever
  // train.augment_copies): the labels partitioned, the partition's copy of them, the shards' indices and
  // every replica's per-epoch order.
  if (const auto samples = train_samples(config.train)) {
    // The data set as loaded: every image's inputs (the synthetic task computes its samples and holds only
    // their labels).
    const bool computed = config.train.dataset == "synthetic";
    const double images = static_cast<double>(*samples / config.train.augment_copies);
    e.parts.push_back(
        {computed ? "the training set's labels (its samples are computed)" : "the training set's images",
         "train.dataset", computed ? "lower train.synthetic_samples" : "choose a smaller train.dataset",
         images * (sizeof(std::int32_t) +
                   (computed ? 0.0 : static_cast<double>(numerics->inputs) * sizeof(float)))});
    e.parts.push_back(
        {"the training set's sample indices (shards, per-epoch orders)", "train.augment_copies",
         "lower train.augment_copies",
         static_cast<double>(*samples) * (2 * sizeof(std::int32_t) + 2 * sizeof(std::int64_t))});
  }
  // Each evaluation keeps every replica's tensor norms (the metrics row and its replica_norms.csv lines).
  const double evaluations =
      std::floor(iterations / static_cast<double>(std::max(config.train.eval_every, 1))) + 2.0;
  e.parts.push_back(
      {"metrics rows, per evaluation", "train.eval_every", "raise train.eval_every or lower train.workers",
       evaluations * (workers * static_cast<double>(numerics->tensors) * (sizeof(double) + kCsvNumberBytes) +
                      static_cast<double>(numerics->tensors) * 4 * kCsvNumberBytes)});
  return e;
}

double available_memory_bytes() {
  double room = std::numeric_limits<double>::infinity();
  for (const double limit : {mem_available(), cgroup_room()}) {
    if (std::isfinite(limit)) {
      room = std::min(room, limit);
    }
  }
  if (const char* text = std::getenv("DBENCH_MEMORY_LIMIT"); text != nullptr && *text != '\0') {
    char* end = nullptr;
    errno = 0;
    const double limit = std::strtod(text, &end);
    if (*end != '\0' || errno != 0 || !std::isfinite(limit) || limit <= 0.0) {
      throw MemoryError(
          fmt::format("DBENCH_MEMORY_LIMIT: expected a positive number of bytes, got '{}'", text));
    }
    room = std::min(room, limit);
  }
  return room;
}

void check_memory(const MemoryEstimate& estimate, double available) {
  const double total = estimate.total_bytes();
  if (estimate.parts.empty() || total <= available) {
    return;
  }
  const MemoryPart& big = estimate.largest();
  throw MemoryError(fmt::format("{}: this run needs about {} of memory ({} of it {}) but {} is available; {}",
                                big.key, human(total), human(big.bytes), big.what, human(available),
                                big.advice));
}

}  // namespace dbench::experiments
