// Every file DBench writes keeps its bytes: a small training sweep, a timing-only sweep, a run of the CPU
// workers with a checkpoint, `dbench graphs` and a per-GPU trace each hash, file by file, to the digests
// recorded here. Only what measures the machine or names the output folder is taken out before hashing:
// wall-clock columns and keys (named per case), the folder's path, and the seconds a log line prints. A
// change to how a file is written, read back or staged must leave every other byte as it was; a change that
// means to alter a file re-records its digest here and says why.
#include <doctest/doctest.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "runtime/checkpoint.hpp"
#include "support/files.hpp"
#include "support/recorded_kernels.hpp"
#include "support/run_dbench.hpp"
#include "support/temp_dir.hpp"

namespace {

namespace fs = std::filesystem;
using dbench::testing::fnv1a;

/// What a case takes out before hashing: CSV columns and JSON keys by name.
struct Exclusions {
  std::set<std::string> columns;
};

/// `text` with every occurrence of `from` replaced by `to`.
std::string replace_all(std::string text, const std::string& from, const std::string& to) {
  if (from.empty()) {
    return text;
  }
  for (std::size_t at = 0; (at = text.find(from, at)) != std::string::npos; at += to.size()) {
    text.replace(at, from.size(), to);
  }
  return text;
}

/// Splits one CSV line at commas outside double quotes.
std::vector<std::string> split_cells(const std::string& line) {
  std::vector<std::string> cells(1);
  bool quoted = false;
  for (const char c : line) {
    if (c == '"') {
      quoted = !quoted;
    }
    if (c == ',' && !quoted) {
      cells.emplace_back();
    } else {
      cells.back() += c;
    }
  }
  return cells;
}

/// A CSV file without the excluded columns.
std::string drop_columns(const std::string& text, const Exclusions& exclusions) {
  std::istringstream in(text);
  std::string line;
  std::vector<bool> keep;
  std::string out;
  bool header = true;
  while (std::getline(in, line)) {
    const std::vector<std::string> cells = split_cells(line);
    if (header) {
      for (const std::string& cell : cells) {
        keep.push_back(!exclusions.columns.contains(cell));
      }
      header = false;
    }
    std::string kept;
    for (std::size_t i = 0; i < cells.size(); ++i) {
      if (i >= keep.size() || keep[i]) {
        kept += (kept.empty() && (i == 0 || out.empty()) ? "" : ",") + cells[i];
      }
    }
    out += kept + "\n";
  }
  return out;
}

/// A JSON document without the excluded keys, at any depth, dumped in one canonical form.
std::string drop_keys(const std::string& text, const Exclusions& exclusions) {
  nlohmann::json document = nlohmann::json::parse(text);
  const auto strip = [&](auto&& self, nlohmann::json& node) -> void {
    if (node.is_object()) {
      for (const std::string& key : exclusions.columns) {
        node.erase(key);
      }
      for (auto& [key, value] : node.items()) {
        self(self, value);
      }
    } else if (node.is_array()) {
      for (nlohmann::json& value : node) {
        self(self, value);
      }
    }
  };
  strip(strip, document);
  return document.dump(1);
}

/// A checkpoint part's fields that do not measure the machine: all but its trace's times and the opaque
/// record of results so far (which holds them too), in one text form.
std::string checkpoint_fields(const fs::path& file) {
  const int rank = std::stoi(file.stem().string().substr(std::string("rank-").size()));
  const dbench::runtime::WorkerState state =
      dbench::runtime::read_checkpoint(file.parent_path().parent_path(), rank);
  std::ostringstream out;
  out.precision(17);
  out << state.run_key << ' ' << state.rank << ' ' << state.workers << ' ' << state.iterations_done << ' '
      << state.sgd_steps << ' ' << state.last_lr << ' ' << state.last_train_loss << ' '
      << state.best_test_accuracy << ' ' << state.final_test_accuracy << ' ' << state.final_test_loss << ' '
      << state.observations.size() << ' ' << state.trace.size() << '\n';
  for (const auto* values :
       {&state.params, &state.momentum, &state.shared_previous, &state.shared_momentum}) {
    for (const float v : *values) {
      out << v << ' ';
    }
    out << '\n';
  }
  for (const double lr : state.shared_lrs) {
    out << lr << ' ';
  }
  for (const dbench::runtime::StepTrace& step : state.trace) {
    out << step.iteration << ' ' << step.bytes_sent << ' ' << step.loss << ' ' << step.lr << ' ';
  }
  return out.str();
}

/// `text` with every "<digits>.<digits> s" (seconds of wall-clock time in a log line: "after 6 iterations
/// (0.0 s)", "(0.00 s of timing)") written as "T s".
std::string without_seconds(const std::string& text) {
  const auto digit = [](char c) { return c >= '0' && c <= '9'; };
  std::string out;
  for (std::size_t i = 0; i < text.size();) {
    std::size_t j = i;
    while (j < text.size() && digit(text[j])) {
      ++j;
    }
    std::size_t k = j + 1;
    while (j > i && k < text.size() && text[j] == '.' && digit(text[k])) {
      ++k;
    }
    const bool seconds = j > i && k > j + 1 && text.compare(k, 2, " s") == 0 &&
                         (k + 2 == text.size() || !std::isalnum(static_cast<unsigned char>(text[k + 2])));
    if (seconds) {
      out += "T s";
      i = k + 2;
    } else if (j > i) {
      out.append(text, i, j - i);
      i = j;
    } else {
      out += text[i++];
    }
  }
  return out;
}

/// The bytes of `file` that do not depend on the machine's speed or the output folder's name.
std::string normalized(const fs::path& file, const fs::path& root, const Exclusions& exclusions) {
  std::string text = dbench::testing::read_file(file);
  text = replace_all(text, fs::absolute(root).string(), "ROOT");
  text = replace_all(text, root.string(), "ROOT");
  const std::string extension = file.extension().string();
  if (extension == ".csv") {
    return drop_columns(text, exclusions);
  }
  if (extension == ".json") {
    return drop_keys(text, exclusions);
  }
  if (extension == ".bin") {
    return checkpoint_fields(file);
  }
  if (extension == ".log") {
    // "after 6 iterations (0.0 s)", "(0.00 s of timing)": seconds of wall-clock time.
    return without_seconds(text);
  }
  return text;
}

/// Every regular file under `root` (hidden ones included), relative to it, with its digest.
std::map<std::string, std::uint64_t> digests(const fs::path& root, const Exclusions& exclusions) {
  std::map<std::string, std::uint64_t> result;
  for (const fs::directory_entry& entry : fs::recursive_directory_iterator(root)) {
    if (entry.is_regular_file()) {
      result[fs::relative(entry.path(), root).string()] = fnv1a(normalized(entry.path(), root, exclusions));
    }
  }
  return result;
}

/// One recorded file.
struct Recorded {
  const char* path;
  std::uint64_t digest;
};

/// Checks the files under `root` against the recorded ones: the same names, each with its digest. On a
/// mismatch prints the whole table as it should be recorded.
void check_digests(const fs::path& root, const Exclusions& exclusions,
                   const std::vector<Recorded>& recorded) {
  const std::map<std::string, std::uint64_t> found = digests(root, exclusions);
  std::map<std::string, std::uint64_t> expected;
  for (const Recorded& file : recorded) {
    expected[file.path] = file.digest;
  }
  bool same = true;
  for (const auto& [path, digest] : expected) {
    CAPTURE(path);
    const auto it = found.find(path);
    CHECK_MESSAGE(it != found.end(), "not written");
    if (it != found.end()) {
      CHECK(it->second == digest);
      same = same && it->second == digest;
    } else {
      same = false;
    }
  }
  for (const auto& [path, digest] : found) {
    CAPTURE(path);
    CHECK_MESSAGE(expected.contains(path), "written, but not recorded");
    same = same && expected.contains(path);
  }
  if (!same) {
    std::cout << "digests of " << root << " as found:\n";
    for (const auto& [path, digest] : found) {
      char hex[19];
      std::snprintf(hex, sizeof hex, "0x%016llx", static_cast<unsigned long long>(digest));
      std::cout << "    {\"" << path << "\", " << hex << "},\n";
    }
  }
}

/// Runs `dbench <arguments>` in `folder` under the recorded OpenBLAS core; false (and a skip line) when this
/// machine cannot compute the recorded numbers. `environment` is put before the command (VAR=VALUE ...).
bool run_recorded(const fs::path& folder, const std::string& arguments, const std::string& environment = "") {
  const auto run = dbench::testing::run_command("cd \"" + folder.string() + "\" && " + environment +
                                                dbench::testing::recorded_core_environment() + "\"" +
                                                DBENCH_EXE + "\" " + arguments);
  CAPTURE(arguments);
  CAPTURE(run.output);
  REQUIRE(run.status == 0);
  if (run.output.find(dbench::testing::recorded_core_line()) == std::string::npos) {
    std::cout << DBENCH_SKIP_MARKER << " this OpenBLAS did not load its " << dbench::testing::kRecordedCore
              << " kernels when asked to\n";
    return false;
  }
  return true;
}

/// Whether this CPU can compute the recorded digests; prints the skip line when not.
bool machine_computes_recorded_numbers() {
  if (dbench::testing::cpu_runs_recorded_kernels()) {
    return true;
  }
  std::cout << DBENCH_SKIP_MARKER << " digests were recorded with OpenBLAS core "
            << dbench::testing::kRecordedCore << ", which needs AVX-512\n";
  return false;
}

/// Wall-clock figures of simulated runs and of sweeps.
const Exclusions kSimulatedWall{
    {"wall_seconds", "numerics_wall_seconds_per_iteration", "timing_wall_seconds"}};

/// Wall-clock figures of the CPU workers: every time they measure.
const Exclusions kMeasuredWall{{"wall_seconds", "compute_s", "comm_s", "total_s", "elapsed_s",
                                "seconds_per_iteration", "samples_per_second"}};

}  // namespace

