#include "runtime/checkpoint.hpp"

#include <fmt/core.h>

#include <cstring>
#include <fstream>
#include <iterator>
#include <system_error>
#include <type_traits>

#include "results/atomic_file.hpp"
#include "runtime/errors.hpp"

namespace dbench::runtime {
namespace {

namespace fs = std::filesystem;

// 02: with the shared momentum's state.
constexpr char kMagic[8] = {'D', 'B', 'C', 'K', 'P', 'T', '0', '2'};
constexpr const char* kLatest = "LATEST";

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

class Reader {
 public:
  Reader(std::string bytes, fs::path file) : bytes_(std::move(bytes)), file_(std::move(file)) {}
  template <class T>
  T value() {
    T v;
    take(&v, sizeof(T));
    return v;
  }
  template <class T>
  std::vector<T> array() {
    const auto n = value<std::uint64_t>();
    if (n > bytes_.size() / sizeof(T)) {
      damaged("array length");
    }
    std::vector<T> v(n);
    take(v.data(), n * sizeof(T));
    return v;
  }
  std::string text() {
    const auto n = value<std::uint64_t>();
    if (n > bytes_.size()) {
      damaged("text length");
    }
    std::string s(n, '\0');
    take(s.data(), n);
    return s;
  }
  bool at_end() const { return pos_ == bytes_.size(); }
  [[noreturn]] void damaged(const char* what) const {
    throw CheckpointError(fmt::format("{}: damaged checkpoint ({}); resume from another one or start over",
                                      file_.string(), what));
  }

 private:
  void take(void* out, std::size_t n) {
    if (bytes_.size() - pos_ < n) {
      damaged("truncated");
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
  std::error_code ec;
  fs::remove_all(final_dir, ec);
  fs::rename(staging, final_dir, ec);
  if (ec) {
    throw CheckpointError(
        fmt::format("{}: cannot publish the checkpoint: {}", final_dir.string(), ec.message()));
  }
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
  std::ifstream in(dir / kLatest);
  std::string name;
  if (!(in >> name) || name.rfind("step-", 0) != 0 || !fs::is_directory(dir / name)) {
    return std::nullopt;
  }
  return std::stoll(name.substr(5));
}

WorkerState read_checkpoint(const fs::path& dir, int rank) {
  const auto iteration = latest_checkpoint(dir);
  if (!iteration) {
    throw CheckpointError(fmt::format("{}: no complete checkpoint to resume from", dir.string()));
  }
  const fs::path file = part_file(dir / step_name(*iteration), rank);
  std::ifstream in(file, std::ios::binary);
  if (!in) {
    throw CheckpointError(
        fmt::format("{}: missing; the checkpoint was written by fewer workers?", file.string()));
  }
  Reader r(std::string(std::istreambuf_iterator<char>(in), {}), file);
  for (std::size_t k = 0; k < sizeof(kMagic); ++k) {
    if (r.value<char>() != kMagic[k]) {
      r.damaged(k < 6 ? "not a dbench checkpoint" : "written by another version of dbench");
    }
  }
  WorkerState s;
  s.run_key = r.text();
  s.rank = r.value<int>();
  s.workers = r.value<int>();
  s.iterations_done = r.value<std::int64_t>();
  s.sgd_steps = r.value<std::uint64_t>();
  s.last_lr = r.value<double>();
  s.last_train_loss = r.value<double>();
  s.best_test_accuracy = r.value<double>();
  s.final_test_accuracy = r.value<double>();
  s.final_test_loss = r.value<double>();
  s.observations = r.array<topology::PolicyObservation>();
  s.params = r.array<float>();
  s.momentum = r.array<float>();
  s.shared_previous = r.array<float>();
  s.shared_momentum = r.array<float>();
  s.shared_lrs = r.array<double>();
  s.trace = r.array<StepTrace>();
  s.observer_state = r.text();
  if (!r.at_end() || s.rank != rank) {
    r.damaged("unexpected content");
  }
  return s;
}

}  // namespace dbench::runtime
