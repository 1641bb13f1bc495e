// Hostile input files and values: devices, FIFOs, huge and extreme numbers, SimGrid settings SimGrid would
// abort on, damaged checkpoints. Each is refused with one line naming the file, key or option and the reason,
// a non-zero status, and neither a crash nor a hang.
#include <doctest/doctest.h>
#include <fmt/core.h>
#include <sys/stat.h>

#include <filesystem>
#include <stdexcept>
#include <string>

#include "experiments/config.hpp"
#include "experiments/timing_setup.hpp"
#include "experiments/train_recorder.hpp"
#include "sim/platform.hpp"
#include "sim/timing.hpp"
#include "support/files.hpp"
#include "support/run_dbench.hpp"
#include "support/temp_dir.hpp"

namespace fs = std::filesystem;
namespace sim = dbench::sim;
using dbench::testing::CommandResult;
using dbench::testing::TempDir;
using dbench::testing::write_file;

namespace {

/// `dbench <arguments>`, stopped after 60 s: a hang shows as status 124 instead of a stuck suite.
CommandResult run_bounded(const std::string& arguments) {
  return dbench::testing::run_command(fmt::format("timeout 60 \"{}\" {}", DBENCH_EXE, arguments));
}

/// A timing-only simulation of the embedded defaults with `extra` options, written under `temp`.
CommandResult simulate(const TempDir& temp, const std::string& extra) {
  return run_bounded(
      fmt::format("simulate --timing-only -q --set train.workers=8 --set train.iterations=2 --out \"{}\" {}",
                  (temp.path() / "out").string(), extra));
}

/// The quickstart config, quoted for the shell.
std::string quickstart() {
  return fmt::format("\"{}\"",
                     (fs::path(DBENCH_SOURCE_DIR) / "experiments" / "configs" / "quickstart.toml").string());
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

/// Refused: a non-zero status that is not the timeout's, one line, holding every one of `parts`.
void check_refused(const CommandResult& result, std::initializer_list<std::string> parts) {
  CAPTURE(result.output);
  CHECK(result.status != 0);
  CHECK(result.status != 124);
  CHECK(result.output.find('\n') == result.output.size() - 1);
  for (const auto& part : parts) {
    CHECK(contains(result.output, part));
  }
}

constexpr const char* kProfile = R"(name = "tiny"
forward_flops_per_sample = 1000.0
[[tensors]]
name = "fc.weight"
shape = [10, 20]
)";

}  // namespace

TEST_CASE("experiments::hostile inputs: a profile file must be a regular file under 16 MiB") {
  const TempDir temp;
  // A name ending in .toml that is /dev/zero: read without end before the check.
  const fs::path zero = temp.path() / "zero.toml";
  fs::create_symlink("/dev/zero", zero);
  check_refused(simulate(temp, "--set platform.timing_model=" + zero.string()),
                {"platform.timing_model", zero.string(), "not a regular file"});
  // A FIFO that no process writes: blocked forever in open() before.
  const fs::path fifo = temp.path() / "fifo.toml";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  check_refused(simulate(temp, "--set platform.timing_model=" + fifo.string()),
                {fifo.string(), "not a regular file"});
  // A folder, and a file past the limit (sparse: no disk is spent).
  const fs::path folder = temp.path() / "folder.json";
  fs::create_directory(folder);
  check_refused(simulate(temp, "--set platform.timing_model=" + folder.string()),
                {folder.string(), "it is a directory"});
  const fs::path big = temp.path() / "big.toml";
  write_file(big, kProfile);
  fs::resize_file(big, (std::size_t{16} << 20) + 1);
  check_refused(simulate(temp, "--set platform.timing_model=" + big.string()),
                {big.string(), "cannot read profile file: larger than the 16 MiB limit"});
  // The same profile under the limit is timed.
  const fs::path good = temp.path() / "good.toml";
  write_file(good, kProfile);
  const auto timed = simulate(temp, "--set platform.timing_model=" + good.string());
  CAPTURE(timed.output);
  CHECK(timed.status == 0);
}

TEST_CASE("experiments::hostile inputs: extreme but finite platform numbers are refused with their range") {
  const TempDir temp;
  check_refused(simulate(temp, "--set platform.gpu_flops_per_s=1e-300"),
                {"platform.gpu_flops_per_s", "[1000, 1e+18] FLOP/s", "1e-300"});
  check_refused(simulate(temp, "--set platform.iteration_overhead_s=1e308"),
                {"platform.iteration_overhead_s", "[0, 1e+06] s"});
  check_refused(simulate(temp, "--set platform.nic_bandwidth_Bps=1e-300"),
                {"platform.nic_bandwidth_Bps", "[1000, 1e+15] B/s"});
  check_refused(simulate(temp, "--set platform.switch_latency_s=1e300"),
                {"platform.switch_latency_s", "[0, 10] s"});
  check_refused(run_bounded("config " + quickstart() + " --set platform.gpu_flops_per_s_bf16=1e300"),
                {"platform.gpu_flops_per_s_bf16", "0 (gpu_flops_per_s) or in [1000, 1e+18]"});
  // In a calibration file, the file and its key are named.
  const fs::path calibration = temp.path() / "slow.toml";
  write_file(calibration, "base = \"dgx-h100\"\ngpu_flops_per_s = 1e-300\n");
  check_refused(simulate(temp, "--set platform.preset=" + calibration.string()),
                {"platform.preset", calibration.string() + ": gpu_flops_per_s: must be in [1000, 1e+18]"});
  // In a profile, the file and its field.
  const fs::path profile = temp.path() / "huge.toml";
  write_file(profile, R"(name = "huge"
forward_flops_per_sample = 1e300
[[tensors]]
name = "w"
shape = [4]
)");
  check_refused(simulate(temp, "--set platform.timing_model=" + profile.string()),
                {profile.string() + ": forward_flops_per_sample: must be in [1, 1e+18]"});
  CHECK_FALSE(fs::exists(temp.path() / "out" / "summary.json"));
}