TEST_CASE("results: every file of a small training sweep is byte-identical to the recorded one") {
  if (!machine_computes_recorded_numbers()) {
    return;
  }
  const dbench::testing::TempDir temp;
  dbench::testing::write_file(temp.path() / "small.toml",
                              "name = \"small\"\n[set]\n\"train.iterations\" = 6\n\"train.eval_every\" = 2\n"
                              "\"train.eval_samples\" = 200\n\"train.replica_eval_samples\" = 32\n"
                              "\"train.workers\" = 4\n\"platform.timing_model\" = \"mlp\"\n"
                              "\"algorithm.global_every\" = 3\n\"algorithm.ada_shared_momentum\" = true\n"
                              "[grid]\nalgorithm = [\"centralized\", \"ring\", \"ada\"]\n");
  if (!run_recorded(temp.path(), "sweep small.toml --out out -j 2 -q")) {
    return;
  }
  check_digests(temp.path() / "out", kSimulatedWall,
                {{".dbench-sweep", 0xb1f2c92ed4d3ed7e},
                 {".dbench-sweep.lock", 0xcbf29ce484222325},
                 {"configs/ada.toml", 0xbca9067f6a1ccdce},
                 {"configs/centralized.toml", 0x0b6145658fd6b7bb},
                 {"configs/ring.toml", 0x32658d33397f6e80},
                 {"logs/ada.log", 0xdfd6878cd5cd1c0f},
                 {"logs/centralized.log", 0x4dde2036577860c2},
                 {"logs/ring.log", 0x8f683f571ceb7551},
                 {"plots/accuracy-edges-w4.svg", 0xb32d37d7d2938baa},
                 {"plots/accuracy-iteration-w4.svg", 0x3470db4bbcbdcbc4},
                 {"plots/accuracy-norm-variance-w4.svg", 0x21b356ccfa664bf5},
                 {"plots/accuracy-time-w4.svg", 0xe0d65927269dcd7d},
                 {"plots/accuracy-workers.svg", 0x52f02dcafae068d5},
                 {"plots/ada-schedule-0-w4.svg", 0xd192800bc707d66e},
                 {"plots/efficiency-workers.svg", 0x2e8beb94b092a54c},
                 {"plots/norm-variance-w4.svg", 0xfcea25ea4c5420bb},
                 {"plots/throughput-workers.svg", 0xf10d31d5e1f62834},
                 {"report.html", 0x9ad240827d93054e},
                 {"report.md", 0x0e7e7491d2d5cc8c},
                 {"runs/ada/.dbench-results", 0x4654dca0e3da2b3b},
                 {"runs/ada/accuracy_time.csv", 0x2489d4dfeed8ef45},
                 {"runs/ada/config.toml", 0xbca9067f6a1ccdce},
                 {"runs/ada/metrics.csv", 0xefb5825b943d87bc},
                 {"runs/ada/replica_norms.csv", 0x9adeb872f08908ed},
                 {"runs/ada/schedule.csv", 0x897d331df1785dd8},
                 {"runs/ada/summary.json", 0xa02059416e174bec},
                 {"runs/ada/trace.csv", 0x3d829782769ecd69},
                 {"runs/centralized/.dbench-results", 0x4654dca0e3da2b3b},
                 {"runs/centralized/accuracy_time.csv", 0x8451559ed8c66f7b},
                 {"runs/centralized/config.toml", 0x0b6145658fd6b7bb},
                 {"runs/centralized/metrics.csv", 0xaf676b8da4a945f0},
                 {"runs/centralized/replica_norms.csv", 0x5be027cc1b1a2d60},
                 {"runs/centralized/schedule.csv", 0x449546e39afeee83},
                 {"runs/centralized/summary.json", 0x7871b3b1a99edc3e},
                 {"runs/centralized/trace.csv", 0xd2afed1bf7736742},
                 {"runs/ring/.dbench-results", 0x4654dca0e3da2b3b},
                 {"runs/ring/accuracy_time.csv", 0x1263b52ca1cd1b17},
                 {"runs/ring/config.toml", 0x32658d33397f6e80},
                 {"runs/ring/metrics.csv", 0x8d4170b790cee943},
                 {"runs/ring/replica_norms.csv", 0x4349b56e6a1e354e},
                 {"runs/ring/schedule.csv", 0x2c9a8f337378ae63},
                 {"runs/ring/summary.json", 0x18ac0ad6fe31638b},
                 {"runs/ring/trace.csv", 0xedd6501b9d2c7c4a},
                 {"summary.csv", 0xdfca95de4eee725f},
                 {"sweep.toml", 0xdd30fcda4eff56a5}});
}

