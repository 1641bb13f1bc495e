// `dbench train` on local MPI workers, checked against the simulator and against itself: same parameters as
// the virtual replicas, accuracy on Fashion-MNIST, a lost worker named within a minute, exact resume.
#include <doctest/doctest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <sstream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "core/numerics.hpp"
#include "experiments/config.hpp"
#include "experiments/sim_setup.hpp"
#include "runtime/checkpoint.hpp"
#include "support/approx.hpp"
#include "support/files.hpp"
#include "support/run_dbench.hpp"
#include "support/temp_dir.hpp"

namespace {

namespace fs = std::filesystem;
using dbench::testing::run_dbench;
using dbench::testing::TempDir;

/// A Fashion-MNIST MLP config for `workers` workers.
/// `algorithm_extra`, `train_extra`: more [algorithm] and [train] keys, one per line.
std::string config_text(const std::string& kind, const std::string& graph, int workers, int iterations,
                        const std::string& algorithm_extra = "", const std::string& train_extra = "") {
  return "name = \"rt\"\nseed = 3\n[train]\n" + train_extra + "workers = " + std::to_string(workers) +
         "\nbatch_per_worker = 16\niterations = " + std::to_string(iterations) +
         "\nlr = 0.1\nmomentum = 0.9\neval_every = 50\neval_samples = 1000\nreplica_eval_samples = 128\n"
         "mlp_hidden = [32]\n[algorithm]\nkind = \"" +
         kind + "\"\ngraph = \"" + graph + "\"\n" + algorithm_extra;
}

fs::path write_config(const fs::path& dir, const std::string& text) {
  const fs::path file = dir / "config.toml";
  std::ofstream(file) << text;
  return file;
}

/// The simulator's virtual replicas after the config's iterations: [workers x P].
std::vector<std::vector<float>> simulate_params(const std::string& text) {
  const auto config = dbench::experiments::load_config(text);
  // Most cases train on Fashion-MNIST: read it once.
  static const auto fashion_train =
      dbench::core::load_dataset("fashion-mnist", dbench::models::Split::train, "", 1);
  static const auto fashion_test =
      dbench::core::load_dataset("fashion-mnist", dbench::models::Split::test, "", 1);
  const bool fashion = config.train.dataset == "fashion-mnist";
  const auto other_train = fashion
                               ? dbench::models::Dataset{}
                               : dbench::experiments::config_dataset(config, dbench::models::Split::train);
  const auto other_test = fashion ? dbench::models::Dataset{}
                                  : dbench::experiments::config_dataset(config, dbench::models::Split::test);
  const auto& train = fashion ? fashion_train : other_train;
  const auto& test = fashion ? fashion_test : other_test;
  auto spec = dbench::experiments::numerics_spec(config, train);
  spec.threads = 1;
  auto policy = dbench::experiments::make_policy(config);
  dbench::core::VirtualReplicas replicas(spec, train, test);
  dbench::core::NumericsObserver ignore;
  dbench::core::run_schedule(spec.iterations, spec.eval_every, *policy, replicas, ignore);
  std::vector<std::vector<float>> out;
  const auto params = replicas.params();
  for (std::size_t r = 0; r < params.rows; ++r) {
    const auto row = params.row(r);
    out.emplace_back(row.begin(), row.end());
  }
  return out;
}

/// Largest |a - b| over the largest |b|: 0 when bitwise equal.
double relative_difference(const std::vector<float>& a, const std::vector<float>& b) {
  REQUIRE(a.size() == b.size());
  double diff = 0.0;
  double scale = 0.0;
  for (std::size_t j = 0; j < a.size(); ++j) {
    diff = std::max(diff, std::abs(static_cast<double>(a[j]) - b[j]));
    scale = std::max(scale, std::abs(static_cast<double>(b[j])));
  }
  return diff / scale;
}

/// Runs `text` (4 workers, `iterations` iterations) with dbench train --local 4 into dir/out and checks every
/// worker's final parameters against the simulator's replicas: within `tolerance` relative.
void check_train_matches_simulate(const TempDir& dir, const std::string& text, int iterations,
                                  double tolerance = 1e-5) {
  const fs::path config = write_config(dir.path(), text);
  const auto run = run_dbench("train " + config.string() + " --local 4 -q --checkpoint-every " +
                              std::to_string(iterations) + " --out " + (dir.path() / "out").string());
  INFO(run.output);
  REQUIRE(run.status == 0);
  const auto expected = simulate_params(text);
  for (int r = 0; r < 4; ++r) {
    CAPTURE(r);
    const auto state = dbench::runtime::read_checkpoint(dir.path() / "out.checkpoints", r);
    CHECK(state.iterations_done == iterations);
    CHECK(relative_difference(state.params, expected[static_cast<std::size_t>(r)]) <= tolerance);
  }
}

#if defined(DBENCH_HAVE_TORCH)
/// The values of metrics.csv's column `name`, one per row.
std::vector<double> metrics_column(const fs::path& file, const std::string& name) {
  std::istringstream in(dbench::testing::read_file(file));
  std::string line;
  std::getline(in, line);
  std::size_t column = 0;
  bool found = false;
  {
    std::istringstream header(line);
    for (std::string cell; std::getline(header, cell, ',');) {
      if (cell == name) {
        found = true;
        break;
      }
      ++column;
    }
  }
  REQUIRE_MESSAGE(found, file.string() << " has no column " << name);
  std::vector<double> values;
  while (std::getline(in, line)) {
    std::istringstream row(line);
    std::string cell;
    for (std::size_t k = 0; k <= column; ++k) {
      std::getline(row, cell, ',');
    }
    values.push_back(std::stod(cell));
  }
  return values;
}
#endif

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

TEST_CASE("runtime::train: 4 local workers end with the simulator's parameters (centralized, gossip, Ada)") {
  // Every communication kind of core::run_step: the all-reduce of the gradients, gossip (ring, exponential,
  // one-peer exponential), global averages (periodic, with and without a measurement before them), local
  // steps, and the shared momentum after Ada's averages.
  struct Case {
    const char* kind;
    const char* graph;
    const char* extra;
    double tolerance = 1e-5;
  };
  // Gossip runs the same kernels in both engines and ends bitwise equal. Centralized workers take their own
  // batches through OpenBLAS and all-reduce the gradients, while the simulator takes the replicas' batches
  // as one through kernels of its own (BatchedMlp::train_shared): the rounding differs from the first
  // iteration on, and after 100 the largest difference is 1.7e-5 of the largest parameter (5.5e-6 while
  // both engines' forward passes were OpenBLAS's).
  for (const Case c :
       {Case{"centralized", "ring", "", 5e-5}, Case{"dpsgd", "ring", ""},
        Case{"dpsgd", "one-peer-exponential", ""}, Case{"dpsgd", "exponential", ""},
        Case{"dpsgd", "ring", "global_every = 30\n"},
        // Global averages at the evaluations (t = 49, 99): averaged from the measurement's sum.
        Case{"dpsgd", "exponential", "global_every = 25\n"}, Case{"dpsgd", "local", "global_every = 3\n"},
        Case{"dpsgd", "ada", ""}, Case{"dpsgd", "ada", "ada_shared_momentum = true\n"}}) {
    CAPTURE(c.kind);
    CAPTURE(c.graph);
    CAPTURE(c.extra);
    TempDir dir;
    check_train_matches_simulate(dir, config_text(c.kind, c.graph, 4, 100, c.extra), 100, c.tolerance);
    for (const char* file : {"metrics.csv", "schedule.csv", "trace.csv", "summary.json", "config.toml"}) {
      CHECK(fs::exists(dir.path() / "out" / file));
    }
  }
}

TEST_CASE("runtime::train: with augment_copies, 4 local workers end with the simulator's parameters") {
  // The workers keep their shard's images and compute the views at gather, the simulator computes them from
  // the whole data set: the same samples, so the same tolerances as without augmentation.
  for (const auto& [kind, tolerance] : {std::pair{"centralized", 5e-5}, std::pair{"dpsgd", 1e-5}}) {
    CAPTURE(kind);
    TempDir dir;
    check_train_matches_simulate(dir, config_text(kind, "ring", 4, 100, "", "augment_copies = 20\n"), 100,
                                 tolerance);
    CHECK(
        dbench::testing::read_file(dir.path() / "out" / "summary.json").find("\"train_samples\": 1200000") !=
        std::string::npos);
  }
}

TEST_CASE("runtime::train: on the synthetic task, 4 local workers end with the simulator's parameters") {
  // Each engine computes every sample from (seed, index) where its batch gathers it: the same samples, so
  // the same tolerances as on stored images.
  const std::string synthetic = "dataset = \"synthetic\"\nsynthetic_samples = 200000\nsynthetic_seed = 5\n";
  for (const auto& [kind, tolerance] : {std::pair{"centralized", 5e-5}, std::pair{"dpsgd", 1e-5}}) {
    CAPTURE(kind);
    TempDir dir;
    check_train_matches_simulate(dir, config_text(kind, "ring", 4, 100, "", synthetic), 100, tolerance);
    CHECK(dbench::testing::read_file(dir.path() / "out" / "summary.json").find("\"train_samples\": 200000") !=
          std::string::npos);
  }
}

TEST_CASE("runtime::train: with LARS, 4 local workers end with the simulator's parameters") {
  // The same per-tensor ratio in both engines (core::Sgd), from each replica's own norms; eta and weight
  // decay large enough that the ratios, not SGD's step, set the parameters.
  const std::string lars = "optimizer = \"lars\"\nlars_eta = 0.02\nweight_decay = 1e-3\n";
  for (const auto& [kind, graph, tolerance] :
       {std::tuple{"centralized", "ring", 5e-5}, std::tuple{"dpsgd", "exponential", 1e-5}}) {
    CAPTURE(kind);
    TempDir dir;
    check_train_matches_simulate(dir, config_text(kind, graph, 4, 100, "", lars), 100, tolerance);
  }
}

/// Writes the config `text` into `dir` and runs `dbench train` on it (`--local WORKERS -q OPTIONS --out
/// DIR/out`); returns its summary.json and its final test accuracy, after checking the run succeeded.
std::pair<std::string, double> train_and_summarize(const fs::path& dir, const std::string& text, int workers,
                                                   const std::string& options) {
  const fs::path config = write_config(dir, text);
  const auto run = run_dbench("train " + config.string() + " --local " + std::to_string(workers) + " -q " +
                              options + " --out " + (dir / "out").string());
  INFO(run.output);
  REQUIRE(run.status == 0);
  const std::string summary = dbench::testing::read_file(dir / "out" / "summary.json");
  const auto at = summary.find("\"final_test_accuracy\": ");
  REQUIRE(at != std::string::npos);
  return {summary, std::stod(summary.substr(at + 23))};
}

/// 4 CPU workers on the exponential graph for 150 iterations with `options`: the run trains (above 60 %) and
/// its summary.json holds `marker`.
void check_trains_exponential(const fs::path& dir, const std::string& options, const std::string& marker) {
  const auto [text, accuracy] =
      train_and_summarize(dir, config_text("dpsgd", "exponential", 4, 150), 4, options);
  CHECK(text.find(marker) != std::string::npos);
  CHECK(accuracy > 0.6);
}

TEST_CASE("runtime::train: 8 CPU workers reach 80% on Fashion-MNIST with D-PSGD on the exponential graph") {
  TempDir dir;
  const double accuracy =
      train_and_summarize(
          dir.path(),
          "name = \"acc8\"\nseed = 1\n[train]\nworkers = 8\nbatch_per_worker = 32\niterations = 600\nlr = "
          "0.1\n"
          "momentum = 0.9\neval_every = 200\n[algorithm]\nkind = \"dpsgd\"\ngraph = \"exponential\"\n",
          8, "")
          .second;
  CAPTURE(accuracy);
  CHECK(accuracy >= 0.80);
}

/// A schedule.csv: its iteration and graph columns as text, and its signal column (NaN where empty).
struct Schedule {
  std::string steps;
  std::vector<double> signals;
};

Schedule read_schedule(const fs::path& file) {
  std::istringstream in(dbench::testing::read_file(file));
  Schedule s;
  bool header = true;
  for (std::string line; std::getline(in, line); header = false) {
    const std::size_t second = line.find(',', line.find(',') + 1);
    s.steps += line.substr(0, second) + '\n';
    const std::string signal = second == std::string::npos ? "" : line.substr(second + 1);
    if (!header) {
      s.signals.push_back(signal.empty() ? std::nan("") : std::stod(signal));
    }
  }
  return s;
}

/// The same schedule: every step equal, every signal equal within `tolerance` (relative: the engines sum
/// the replicas' distances in different orders).
void check_same_schedule(const Schedule& realized, const Schedule& simulated, double tolerance = 1e-9) {
  CHECK(realized.steps == simulated.steps);
  REQUIRE(realized.signals.size() == simulated.signals.size());
  for (std::size_t i = 0; i < realized.signals.size(); ++i) {
    CAPTURE(i);
    CHECK(std::isnan(realized.signals[i]) == std::isnan(simulated.signals[i]));
    if (!std::isnan(realized.signals[i])) {
      CHECK(realized.signals[i] == dbench::testing::approx(simulated.signals[i]).epsilon(tolerance));
    }
  }
}

/// schedule.csv of `dbench train --local workers` and of `dbench simulate` for the same config.
std::pair<Schedule, Schedule> realized_and_simulated_schedules(const fs::path& dir, const std::string& text,
                                                               int workers) {
  const fs::path config = write_config(dir, text);
  const auto train = run_dbench("train " + config.string() + " --local " + std::to_string(workers) +
                                " -q --out " + (dir / "train").string());
  INFO(train.output);
  REQUIRE(train.status == 0);
  const auto simulate =
      run_dbench("simulate " + config.string() + " -q --threads 1 --out " + (dir / "sim").string());
  INFO(simulate.output);
  REQUIRE(simulate.status == 0);
  return {read_schedule(dir / "train" / "schedule.csv"), read_schedule(dir / "sim" / "schedule.csv")};
}

TEST_CASE("runtime::train: Ada on 8 workers realizes the simulator's schedule for the same config and seed") {
  TempDir dir;
  // The default Ada: its ladder, band, probes and start.
  const auto [realized, simulated] =
      realized_and_simulated_schedules(dir.path(), config_text("dpsgd", "ada", 8, 120), 8);
  check_same_schedule(realized, simulated);
  // 120 rows, both rungs and measured signals: the equality covers Ada's decisions, not a constant schedule.
  CHECK(std::count(realized.steps.begin(), realized.steps.end(), '\n') == 121);
  CHECK(realized.steps.find("global-average") != std::string::npos);
  CHECK(realized.steps.find("local") != std::string::npos);
  CHECK(std::count_if(realized.signals.begin(), realized.signals.end(), [](double v) { return v > 0.0; }) >
        10);
}

TEST_CASE(
    "runtime::train: cost-aware Ada's rungs, simulated once on rank 0, give every worker the schedule") {
  TempDir dir;
  const auto [realized, simulated] = realized_and_simulated_schedules(
      dir.path(),
      config_text(
          "dpsgd", "ada", 4, 60,
          "ada_ladder = \"one-peer-exponential:4,local:2,ring:2,global-average\"\nada_cost_aware = true\n"
          "ada_start = \"sparsest\"\n"),
      4);
  check_same_schedule(realized, simulated);
  CHECK(std::count(realized.steps.begin(), realized.steps.end(), '\n') == 61);
}

TEST_CASE("runtime::train: --overlap trains with the exchange beside the local step and records its trace") {
  TempDir dir;
  check_trains_exponential(dir.path(), "--overlap", "\"overlap\": true");
  // trace.csv has the simulator's columns, one row per iteration; trace_worker.csv a row per worker too.
  for (const auto& [file, header, want] :
       {std::tuple{"trace.csv", "iteration,graph,compute_s,comm_s,total_s,bytes_sent,elapsed_s", 150},
        std::tuple{"trace_worker.csv", "iteration,worker,compute_s,comm_s,total_s,bytes_sent,loss,lr",
                   600}}) {
    CAPTURE(file);
    std::ifstream trace(dir.path() / "out" / file);
    std::string line;
    std::getline(trace, line);
    CHECK(line == header);
    int rows = 0;
    while (std::getline(trace, line)) {
      ++rows;
    }
    CHECK(rows == want);
  }
}

#if defined(DBENCH_HAVE_TORCH)
TEST_CASE("runtime::train: 4 LeNet workers end with the simulator's parameters (centralized, ring)") {
  for (const char* kind : {"centralized", "dpsgd"}) {
    CAPTURE(kind);
    TempDir dir;
    check_train_matches_simulate(dir, config_text(kind, "ring", 4, 60, "", "model = \"lenet\"\n"), 60);
  }
}

TEST_CASE("runtime::train: workers train LeNet with the simulator's replica model") {
  TempDir dir;
  const fs::path config = write_config(dir.path(), config_text("dpsgd", "ring", 2, 20));
  const auto run = run_dbench("train " + config.string() + " --local 2 -q --set train.model=lenet --out " +
                              (dir.path() / "out").string());
  INFO(run.output);
  REQUIRE(run.status == 0);
  std::ifstream metrics(dir.path() / "out" / "metrics.csv");
  std::string header;
  std::getline(metrics, header);
  CHECK(header.find("norm_mean:conv1.weight") != std::string::npos);
}

/// Runs `config` on each named engine into DIR/<name>, every run succeeding: "sim" (dbench simulate), "cpu"
/// (4 CPU workers) or "torch" (4 LibTorch workers on the CPU).
void run_engines(const fs::path& config, const fs::path& dir, std::initializer_list<std::string> engines) {
  for (const std::string& name : engines) {
    const std::string out = " --out " + (dir / name).string();
    const std::string command = name == "sim" ? "simulate " + config.string() + " -q --threads 1" + out
                                : name == "cpu"
                                    ? "train " + config.string() + " --local 4 -q" + out
                                    : "train " + config.string() + " --local 4 -q --device cpu" + out;
    CAPTURE(name);
    const auto run = run_dbench(command);
    INFO(run.output);
    REQUIRE(run.status == 0);
  }
}

TEST_CASE("runtime::train: --device cpu with LARS agrees with the simulator") {
  // LibTorch's worker computes the norms with LibTorch and the ratio with core::lars_trust_ratio(): its
  // losses and consensus distance follow the simulator's within LibTorch's rounding.
  TempDir dir;
  const fs::path config =
      write_config(dir.path(), config_text("dpsgd", "ring", 4, 100, "",
                                           "optimizer = \"lars\"\nlars_eta = 0.02\nweight_decay = 1e-3\n"));
  run_engines(config, dir.path(), {"sim", "torch"});
  for (const char* column : {"test_loss", "consensus_distance"}) {
    CAPTURE(column);
    const auto sim = metrics_column(dir.path() / "sim" / "metrics.csv", column);
    const auto torch = metrics_column(dir.path() / "torch" / "metrics.csv", column);
    REQUIRE(sim.size() == 3);  // iterations 0, 50 and 100
    REQUIRE(torch.size() == sim.size());
    for (std::size_t k = 1; k < sim.size(); ++k) {
      CAPTURE(k);
      CHECK(sim[k] > 0.0);
      CHECK(std::abs(torch[k] - sim[k]) <= 0.01 * sim[k]);
    }
  }
}

TEST_CASE("runtime::train: --device cpu trains the LibTorch model on MPI workers") {
  TempDir dir;
  check_trains_exponential(dir.path(), "--device cpu", "\"device\": \"cpu\"");
  for (const char* file :
       {"metrics.csv", "schedule.csv", "trace.csv", "trace_worker.csv", "replica_norms.csv"}) {
    CHECK(fs::exists(dir.path() / "out" / file));
  }
}
#endif

#if defined(DBENCH_HAVE_TORCH)
TEST_CASE(
    "runtime::train: one driver: Ada's schedule and consensus distance are the same on all three engines") {
  // The same config through virtual replicas, CPU workers and LibTorch workers on the CPU: the driver decides
  // when the replicas are measured, so Ada sees the same signal and takes the same decisions on each.
  TempDir dir;
  const fs::path config = write_config(dir.path(), config_text("dpsgd", "ada", 4, 120));
  run_engines(config, dir.path(), {"sim", "cpu", "torch"});
  const Schedule schedule = read_schedule(dir.path() / "sim" / "schedule.csv");
  CHECK(std::count(schedule.steps.begin(), schedule.steps.end(), '\n') == 121);
  CHECK(schedule.steps.find("global-average") != std::string::npos);
  check_same_schedule(read_schedule(dir.path() / "cpu" / "schedule.csv"), schedule, 1e-9);
  // LibTorch sums in another order: the same decisions, the signals within 1 %.
  check_same_schedule(read_schedule(dir.path() / "torch" / "schedule.csv"), schedule, 0.01);

  const auto sim = metrics_column(dir.path() / "sim" / "metrics.csv", "consensus_distance");
  const auto cpu = metrics_column(dir.path() / "cpu" / "metrics.csv", "consensus_distance");
  const auto torch = metrics_column(dir.path() / "torch" / "metrics.csv", "consensus_distance");
  REQUIRE(sim.size() == 4);  // iterations 0, 50, 100 and 120
  REQUIRE(cpu.size() == sim.size());
  REQUIRE(torch.size() == sim.size());
  for (std::size_t k = 1; k < sim.size(); ++k) {
    CAPTURE(k);
    CHECK(sim[k] > 0.0);
    CHECK(std::abs(cpu[k] - sim[k]) <= 1e-6 * sim[k]);
    CHECK(std::abs(torch[k] - sim[k]) <= 0.01 * sim[k]);
  }
}
#endif

TEST_CASE("runtime::train: a NaN loss ends the run with a divergence error") {
  TempDir dir;
  const fs::path config = write_config(dir.path(), config_text("centralized", "ring", 1, 50));
  const auto run = run_dbench("train " + config.string() + " -q --set train.lr=1e30 --out " +
                              (dir.path() / "out").string());
  CHECK(run.status != 0);
  CHECK(run.output.find("diverged") != std::string::npos);
  CHECK_FALSE(fs::exists(dir.path() / "out"));
}

TEST_CASE(
    "runtime::faults: a killed worker ends the run within 60 s naming it, and a resume reproduces the Ada "
    "run") {
  TempDir dir;
  // With shared momentum, whose state (the last average, its momentum, the steps since) comes back too.
  const fs::path config =
      write_config(dir.path(), config_text("dpsgd", "ada", 4, 60, "ada_shared_momentum = true\n"));
  const std::string common = "train " + config.string() + " --local 4 -q --checkpoint-every 20 ";
  const auto full = run_dbench(common + "--out " + (dir.path() / "full").string());
  INFO(full.output);
  REQUIRE(full.status == 0);

  const auto start = std::chrono::steady_clock::now();
  const auto killed = run_dbench(common + "--inject-kill 2:45 --out " + (dir.path() / "cut").string());
  const double elapsed = seconds_since(start);
  INFO(killed.output);
  CHECK(killed.status != 0);
  CHECK(elapsed < 60.0);
  CHECK(killed.output.find("rank 2") != std::string::npos);
  // The checkpoint of iteration 40 is intact, nothing of iteration 60 was published.
  CHECK(dbench::runtime::latest_checkpoint(dir.path() / "cut.checkpoints") == 40);

  const auto resumed = run_dbench(common + "--resume --out " + (dir.path() / "cut").string());
  INFO(resumed.output);
  REQUIRE(resumed.status == 0);
  for (int r = 0; r < 4; ++r) {
    CAPTURE(r);
    const auto a = dbench::runtime::read_checkpoint(dir.path() / "full.checkpoints", r);
    const auto b = dbench::runtime::read_checkpoint(dir.path() / "cut.checkpoints", r);
    CHECK(b.iterations_done == 60);
    CHECK(a.params == b.params);
    CHECK(a.momentum == b.momentum);
    CHECK(a.shared_momentum == b.shared_momentum);
    CHECK_FALSE(b.shared_previous.empty());
  }
  std::ifstream full_metrics(dir.path() / "full" / "metrics.csv");
  std::ifstream cut_metrics(dir.path() / "cut" / "metrics.csv");
  const std::string m1((std::istreambuf_iterator<char>(full_metrics)), {});
  const std::string m2((std::istreambuf_iterator<char>(cut_metrics)), {});
  CHECK(m1 == m2);
  // Ada's state came back too: the resumed run chose the same steps and measured the same signals, and Ada
  // used both of its rungs.
  std::ifstream full_schedule(dir.path() / "full" / "schedule.csv");
  std::ifstream cut_schedule(dir.path() / "cut" / "schedule.csv");
  const std::string s1((std::istreambuf_iterator<char>(full_schedule)), {});
  const std::string s2((std::istreambuf_iterator<char>(cut_schedule)), {});
  CHECK(s1 == s2);
  CHECK(s1.find(",global-average,") != std::string::npos);
  CHECK(s1.find(",local,") != std::string::npos);
}

TEST_CASE("runtime::faults: when the launcher keeps the job alive, the survivors name the lost worker") {
  // mpirun --enable-recovery does not kill the job when a worker dies: the workers' own timeout and liveness
  // round must end it (as under launchers that never kill).
  TempDir dir;
  const fs::path config = write_config(dir.path(), config_text("dpsgd", "ring", 3, 400));
  const std::string command = std::string(DBENCH_MPIEXEC) + (geteuid() == 0 ? " --allow-run-as-root" : "") +
                              " --oversubscribe --bind-to none --enable-recovery -n 3 \"" + DBENCH_EXE +
                              "\" train " + config.string() +
                              " -q --peer-timeout 5 --inject-kill 2:30 --out " +
                              (dir.path() / "out").string() + " 2>&1";
  const auto start = std::chrono::steady_clock::now();
  FILE* pipe = ::popen(command.c_str(), "r");
  REQUIRE(pipe != nullptr);
  std::string output;
  char buffer[4096];
  for (std::size_t n; (n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0;) {
    output.append(buffer, n);
  }
  ::pclose(pipe);
  INFO(output);
  CHECK(seconds_since(start) < 60.0);
  // Each survivor's error line names rank 2 among the lost (a survivor slowed down by a loaded machine may be
  // named too: "worker rank 1, 2 lost").
  for (const char* survivor : {"worker 0 of 3: worker rank ", "worker 1 of 3: worker rank "}) {
    CAPTURE(survivor);
    const auto at = output.find(survivor);
    REQUIRE(at != std::string::npos);
    const std::string line = output.substr(at, output.find('\n', at) - at);
    CHECK(line.find("2 lost") != std::string::npos);
  }
}

TEST_CASE("runtime::faults: a damaged checkpoint part ends the resume at once, naming its file and field") {
  TempDir dir;
  const fs::path config = write_config(dir.path(), config_text("dpsgd", "ring", 3, 20));
  const std::string common = "train " + config.string() + " --local 3 -q --checkpoint-every 10 --out " +
                             (dir.path() / "out").string() + " ";
  const auto first = run_dbench(common);
  INFO(first.output);
  REQUIRE(first.status == 0);
  // Rank 1's SGD step count garbled: before, the resume counted to 2^64 while its peers waited for it.
  const fs::path part = dir.path() / "out.checkpoints" / "step-0000000020" / "rank-00001.bin";
  std::string bytes = dbench::testing::read_file(part);
  const std::size_t sgd_steps =
      8 + 8 + dbench::runtime::read_checkpoint(part.parent_path().parent_path(), 1).run_key.size() + 4 + 4 +
      8;
  REQUIRE(bytes.size() > sgd_steps + 8);
  for (std::size_t k = 0; k < 8; ++k) {
    bytes[sgd_steps + k] = '\xff';
  }
  dbench::testing::write_file(part, bytes);
  const auto start = std::chrono::steady_clock::now();
  const auto resumed = run_dbench(common + "--resume");
  const double elapsed = seconds_since(start);
  INFO(resumed.output);
  CHECK(resumed.status != 0);
  CHECK(elapsed < 20.0);
  CHECK(resumed.output.find(part.string() + ": damaged checkpoint (sgd_steps: 18446744073709551615 steps in "
                                            "20 iterations)") != std::string::npos);
}
