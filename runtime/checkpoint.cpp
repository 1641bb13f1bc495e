#include "runtime/checkpoint.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <limits>
#include <system_error>
#include <type_traits>

#include "models/input_file.hpp"
#include "results/atomic_file.hpp"
#include "results/results_dir.hpp"
#include "runtime/errors.hpp"

namespace dbench::runtime {
namespace {

namespace fs = std::filesystem;

// 02: with the shared momentum's state.
constexpr char kMagic[8] = {'D', 'B', 'C', 'K', 'P', 'T', '0', '2'};
constexpr const char* kLatest = "LATEST";
// LATEST holds one step name and a newline.
constexpr std::size_t kMaxLatestBytes = 256;

std::string step_name(std::int64_t iteration) {
  return fmt::format("step-{:010}", iteration);
}

fs::path part_file(const fs::path& step_dir, int rank) {
  return step_dir / fmt::format("rank-{:05}.bin", rank);
}

/// Appends plain values and arrays to a byte string (the format is this machine's byte order: checkpoints
/// resume on the machine type that wrote them).
class Writer {
 public:
  template <class T>
  void value(const T& v) {
    static_assert(std::is_trivially_copyable_v<T>);
    const auto* p = reinterpret_cast<const char*>(&v);
    bytes_.append(p, sizeof(T));
  }
  template <class T>
  void array(const std::vector<T>& v) {
    value(static_cast<std::uint64_t>(v.size()));
    if (!v.empty()) {
      bytes_.append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
    }
  }
  void text(const std::string& s) {
    value(static_cast<std::uint64_t>(s.size()));
    bytes_ += s;
  }
  const std::string& bytes() const { return bytes_; }

 private:
  std::string bytes_;
};

/// Reads back what Writer wrote; every count is checked against the bytes left and the caller's bound before
/// anything is allocated, and every error names the file and the field.
class Reader {
 public:
  Reader(std::string bytes, fs::path file) : bytes_(std::move(bytes)), file_(std::move(file)) {}
  template <class T>
  T value(const char* field) {
    T v;
    take(&v, sizeof(T), field);
    return v;
  }
  template <class T>
  std::vector<T> array(const char* field, std::uint64_t max) {
    const auto n = value<std::uint64_t>(field);
    if (n > max) {
      damaged(field, fmt::format("{} values where this run has at most {}", n, max));
    }
    if (n > left() / sizeof(T)) {
      damaged(field, fmt::format("{} values but only {} bytes left in the file", n, left()));
    }
    std::vector<T> v(n);
    take(v.data(), n * sizeof(T), field);
    return v;
  }
  std::string text(const char* field) {
    const auto n = value<std::uint64_t>(field);
    if (n > left()) {
      damaged(field, fmt::format("{} bytes but only {} left in the file", n, left()));
    }
    std::string s(n, '\0');
    take(s.data(), n, field);
    return s;
  }
  bool at_end() const { return pos_ == bytes_.size(); }
  [[noreturn]] void damaged(const char* field, const std::string& reason) const {
    throw CheckpointError(
        fmt::format("{}: damaged checkpoint ({}: {}); resume from another one or start over", file_.string(),
                    field, reason));
  }

 private:
  std::size_t left() const { return bytes_.size() - pos_; }
  void take(void* out, std::size_t n, const char* field) {
    if (left() < n) {
      damaged(field, "truncated");
    }
    if (n == 0) {
      return;  // an empty array's data() may be null, which memcpy must not see
    }
    std::memcpy(out, bytes_.data() + pos_, n);
    pos_ += n;
  }
  std::string bytes_;
  fs::path file_;
  std::size_t pos_ = 0;
};

void write_file_atomically(const fs::path& file, const std::string& bytes) {
  try {
    results::write_file_atomically(file, bytes);
  } catch (const std::runtime_error& e) {
    throw CheckpointError(fmt::format("{} (disk full or no permission?)", e.what()));
  }
}

}  // namespace

void write_checkpoint_part(const fs::path& dir, std::int64_t iteration, const WorkerState& state) {
  const fs::path staging = dir / (step_name(iteration) + ".partial");
  std::error_code ec;
  fs::create_directories(staging, ec);
  if (ec) {
    throw CheckpointError(
        fmt::format("{}: cannot create the checkpoint directory: {}", staging.string(), ec.message()));
  }
  Writer w;
  for (char c : kMagic) {
    w.value(c);
  }
  w.text(state.run_key);
  w.value(state.rank);
  w.value(state.workers);
  w.value(state.iterations_done);
  w.value(state.sgd_steps);
  w.value(state.last_lr);
  w.value(state.last_train_loss);
  w.value(state.best_test_accuracy);
  w.value(state.final_test_accuracy);
  w.value(state.final_test_loss);
  w.array(state.observations);
  w.array(state.params);
  w.array(state.momentum);
  w.array(state.shared_previous);
  w.array(state.shared_momentum);
  w.array(state.shared_lrs);
  w.array(state.trace);
  w.text(state.observer_state);
  write_file_atomically(part_file(staging, state.rank), w.bytes());
}

void publish_checkpoint(const fs::path& dir, std::int64_t iteration) {
  const fs::path staging = dir / (step_name(iteration) + ".partial");
  const fs::path final_dir = dir / step_name(iteration);
  // Every worker wrote its part into the one staging directory of this step; it replaces a checkpoint of the
  // same step (a resumed run that saves it again) in one step, so that LATEST never names a missing one.
  try {
    results::replace_directory(staging, final_dir, "checkpoint");
  } catch (const results::ResultsDirError& e) {
    throw CheckpointError(fmt::format("{}: cannot publish the checkpoint: {}", final_dir.string(), e.what()));
  }
  std::error_code ec;
  write_file_atomically(dir / kLatest, step_name(iteration) + "\n");
  // Only now is the new checkpoint the one a resume reads; older ones (and stale partial ones) can go.
  for (const auto& entry : fs::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("step-", 0) == 0 && name != step_name(iteration)) {
      fs::remove_all(entry.path(), ec);
    }
  }
}