TEST_CASE("results: every file of a small timing-only sweep is byte-identical to the recorded one") {
  if (!machine_computes_recorded_numbers()) {
    return;
  }
  const dbench::testing::TempDir temp;
  dbench::testing::write_file(temp.path() / "timing.toml",
                              "name = \"timing\"\ntiming_only = true\n[set]\n\"train.workers\" = 64\n"
                              "\"train.iterations\" = 4\n\"platform.allreduce\" = \"auto\"\n[grid]\n"
                              "\"platform.preset\" = [\"frontier\", \"dgx-h100\"]\n"
                              "\"platform.timing_model\" = [\"resnet18\", \"bert_base\"]\n"
                              "algorithm = [\"centralized\", \"one-peer-exponential\"]\n");
  if (!run_recorded(temp.path(), "sweep timing.toml --out out -j 2 -q")) {
    return;
  }
  check_digests(
      temp.path() / "out", kSimulatedWall,
      {{".dbench-sweep", 0xb1f2c92ed4d3ed7e},
       {".dbench-sweep.lock", 0xcbf29ce484222325},
       {"configs/preset-dgx-h100_timing_model-bert_base_centralized.toml", 0xe183d71a0021283f},
       {"configs/preset-dgx-h100_timing_model-bert_base_one-peer-exponential.toml", 0xa656cebe1daf08a4},
       {"configs/preset-dgx-h100_timing_model-resnet18_centralized.toml", 0xfcc836251e8947cf},
       {"configs/preset-dgx-h100_timing_model-resnet18_one-peer-exponential.toml", 0x1ced2f5e4e3686be},
       {"configs/preset-frontier_timing_model-bert_base_centralized.toml", 0xaba1449a81304627},
       {"configs/preset-frontier_timing_model-bert_base_one-peer-exponential.toml", 0x1df12e3b208c5c5c},
       {"configs/preset-frontier_timing_model-resnet18_centralized.toml", 0x569f03eab4ba6787},
       {"configs/preset-frontier_timing_model-resnet18_one-peer-exponential.toml", 0xfdeefdc63230e6f6},
       {"logs/preset-dgx-h100_timing_model-bert_base_centralized.log", 0xf18acc07b2c7c7fd},
       {"logs/preset-dgx-h100_timing_model-bert_base_one-peer-exponential.log", 0xd88ee6929fcb8fd9},
       {"logs/preset-dgx-h100_timing_model-resnet18_centralized.log", 0x253c9e8831eb2048},
       {"logs/preset-dgx-h100_timing_model-resnet18_one-peer-exponential.log", 0x14a0bae115d54f36},
       {"logs/preset-frontier_timing_model-bert_base_centralized.log", 0xb12664b29fc23e93},
       {"logs/preset-frontier_timing_model-bert_base_one-peer-exponential.log", 0x028313dadf96ee8d},
       {"logs/preset-frontier_timing_model-resnet18_centralized.log", 0x33d36ed876102c9b},
       {"logs/preset-frontier_timing_model-resnet18_one-peer-exponential.log", 0x3ac41515db66dd14},
       {"plots/efficiency-size-1.svg", 0xc59ce13253017b38},
       {"plots/efficiency-size-2.svg", 0x66a19099c2b5a7b8},
       {"report.html", 0x8c25622c5fcf7be3},
       {"report.md", 0x4ad4a341baefe7ea},
       {"runs/preset-dgx-h100_timing_model-bert_base_centralized/.dbench-results", 0x4654dca0e3da2b3b},
       {"runs/preset-dgx-h100_timing_model-bert_base_centralized/config.toml", 0xe183d71a0021283f},
       {"runs/preset-dgx-h100_timing_model-bert_base_centralized/schedule.csv", 0x50e54dfa84d31b1e},
       {"runs/preset-dgx-h100_timing_model-bert_base_centralized/summary.json", 0x6cd79eff0d475983},
       {"runs/preset-dgx-h100_timing_model-bert_base_centralized/trace.csv", 0x730bab4e93392c0b},
       {"runs/preset-dgx-h100_timing_model-bert_base_one-peer-exponential/.dbench-results",
        0x4654dca0e3da2b3b},
       {"runs/preset-dgx-h100_timing_model-bert_base_one-peer-exponential/config.toml", 0xa656cebe1daf08a4},
       {"runs/preset-dgx-h100_timing_model-bert_base_one-peer-exponential/schedule.csv", 0x471fa6f07be60742},
       {"runs/preset-dgx-h100_timing_model-bert_base_one-peer-exponential/summary.json", 0xb9ea941b489e9e4e},
       {"runs/preset-dgx-h100_timing_model-bert_base_one-peer-exponential/trace.csv", 0x48cff6b9130697bb},
       {"runs/preset-dgx-h100_timing_model-resnet18_centralized/.dbench-results", 0x4654dca0e3da2b3b},
       {"runs/preset-dgx-h100_timing_model-resnet18_centralized/config.toml", 0xfcc836251e8947cf},
       {"runs/preset-dgx-h100_timing_model-resnet18_centralized/schedule.csv", 0x50e54dfa84d31b1e},
       {"runs/preset-dgx-h100_timing_model-resnet18_centralized/summary.json", 0x7b829b1bb02041f3},
       {"runs/preset-dgx-h100_timing_model-resnet18_centralized/trace.csv", 0xf4143026604f03d8},
       {"runs/preset-dgx-h100_timing_model-resnet18_one-peer-exponential/.dbench-results",
        0x4654dca0e3da2b3b},
       {"runs/preset-dgx-h100_timing_model-resnet18_one-peer-exponential/config.toml", 0x1ced2f5e4e3686be},
       {"runs/preset-dgx-h100_timing_model-resnet18_one-peer-exponential/schedule.csv", 0x471fa6f07be60742},
       {"runs/preset-dgx-h100_timing_model-resnet18_one-peer-exponential/summary.json", 0x174e457ae9216463},
       {"runs/preset-dgx-h100_timing_model-resnet18_one-peer-exponential/trace.csv", 0x06c9f64db1a73cb0},
       {"runs/preset-frontier_timing_model-bert_base_centralized/.dbench-results", 0x4654dca0e3da2b3b},
       {"runs/preset-frontier_timing_model-bert_base_centralized/config.toml", 0xaba1449a81304627},
       {"runs/preset-frontier_timing_model-bert_base_centralized/schedule.csv", 0x50e54dfa84d31b1e},
       {"runs/preset-frontier_timing_model-bert_base_centralized/summary.json", 0xca66922b16923593},
       {"runs/preset-frontier_timing_model-bert_base_centralized/trace.csv", 0x36d558484e1b9953},
       {"runs/preset-frontier_timing_model-bert_base_one-peer-exponential/.dbench-results",
        0x4654dca0e3da2b3b},
       {"runs/preset-frontier_timing_model-bert_base_one-peer-exponential/config.toml", 0x1df12e3b208c5c5c},
       {"runs/preset-frontier_timing_model-bert_base_one-peer-exponential/schedule.csv", 0x471fa6f07be60742},
       {"runs/preset-frontier_timing_model-bert_base_one-peer-exponential/summary.json", 0x4be7b823cf0fdfb1},
       {"runs/preset-frontier_timing_model-bert_base_one-peer-exponential/trace.csv", 0x729729b0b6445535},
       {"runs/preset-frontier_timing_model-resnet18_centralized/.dbench-results", 0x4654dca0e3da2b3b},
       {"runs/preset-frontier_timing_model-resnet18_centralized/config.toml", 0x569f03eab4ba6787},
       {"runs/preset-frontier_timing_model-resnet18_centralized/schedule.csv", 0x50e54dfa84d31b1e},
       {"runs/preset-frontier_timing_model-resnet18_centralized/summary.json", 0xf50ea38da052c0a1},
       {"runs/preset-frontier_timing_model-resnet18_centralized/trace.csv", 0x10b46f414adf076e},
       {"runs/preset-frontier_timing_model-resnet18_one-peer-exponential/.dbench-results",
        0x4654dca0e3da2b3b},
       {"runs/preset-frontier_timing_model-resnet18_one-peer-exponential/config.toml", 0xfdeefdc63230e6f6},
       {"runs/preset-frontier_timing_model-resnet18_one-peer-exponential/schedule.csv", 0x471fa6f07be60742},
       {"runs/preset-frontier_timing_model-resnet18_one-peer-exponential/summary.json", 0x34638c0667a23263},
       {"runs/preset-frontier_timing_model-resnet18_one-peer-exponential/trace.csv", 0xae9add83971c2b3e},
       {"summary.csv", 0x1be0a7794b5d3de7},
       {"sweep.toml", 0xcdaa4325e8aa2cd6}});
}

