// dbench calibrate and dbench validate end to end on 4 local workers, with a small MLP config.
#include <doctest/doctest.h>
#include <fmt/core.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "experiments/timing_setup.hpp"
#include "runtime/errors.hpp"
#include "support/approx.hpp"
#include "support/csv_column.hpp"
#include "support/run_dbench.hpp"
#include "support/temp_dir.hpp"
#include "validation/comparison.hpp"

namespace {

namespace fs = std::filesystem;

// These cases check what the commands write, not the machine: its load (other suites' builds) is not theirs
// to refuse, so drift hardly ever stops them. The drift decisions are tested in test_speed_watch.cpp.
const std::string kSteady = "--drift-tolerance 10";
// validate's tolerance for the model's step too: a loaded test machine must not refuse the runs.
const std::string kSteadyStep = kSteady + " --step-tolerance 10";

std::string read(const fs::path& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// The all-reduce was also timed at the model's parameter size, and the platform's all-reduce costs there
// what was measured (its fitted latency kept; the fit itself if the measurement is not above it).
void check_allreduce_at_model_size(const nlohmann::json& fits, const dbench::sim::PlatformSpec& platform) {
  const double bytes = fits.at("models").at(0).at("parameter_bytes").get<double>();
  REQUIRE(bytes > 0.0);
  const auto sizes = fits.at("allreduce").at("bytes").get<std::vector<double>>();
  const auto seconds = fits.at("allreduce").at("seconds").get<std::vector<double>>();
  const auto at = std::find(sizes.begin(), sizes.end(), bytes);
  REQUIRE(at != sizes.end());
  // With the centralized loop timed, the all-reduce costs what that loop paid beyond the step.
  const double in_loop = fits.at("models").at(0).at("allreduce_in_loop_s").get<double>();
  if (in_loop > 0.0) {
    // Its line passes through that cost at the model's size, whatever its latency.
    CHECK(platform.allreduce_latency_s + bytes / platform.allreduce_bandwidth_Bps ==
          dbench::testing::approx(in_loop).epsilon(1e-5));
    CHECK(in_loop >= fits.at("small_allreduce_s").get<double>());
    return;
  }
  const double measured = seconds[static_cast<std::size_t>(at - sizes.begin())];
  const double alpha = fits.at("allreduce").at("alpha_s").get<double>();
  CHECK(platform.allreduce_latency_s == dbench::testing::approx(alpha).epsilon(1e-5));
  if (measured > alpha) {
    CHECK(platform.allreduce_latency_s + bytes / platform.allreduce_bandwidth_Bps ==
          dbench::testing::approx(measured).epsilon(1e-5));
  } else {
    CHECK(platform.allreduce_bandwidth_Bps ==
          dbench::testing::approx(fits.at("allreduce").at("bandwidth_Bps").get<double>()).epsilon(1e-5));
  }
}

}  // namespace

TEST_CASE("validation::validate: calibrate then validate on 4 local workers writes well-formed tables") {
  const dbench::testing::TempDir dir;
  const fs::path config = dir.path() / "config.toml";
  std::ofstream(config)
      << "name = \"v\"\nseed = 2\n[train]\nmodel = \"mlp\"\nworkers = 4\nbatch_per_worker = 16\n"
         "iterations = 24\nlr = 0.05\neval_every = 12\neval_samples = 500\n"
         "replica_eval_samples = 64\nmlp_hidden = [32]\n[algorithm]\nkind = \"dpsgd\"\n"
         "graph = \"ring\"\n";
  const fs::path calibration = dir.path() / "calibration";
  const auto calibrate =
      dbench::testing::run_dbench("calibrate \"" + config.string() + "\" " + kSteady +
                                  " --local 4 --models mlp --batches 8,4096 --sizes 1024,65536,1048576 " +
                                  "--repeats 3 --loop-runs 2 --quiet --out \"" + calibration.string() + "\"");
  INFO(calibrate.output);
  REQUIRE(calibrate.status == 0);
  // The platform carries the measured all-reduce that centralized steps pay.
  const auto platform = dbench::experiments::read_calibration(calibration / "mlp.toml");
  CHECK(platform.allreduce_bandwidth_Bps > 0.0);
  const auto fits = nlohmann::json::parse(read(calibration / "calibration.json"));
  CHECK(fits.at("workers") == 4);
  check_allreduce_at_model_size(fits, platform);
  // The step in the loop, with the step alone and the gossip round alone beside it, per batch.
  const auto& mlp = fits.at("models").at(0);
  CHECK(mlp.at("seconds").size() == 2);
  CHECK(mlp.at("seconds_alone").size() == 2);
  CHECK(mlp.at("gossip_seconds").size() == 2);
  // dbench train's own loops, per batch, with their parts; the step is the ring loop's compute.
  const auto ring = mlp.at("ring_loop_seconds").get<std::vector<double>>();
  const auto step = mlp.at("seconds").get<std::vector<double>>();
  REQUIRE(ring.size() == 2);
  CHECK(mlp.at("kernel_seconds").size() == 2);
  CHECK(step == mlp.at("ring_loop_compute_s").get<std::vector<double>>());
  CHECK(step[0] > 0.0);
  CHECK(ring[0] > step[0]);
  // Four workers on this machine's cores.
  const int per_core = fits.at("workers_per_core").get<int>();
  CHECK(per_core >= 1);
  CHECK(per_core <= 4);
  // The turns the platform charges: how the ring's communication grew with the step, at most one step per
  // other worker of a core.
  const double turns = mlp.at("shared_core_turns").get<double>();
  CHECK(turns >= 0.0);
  CHECK(turns <= per_core - 1);
  CHECK(platform.shared_core_turns == dbench::testing::approx(turns).epsilon(1e-5));
  // The cores the workers are pinned to round-robin, and the turns in-neighbours on a worker's own core
  // spare it: where workers share cores, the exponential graph's loop was timed at every batch.
  const int cores = fits.at("cores").get<int>();
  const double relief = mlp.at("same_core_relief").get<double>();
  CHECK(relief >= 0.0);
  CHECK(relief <= per_core - 1);
  CHECK(platform.same_core_relief == dbench::testing::approx(relief).epsilon(1e-5));
  if (per_core > 1 && cores > 0) {
    CHECK(per_core == (4 + cores - 1) / cores);
    CHECK(platform.cores_per_node == cores);
    CHECK(mlp.at("exponential_loop_comm_s").size() == 2);
  } else {
    CHECK(platform.cores_per_node == 0);
    CHECK(relief == 0.0);
  }
  // Where a relief was fitted (workers sharing cores, pinned; it may come out 0), the one-peer graph's loop
  // fitted the relief at a whole share as well.
  if (per_core > 1 && cores > 0) {
    const double whole = mlp.at("same_core_relief_whole").get<double>();
    CHECK(whole >= 0.0);
    CHECK(whole <= per_core - 1);
    REQUIRE(platform.same_core_relief_whole.has_value());
    CHECK(*platform.same_core_relief_whole == dbench::testing::approx(whole).epsilon(1e-5));
  } else {
    CHECK_FALSE(mlp.contains("same_core_relief_whole"));
    CHECK_FALSE(platform.same_core_relief_whole.has_value());
  }
  const double overhead = mlp.at("overhead_s").get<double>();
  const double per_sample = mlp.at("flops_per_sample").get<double>() / mlp.at("flops_per_s").get<double>();
  const auto fitted_step = [&](double batch) { return overhead + batch * per_sample; };
  // The config's batch (16) lies between the timed ones (8 and 4096): the platform charges the step on the
  // line between their steps there.
  const auto& between = mlp.at("step_between");
  CHECK(between.at("batch").get<double>() == 16.0);
  CHECK(platform.gpu_flops_per_s ==
        dbench::testing::approx(between.at("flops_per_s").get<double>()).epsilon(1e-5));
  const double platform_step = platform.iteration_overhead_s +
                               16 * mlp.at("flops_per_sample").get<double>() / platform.gpu_flops_per_s;
  CHECK(platform_step ==
        dbench::testing::approx(step[0] + (16 - 8) * (step[1] - step[0]) / (4096 - 8)).epsilon(1e-5));
  // A centralized step's separate update: the median (of two: the mean) of the loops' compute apart.
  const auto c_compute = mlp.at("allreduce_loop_compute_s").get<std::vector<double>>();
  const double extra = std::max(0.0, 0.5 * (c_compute[0] - step[0] + c_compute[1] - step[1]));
  CHECK(mlp.at("gradient_step_overhead_s").get<double>() == dbench::testing::approx(extra).epsilon(1e-9));
  CHECK(platform.gradient_step_overhead_s == dbench::testing::approx(extra).epsilon(1e-5));
  // The all-reduce: what the centralized loop communicated beyond the turns, not below an all-reduce of one
  // double.
  const auto c_comm = mlp.at("allreduce_loop_comm_s").get<std::vector<double>>();
  const auto batches = mlp.at("batches").get<std::vector<double>>();
  const double allreduce = 0.5 * (c_comm[0] - turns * (fitted_step(batches[0]) + extra) + c_comm[1] -
                                  turns * (fitted_step(batches[1]) + extra));
  CHECK(
      mlp.at("allreduce_in_loop_s").get<double>() ==
      dbench::testing::approx(std::max(allreduce, fits.at("small_allreduce_s").get<double>())).epsilon(1e-9));
  // ... and a ring's iteration on the calibrated platform communicates what the ring's loop did beyond the
  // turns, plus the turns at the run's batch (timed at the config's batch, as validate simulates: the
  // simulator's timing batch is its own key, 32 unless set).
  const double exchange = mlp.at("ring_exchange_in_loop_s").get<double>();
  const auto r_comm = mlp.at("ring_loop_comm_s").get<std::vector<double>>();
  CHECK(exchange == dbench::testing::approx(0.5 * (r_comm[0] - turns * fitted_step(batches[0]) + r_comm[1] -
                                                   turns * fitted_step(batches[1])))
                        .epsilon(1e-9));
  const fs::path ring_run = dir.path() / "ring-sim";
  const auto simulate = dbench::testing::run_dbench(
      "simulate \"" + config.string() +
      "\" --timing-only --quiet --set \"platform.preset=" + (calibration / "mlp.toml").string() +
      "\" --set platform.timing_model=mlp --set platform.timing_batch_per_gpu=16 --out \"" +
      ring_run.string() + "\"");
  INFO(simulate.output);
  REQUIRE(simulate.status == 0);
  const auto comm = dbench::testing::csv_column(read(ring_run / "trace.csv"), "comm_s");
  REQUIRE_FALSE(comm.empty());
  CHECK(comm.front() == dbench::testing::approx(exchange + turns * platform_step).epsilon(1e-4));
  // The machine's speed was read at the start and after each measurement.
  CHECK(fits.at("reference_kernel_s").get<double>() > 0.0);
  CHECK(fits.at("speed_readings").size() >= 4);
  // dbench train's loops ran as fresh runs of their own, launched by calibrate, which read the machine's
  // speed around them as validate reads it around its runs; nothing of them stays beside the calibration.
  const auto launcher_reading = [](const nlohmann::json& r) {
    return r.at("after").get<std::string>().rfind("launcher, mlp: ", 0) == 0;
  };
  CHECK(std::count_if(fits.at("speed_readings").begin(), fits.at("speed_readings").end(), launcher_reading) >=
        2);
  // The launcher's readings time the model's step at the config's batch too, before the loops and after each
  // batch's part of each round (each part a phase of its own, run again alone where it drifted); their median
  // is the model's step reading, which validate compares with.
  std::vector<double> steps;
  for (const auto& r : fits.at("speed_readings")) {
    if (launcher_reading(r)) {
      REQUIRE(r.contains("step_seconds"));
      steps.push_back(r.at("step_seconds").get<double>());
    }
  }
  CHECK(steps.size() == 3 + 2 * 2);  // three at the start, one after each of 2 batches in each of 2 rounds
  CHECK(std::count_if(fits.at("speed_readings").begin(), fits.at("speed_readings").end(),
                      [](const nlohmann::json& r) {
                        return r.at("after").get<std::string>() ==
                               "launcher, mlp: mlp's loops at batch 4096, round 2 of 2";
                      }) == 1);
  std::sort(steps.begin(), steps.end());  // seven: the median is the fourth
  CHECK(mlp.at("speed_step_s").get<double>() == dbench::testing::approx(steps[3]));
  CHECK(mlp.at("speed_step_batch").get<int>() == 16);
  for (const auto& entry : fs::directory_iterator(dir.path())) {
    CHECK(entry.path().filename().string().front() != '.');
  }
  CHECK(fits.at("exchange").at("fit").at("residuals").size() == 4);  // three sizes and the model's

  const fs::path out = dir.path() / "validation";
  const auto validate =
      dbench::testing::run_dbench("validate \"" + config.string() + "\" " + kSteadyStep +
                                  " --local 4 --algorithms centralized,one-peer-exponential " +
                                  "--warmup 2 --runs 2 --quiet --calibration \"" + calibration.string() +
                                  "\" --out \"" + out.string() + "\"");
  INFO(validate.output);
  REQUIRE(validate.status == 0);
  // Its runs' and simulations' own summary lines stay out of validate's output; the table is its.
  CHECK(validate.output.find("final test accuracy") == std::string::npos);
  CHECK(validate.output.find("results: " + (out / "runs").string()) == std::string::npos);
  const auto json = nlohmann::json::parse(read(out / "validation.json"));
  REQUIRE(json.at("cases").size() == 2);
  CHECK(json.at("max_relative_error").get<double>() >= 0.0);
  CHECK(json.at("max_relative_error_compute").get<double>() >= 0.0);
  CHECK(json.at("max_relative_error_comm").get<double>() >= 0.0);
  // Read before the first round of runs and after each, against the calibration's first reading.
  CHECK(json.at("reference_kernel_s").get<double>() == fits.at("reference_kernel_s").get<double>());
  CHECK(json.at("speed_readings").size() >= 3);
  CHECK(json.at("largest_drift").get<double>() >= 0.0);
  CHECK(json.at("recalibrations").get<int>() == 0);  // a given calibration is never calibrated again
  // What other processes took of the machine meanwhile (this suite runs alone), said in validation.md too.
  CHECK(json.at("foreign_cores").get<double>() >= 0.0);
  CHECK(json.at("refused").is_null());
  CHECK(read(out / "validation.md").find("Other processes kept ") != std::string::npos);
  // The model's step too, at the calibration's batch, against the calibration's step reading.
  CHECK(json.at("speed_step_s").get<double>() == mlp.at("speed_step_s").get<double>());
  for (const auto& r : json.at("speed_readings")) {
    CHECK(r.at("step_seconds").get<double>() > 0.0);
  }
  CHECK(json.at("largest_step_drift").get<double>() >= 0.0);
  double worst = 0.0;
  for (const auto& c : json.at("cases")) {
    CHECK(c.at("measured").at("seconds_per_iteration").get<double>() > 0.0);
    // Two runtime runs per case, fastest first; the measured figures are the median run's (of two, the
    // slower).
    const auto runs = c.at("measured_runs_seconds_per_iteration").get<std::vector<double>>();
    REQUIRE(runs.size() == 2);
    CHECK(runs[0] <= runs[1]);
    CHECK(c.at("measured").at("seconds_per_iteration").get<double>() == runs[1]);
    const std::string run = c.at("measured_run").get<std::string>();
    CHECK((run == "runtime" || run == "runtime-2"));
    CHECK(c.at("simulated").at("seconds_per_iteration").get<double>() > 0.0);
    worst = std::max(worst, c.at("relative_error").at("seconds_per_iteration").get<double>());
    // Same config and seed: the runtime's and the numerics' accuracy curves agree to float tolerance.
    CHECK(c.at("evaluations").get<int>() == 3);
    CHECK(c.at("accuracy_difference").get<double>() <= 1e-6);
  }
  CHECK(json.at("max_relative_error").get<double>() == dbench::testing::approx(worst));
  // The runs went in rounds, one of every case each, the second starting with the second case: a slow
  // spell moves both cases, not one case's runs.
  const auto finished = [&](const std::string& algorithm, const std::string& run) {
    return fs::last_write_time(out / "runs" / algorithm / run / "trace_worker.csv");
  };
  CHECK(finished("centralized", "runtime") < finished("one-peer-exponential", "runtime"));
  CHECK(finished("one-peer-exponential", "runtime") < finished("one-peer-exponential", "runtime-2"));
  CHECK(finished("one-peer-exponential", "runtime-2") < finished("centralized", "runtime-2"));
  const std::string csv = read(out / "validation.csv");
  CHECK(dbench::testing::csv_column(csv, "simulated_s").size() == 2);
  CHECK(read(out / "validation.md").find("| dpsgd/one-peer-exponential | mlp | 4 |") != std::string::npos);
  // The machine's drift, as far as the tolerance let it go, stands beside the errors.
  CHECK(read(out / "validation.md")
            .find(fmt::format("stayed within {:.1f} % of the calibration's",
                              100.0 * json.at("largest_counted_drift").get<double>())) != std::string::npos);
  CHECK(read(out / "validation.md")
            .find(fmt::format("the model's step within {:.1f} % (tolerance 1000 %)",
                              100.0 * json.at("largest_counted_step_drift").get<double>())) !=
        std::string::npos);
  CHECK(dbench::testing::csv_column(read(out / "accuracy.csv"), "numerics_test_accuracy").size() == 6);

  // A calibration whose step reading is twice what the machine reads now, its kernel's unchanged: refused
  // before any run, in one line that names the step, exit status 75 (try again later), no run written.
  const fs::path doubled = dir.path() / "doubled";
  fs::create_directories(doubled);
  nlohmann::json changed = fits;
  changed["models"][0]["speed_step_s"] = 2.0 * mlp.at("speed_step_s").get<double>();
  std::ofstream(doubled / "calibration.json") << changed.dump(2);
  fs::copy_file(calibration / "mlp.toml", doubled / "mlp.toml");
  const fs::path refused = dir.path() / "refused";
  const auto off = dbench::testing::run_dbench(
      "validate \"" + config.string() + "\" " + kSteady +
      " --local 4 --algorithms centralized --runs 1 --retries 0 --quiet --calibration \"" + doubled.string() +
      "\" --out \"" + refused.string() + "\"");
  INFO(off.output);
  CHECK(off.status == dbench::runtime::Refused::kExitStatus);
  CHECK(off.output.find("validate: the model's step runs -") != std::string::npos);
  CHECK(off.output.find("(faster) against when it was calibrated (step ") != std::string::npos);
  CHECK_FALSE(fs::exists(refused / "validation.json"));
  CHECK_FALSE(fs::exists(refused / "runs" / "centralized"));
}

#if defined(DBENCH_RUNTIME_HAVE_TORCH)
namespace {

/// A small MLP config for the LibTorch worker's runs.
fs::path write_torch_config(const fs::path& dir) {
  const fs::path config = dir / "config.toml";
  std::ofstream(config)
      << "name = \"t\"\nseed = 3\n[train]\nmodel = \"mlp\"\nworkers = 2\nbatch_per_worker = 16\n"
         "iterations = 20\nlr = 0.05\neval_every = 10\neval_samples = 400\n"
         "replica_eval_samples = 64\nmlp_hidden = [32]\n[algorithm]\nkind = \"dpsgd\"\n"
         "graph = \"ring\"\n";
  return config;
}

}  // namespace

TEST_CASE("validation::validate: --device cpu calibrates and validates dbench train's LibTorch worker") {
  const dbench::testing::TempDir dir;
  const fs::path config = write_torch_config(dir.path());
  const fs::path calibration = dir.path() / "calibration";
  const auto calibrate = dbench::testing::run_dbench("calibrate \"" + config.string() + "\" " + kSteady +
                                                     " --device cpu --local 2 --models mlp --batches 8,512 " +
                                                     "--sizes 4096,1048576 --repeats 2 --quiet --out \"" +
                                                     calibration.string() + "\"");
  INFO(calibrate.output);
  REQUIRE(calibrate.status == 0);
  const auto fits = nlohmann::json::parse(read(calibration / "calibration.json"));
  CHECK(fits.at("device") == "cpu");
  CHECK(fits.at("workers") == 2);
  CHECK(fits.at("exchange").at("seconds").size() == 3);  // two sizes and the model's
  CHECK(fits.at("models").at(0).at("seconds").size() == 2);
  CHECK(dbench::experiments::read_calibration(calibration / "mlp.toml").gpu_flops_per_s > 0.0);

  // A calibration of the CPU workers does not serve the LibTorch worker's validation, and says so before
  // anything is written.
  const fs::path cpu_workers = dir.path() / "cpu-workers";
  fs::create_directories(cpu_workers);
  std::string json = read(calibration / "calibration.json");
  json.replace(json.find("\"device\": \"cpu\""), 15, "\"device\": \"cpu-worker\"");
  std::ofstream(cpu_workers / "calibration.json") << json;
  fs::copy_file(calibration / "mlp.toml", cpu_workers / "mlp.toml");
  const fs::path refused = dir.path() / "refused";
  const auto mismatch = dbench::testing::run_dbench(
      "validate \"" + config.string() + "\" " + kSteady + " --device cpu --local 2 --quiet --calibration \"" +
      cpu_workers.string() + "\" --out \"" + refused.string() + "\"");
  CHECK(mismatch.status != 0);
  CHECK(mismatch.output.find("--calibration") != std::string::npos);
  CHECK(mismatch.output.find("calibrated on cpu-worker, not on cpu") != std::string::npos);
  CHECK_FALSE(fs::exists(refused));

  const fs::path out = dir.path() / "validation";
  const auto validate = dbench::testing::run_dbench(
      "validate \"" + config.string() + "\" " + kSteady +
      " --device cpu --local 2 --algorithms centralized,ring --warmup 2 " +
      "--runs 1 --quiet --calibration \"" + calibration.string() + "\" --out \"" + out.string() + "\"");
  INFO(validate.output);
  REQUIRE(validate.status == 0);
  const auto result = nlohmann::json::parse(read(out / "validation.json"));
  REQUIRE(result.at("cases").size() == 2);
  for (const auto& c : result.at("cases")) {
    CHECK(c.at("measured").at("seconds_per_iteration").get<double>() > 0.0);
    CHECK(c.at("simulated").at("seconds_per_iteration").get<double>() > 0.0);
    CHECK(c.at("evaluations").get<int>() == 3);
    // The LibTorch MLP starts from the simulator's parameters: only the float rounding of its kernels
    // (LibTorch's against OpenBLAS's) separates the curves.
    CHECK(c.at("accuracy_difference").get<double>() <= 0.01);
  }
  CHECK(read(out / "validation.md").find("LibTorch on cpu") != std::string::npos);
  const auto summary = nlohmann::json::parse(read(out / "runs" / "ring" / "runtime" / "summary.json"));
  CHECK(summary.at("device") == "cpu");
}

TEST_CASE(
    "validation::validate: one worker with --device calibrates without links and validates centralized") {
  const dbench::testing::TempDir dir;
  const fs::path config = write_torch_config(dir.path());
  const fs::path calibration = dir.path() / "calibration";
  // One worker in the dbench process itself: no launcher.
  const auto calibrate = dbench::testing::run_dbench(
      "calibrate \"" + config.string() + "\" " + kSteady + " --device cpu --models mlp --batches 8,512 " +
      "--sizes 4096,4194304 --repeats 2 --quiet --out \"" + calibration.string() + "\"");
  INFO(calibrate.output);
  REQUIRE(calibrate.status == 0);
  const auto fits = nlohmann::json::parse(read(calibration / "calibration.json"));
  CHECK(fits.at("workers") == 1);
  CHECK(fits.at("point_to_point").at("bytes").empty());
  CHECK(fits.at("exchange").at("bytes").empty());
  CHECK(fits.at("allreduce").at("bytes").size() == 3);  // two sizes and the model's
  const auto platform = dbench::experiments::read_calibration(calibration / "mlp.toml");
  CHECK(platform.gpus_per_node == 1);
  check_allreduce_at_model_size(fits, platform);

  const fs::path out = dir.path() / "validation";
  const auto validate = dbench::testing::run_dbench(
      "validate \"" + config.string() + "\" " + kSteady +
      " --device cpu --local 1 --algorithms centralized --warmup 2 " + "--runs 1 --quiet --calibration \"" +
      calibration.string() + "\" --out \"" + out.string() + "\"");
  INFO(validate.output);
  REQUIRE(validate.status == 0);
  const auto result = nlohmann::json::parse(read(out / "validation.json"));
  REQUIRE(result.at("cases").size() == 1);
  // The simulated iteration pays the measured all-reduce of the one worker's gradient.
  CHECK(result.at("cases").at(0).at("simulated").at("comm_s").get<double>() >= platform.allreduce_latency_s);
}
#endif

TEST_CASE("validation::validate: a device or worker count that cannot run is refused naming the argument") {
  const dbench::testing::TempDir dir;
  const fs::path config = dir.path() / "config.toml";
  std::ofstream(config) << "name = \"e\"\n[train]\nmodel = \"mlp\"\nworkers = 2\n";
  const fs::path out = dir.path() / "out";
  const struct {
    std::string args;
    std::string message;
  } cases[] = {
      {"calibrate --device tpu --local 2", "--device: expected cpu, cuda or cuda:N, got 'tpu'"},
      {"calibrate --device cuda:x --local 2", "--device: expected cpu, cuda or cuda:N, got 'cuda:x'"},
      {"calibrate --local 1", "--local 1: the CPU workers calibrate in twos or more"},
      {"calibrate --local 2 --sizes 4096", "--sizes: at least two different message sizes are needed"},
      {"calibrate --local 2 --batches 16,16", "--batches: at least two different batch sizes are needed"},
      {"validate \"" + config.string() + "\" " + kSteady +
           " --local 1 --device cpu --algorithms centralized,ring",
       "--algorithms: 'ring' needs at least 2 workers"},
      {"validate \"" + config.string() + "\" " + kSteady + " --local 1 --algorithms centralized",
       "--local 1: the CPU workers"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.args);
    const auto result = dbench::testing::run_dbench(c.args + " --out \"" + out.string() + "\"");
    CHECK(result.status != 0);
    CHECK(result.output.find(c.message) != std::string::npos);
    CHECK_FALSE(fs::exists(out));
  }
}