std::optional<std::int64_t> latest_checkpoint(const fs::path& dir) {
  const fs::path latest = dir / kLatest;
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(latest, ec))) {
    return std::nullopt;
  }
  std::string name;
  try {
    name = models::read_input_file(latest, "checkpoint index", kMaxLatestBytes);
  } catch (const models::InputFileError& e) {
    throw CheckpointError(e.what());
  }
  while (!name.empty() && (name.back() == '\n' || name.back() == ' ')) {
    name.pop_back();
  }
  // "step-" and ten digits, as step_name writes it.
  std::int64_t iteration = -1;
  const char* digits = name.data() + std::min<std::size_t>(name.size(), 5);
  const auto [end, error] = std::from_chars(digits, name.data() + name.size(), iteration);
  if (!name.starts_with("step-") || error != std::errc() || end != name.data() + name.size() ||
      iteration < 0 || step_name(iteration) != name) {
    throw CheckpointError(
        fmt::format("{}: damaged checkpoint index (expected step-NNNNNNNNNN, got '{}'); "
                    "resume from another one or start over",
                    latest.string(), name.substr(0, 64)));
  }
  if (!fs::is_directory(dir / name, ec)) {
    return std::nullopt;
  }
  return iteration;
}

WorkerState read_checkpoint(const fs::path& dir, int rank, const CheckpointLimits& limits) {
  const auto iteration = latest_checkpoint(dir);
  if (!iteration) {
    throw CheckpointError(fmt::format("{}: no complete checkpoint to resume from", dir.string()));
  }
  const fs::path file = part_file(dir / step_name(*iteration), rank);
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(file, ec))) {
    throw CheckpointError(
        fmt::format("{}: missing; the checkpoint was written by fewer workers?", file.string()));
  }
  std::string bytes;
  try {
    bytes = models::read_input_file(file, "checkpoint", std::numeric_limits<std::size_t>::max());
  } catch (const models::InputFileError& e) {
    throw CheckpointError(e.what());
  }
  Reader r(std::move(bytes), file);
  for (std::size_t k = 0; k < sizeof(kMagic); ++k) {
    if (r.value<char>("header") != kMagic[k]) {
      r.damaged("header", k < 6 ? "not a dbench checkpoint" : "written by another version of dbench");
    }
  }
  WorkerState s;
  s.file = file;
  s.run_key = r.text("run_key");
  s.rank = r.value<int>("rank");
  if (s.rank != rank) {
    r.damaged("rank", fmt::format("{} in the file of rank {}", s.rank, rank));
  }
  s.workers = r.value<int>("workers");
  if (s.workers < 1 || s.rank >= s.workers) {
    r.damaged("workers", fmt::format("{} in the file of rank {}", s.workers, rank));
  }
  s.iterations_done = r.value<std::int64_t>("iterations_done");
  if (s.iterations_done != *iteration || s.iterations_done > limits.iterations) {
    r.damaged("iterations_done",
              fmt::format("{} in the checkpoint of iteration {}", s.iterations_done, *iteration));
  }
  const auto done = static_cast<std::uint64_t>(s.iterations_done);
  s.sgd_steps = r.value<std::uint64_t>("sgd_steps");
  if (s.sgd_steps > done) {
    r.damaged("sgd_steps", fmt::format("{} steps in {} iterations", s.sgd_steps, done));
  }
  s.last_lr = r.value<double>("last_lr");
  s.last_train_loss = r.value<double>("last_train_loss");
  s.best_test_accuracy = r.value<double>("best_test_accuracy");
  s.final_test_accuracy = r.value<double>("final_test_accuracy");
  s.final_test_loss = r.value<double>("final_test_loss");
  // At most one observation per iteration, and the policy's first one before any.
  s.observations = r.array<topology::PolicyObservation>("observations", done + 1);
  for (const auto& o : s.observations) {
    if (o.iteration < 0 || o.iteration > s.iterations_done) {
      r.damaged("observations", fmt::format("an observation of iteration {}", o.iteration));
    }
  }
  s.params = r.array<float>("params", limits.params);
  s.momentum = r.array<float>("momentum", limits.params);
  s.shared_previous = r.array<float>("shared_previous", limits.params);
  s.shared_momentum = r.array<float>("shared_momentum", limits.params);
  s.shared_lrs = r.array<double>("shared_lrs", done);
  s.trace = r.array<StepTrace>("trace", done);
  s.observer_state = r.text("observer_state");
  if (!r.at_end()) {
    r.damaged("observer_state", "unexpected bytes after it");
  }
  return s;
}

}  // namespace dbench::runtime