TEST_CASE(
    "results: every file of a CPU workers' run and its checkpoint is byte-identical to the recorded one") {
  if (!machine_computes_recorded_numbers()) {
    return;
  }
  const dbench::testing::TempDir temp;
  const fs::path config = fs::path(DBENCH_SOURCE_DIR) / "experiments" / "configs" / "quickstart.toml";
  if (!run_recorded(temp.path(),
                    "train \"" + config.string() +
                        "\" --local 2 --set train.workers=2 --set train.iterations=6 --set "
                        "train.eval_every=2 --set train.eval_samples=200 --checkpoint-every 3 "
                        "--checkpoint-dir ckpt --out out -q",
                    // Under the sanitizers, MPI workers report leaks inside Open MPI's plugins and exit
                    // non-zero (see tests/runtime/CMakeLists.txt): leak checking is off for them.
                    "ASAN_OPTIONS=detect_leaks=0 ")) {
    return;
  }
  check_digests(temp.path() / "out", kMeasuredWall,
                {{".dbench-results", 0x4654dca0e3da2b3b},
                 {"config.toml", 0x5a3e0585b01b2747},
                 {"metrics.csv", 0x8ba0264dcc6100c7},
                 {"replica_norms.csv", 0x94730ded45779563},
                 {"schedule.csv", 0x9ae229d2afd3ceb3},
                 {"summary.json", 0x2d700b903ec4803f},
                 {"trace.csv", 0x4fd38bc4156955e6},
                 {"trace_worker.csv", 0xa8921d7d8c40dccb}});
  check_digests(temp.path() / "ckpt", kMeasuredWall,
                {{"LATEST", 0xa09df49f165c0502},
                 {"step-0000000006/rank-00000.bin", 0xa709857e33b0afb6},
                 {"step-0000000006/rank-00001.bin", 0xcbf7aedad9892206}});
}