TEST_CASE("experiments::hostile inputs: a timing that is not finite is refused, never written") {
  // Behind the ranges, the timing itself refuses to return a non-finite time: a profile built in code is
  // not range-checked as a file is.
  dbench::experiments::ExperimentConfig config;
  config.train.workers = 8;
  sim::TimingSpec spec = dbench::experiments::make_timing_spec(config);
  spec.profile.forward_flops_per_sample = 1e308;
  spec.profile.backward_flops_per_sample = 1e308;
  const std::vector<dbench::topology::ScheduleStep> steps(2);
  CHECK_THROWS_WITH_AS(sim::time_schedule(spec, steps, false), doctest::Contains("not a finite time"),
                       sim::PlatformError);
}

TEST_CASE("experiments::hostile inputs: SimGrid settings are checked before SimGrid sees them") {
  const TempDir temp;
  check_refused(simulate(temp, "--cfg=network/model:nosuch"), {"--cfg", "network/model must be one of"});
  check_refused(simulate(temp, "--cfg=garbage"), {"--cfg", "expected ITEM:VALUE"});
  check_refused(simulate(temp, "--cfg=contexts/nthreads:4"), {"--cfg", "'contexts/nthreads' is not"});
  check_refused(simulate(temp, "--cfg=contexts/stack-size:1"),
                {"--cfg", "contexts/stack-size must be in [64"});
  check_refused(simulate(temp, "--log=garbage"), {"--log", "expected CATEGORY.thres:LEVEL"});
  check_refused(simulate(temp, "--log=root.thres:loud"), {"--log", "the level must be one of"});
  check_refused(simulate(temp, "--log=root.app:file:/tmp/x"), {"--log", "only thresholds"});
  // An empty value no longer takes the next argument as its own.
  check_refused(simulate(temp, "--cfg= --set train.iterations=3"), {"--cfg", "an empty value"});
  check_refused(run_bounded("config " + quickstart() + " --out= x"), {"--out", "an empty value"});
  // What DBench supports still runs.
  const auto accepted =
      simulate(temp, "--cfg=network/model:LV08 --cfg=contexts/stack-size:512 --log=root.thres:critical");
  CAPTURE(accepted.output);
  CHECK(accepted.status == 0);
}

TEST_CASE(
    "experiments::hostile inputs: a damaged observer state in a checkpoint is refused, not thrown as stoll") {
  // The recorder's own length-prefixed fields, as a checkpoint holds them.
  const auto pack = [](std::initializer_list<std::string> fields) {
    std::string out;
    for (const auto& f : fields) {
      out += std::to_string(f.size()) + '\n' + f;
    }
    return out;
  };
  const std::string schedule = "iteration,graph,signal\n0,ring,0\n1,ring,0\n";
  dbench::experiments::TrainRecorder recorder(10, false);
  CHECK_NOTHROW(recorder.restore_state(pack({"m\n", schedule, "n\n", "12"})));
  for (const std::string& state :
       {std::string("x\nabc"), std::string("99999999999999999999\n"), std::string("5\nab"), pack({"m", "s"}),
        pack({"m\n", schedule, "n\n", "-12"}), pack({"m\n", schedule, "n\n", "1e3"}),
        pack({"m\n", "iteration,graph\n99999999999,ring\n", "n\n", "0"}),
        pack({"m\n", "iteration,graph\n0,ring\nring\n", "n\n", "0"})}) {
    CAPTURE(state);
    CHECK_THROWS_AS(recorder.restore_state(state), std::invalid_argument);
  }
}

TEST_CASE("experiments::hostile inputs: dbench config and a sweep refuse what the engines would refuse") {
  const TempDir temp;
  // An in-switch all-reduce across nodes, an in-network one on one node (dgx-h100: 8 GPUs a node).
  check_refused(run_bounded("config " + quickstart() + " --set platform.allreduce=nvls"),
                {"platform.allreduce: nvls needs a node switch that reduces"});
  check_refused(
      run_bounded("config " + quickstart() + " --set platform.allreduce=collnet --set train.workers=8"),
      {"platform.allreduce: collnet needs a fabric that reduces"});
  // LeNet's feature maps vanish on the synthetic 1 x 32 inputs.
  check_refused(
      run_bounded("config " + quickstart() + " --set train.model=lenet --set train.dataset=synthetic"),
      {"train.model: model 'lenet': a 1x32 input is too small"});
  check_refused(
      run_bounded("config " + quickstart() + " --set train.data_dir=" + (temp.path() / "none").string()),
      {"train.data_dir: '" + (temp.path() / "none").string() + "' is not a folder"});
  // A sweep checks every point up front, before its first run.
  const fs::path sweep = temp.path() / "mine.toml";
  write_file(sweep, R"(name = "mine"
[set]
"train.iterations" = 4
"train.workers" = 16
"platform.preset" = "dgx-h100"
"platform.timing_model" = "mlp"
[grid]
"platform.allreduce" = ["ring", "nvls"]
)");
  const fs::path out = temp.path() / "out";
  check_refused(
      run_bounded(fmt::format("sweep \"{}\" --out \"{}\" --quiet --no-report", sweep.string(), out.string())),
      {"platform.allreduce: nvls needs a node switch that reduces"});
  CHECK_FALSE(fs::exists(out / "runs"));
}