TEST_CASE("results: dbench graphs and a per-GPU timing trace are byte-identical to the recorded ones") {
  if (!machine_computes_recorded_numbers()) {
    return;
  }
  const dbench::testing::TempDir temp;
  if (!run_recorded(temp.path(), "graphs --nodes 16 --out graphs")) {
    return;
  }
  check_digests(temp.path() / "graphs", kSimulatedWall,
                {{".dbench-results", 0x4654dca0e3da2b3b},
                 {"graphs.csv", 0x484fe52d88148cc7},
                 {"graphs.json", 0xc97e173b92aa1cb4},
                 {"graphs.md", 0x550e88a7a8fc0bd8}});
  REQUIRE(run_recorded(temp.path(),
                       "simulate --timing-only --per-gpu-trace --set train.workers=8 --set "
                       "train.iterations=3 --out trace -q"));
  check_digests(temp.path() / "trace", kSimulatedWall,
                {{".dbench-results", 0x4654dca0e3da2b3b},
                 {"config.toml", 0xec7e870ce0a8ae67},
                 {"schedule.csv", 0xe6f3befa491e1b7a},
                 {"summary.json", 0xd5d0316898b1fd6c},
                 {"trace.csv", 0x351b1ec11c3217ea},
                 {"trace_worker.csv", 0xd770bba023a3a02c}});
}
