// dbench sweep: grids expanded and validated before anything runs, tiny real sweeps whose summary.csv is
// checked against the runs' own files and against closed forms, resume, shards and parallel runs.
#include <doctest/doctest.h>
#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "experiments/config.hpp"
#include "experiments/sweep.hpp"
#include "support/approx.hpp"
#include "support/files.hpp"
#include "support/processes.hpp"
#include "support/run_dbench.hpp"
#include "support/temp_dir.hpp"
#include "sweep_fixtures.hpp"

namespace {

using dbench::testing::read_file;
using dbench::testing::write_file;

namespace fs = std::filesystem;
namespace ex = dbench::experiments;
using dbench::testing::run_dbench;
using dbench::testing::TempDir;
using ex::testing::sweep_command;
using ex::testing::sweep_error;

constexpr double kPi = 3.14159265358979323846;

// Small and quick: 8 replicas, 10 iterations, evaluations on a subset; timing of the MLP itself.
constexpr const char* kTinySet = R"([set]
"train.iterations" = 10
"train.eval_every" = 5
"train.eval_samples" = 500
"train.replica_eval_samples" = 64
"platform.timing_model" = "mlp"
)";

std::string quoted(const fs::path& path) {
  return fmt::format("\"{}\"", path.string());
}

bool one_line(const std::string& text) {
  return std::count(text.begin(), text.end(), '\n') == 1 && text.back() == '\n';
}

// A CSV file (no quoted cells in the ones checked here): header, rows by column name, and raw cells.
struct Csv {
  std::vector<std::string> header;
  std::vector<std::map<std::string, std::string>> rows;
  std::vector<std::vector<std::string>> cells;
};

std::vector<std::string> split(const std::string& line) {
  std::vector<std::string> out(1);
  for (const char c : line) {
    if (c == ',') {
      out.emplace_back();
    } else {
      out.back() += c;
    }
  }
  return out;
}

Csv read_csv(const fs::path& path) {
  Csv csv;
  std::istringstream in(read_file(path));
  std::string line;
  std::getline(in, line);
  csv.header = split(line);
  while (std::getline(in, line)) {
    csv.cells.push_back(split(line));
    std::map<std::string, std::string> row;
    for (std::size_t i = 0; i < csv.header.size() && i < csv.cells.back().size(); ++i) {
      row.emplace(csv.header[i], csv.cells.back()[i]);  // a repeated name keeps the first: the fixed column
    }
    csv.rows.push_back(std::move(row));
  }
  return csv;
}

double number(const std::string& text) {
  REQUIRE_FALSE(text.empty());
  return std::stod(text);
}

std::string sweep_text(const std::string& name, const std::string& grid, const std::string& extra = "") {
  return fmt::format("name = \"{}\"\n{}{}\n[grid]\n{}", name, extra, kTinySet, grid);
}

}  // namespace

TEST_CASE("experiments::sweep: the grid expands in the order written, with ids, labels and overrides") {
  const auto sweep = ex::parse_sweep(R"(
name = "g"
[set]
"train.iterations" = 10
[grid]
algorithm = ["centralized", "ada"]
"algorithm.ada_low" = [1e-3, 2e-3]
"train.workers" = [16, 64]
seed = [1, 2]
)",
                                     "g.toml", ".");
  REQUIRE(sweep.grid.size() == 4);
  CHECK(sweep.grid[0].key == "algorithm");
  CHECK(sweep.grid[3].key == "seed");
  const auto runs = ex::expand_sweep(sweep);
  REQUIRE(runs.size() == 16);
  // The last axis varies fastest.
  CHECK(runs[0].id == "centralized_ada_low-0.001_w16_s1");
  CHECK(runs[1].id == "centralized_ada_low-0.001_w16_s2");
  CHECK(runs[2].id == "centralized_ada_low-0.001_w64_s1");
  CHECK(runs[15].id == "ada_ada_low-0.002_w64_s2");
  CHECK(runs[0].label == "centralized ada_low=0.001");
  CHECK(runs[15].label == "ada ada_low=0.002");
  CHECK(runs[0].config.algorithm.kind == "centralized");
  CHECK(runs[15].config.algorithm.kind == "dpsgd");
  CHECK(runs[15].config.algorithm.graph == "ada");
  CHECK(runs[15].config.algorithm.ada_low == dbench::testing::approx(2e-3));
  CHECK(runs[15].config.train.workers == 64);
  CHECK(runs[15].config.seed == 2);
  CHECK(runs[15].config.train.iterations == 10);
  CHECK(runs[15].config.name == runs[15].id);
  CHECK(runs[15].axis_values == std::vector<std::string>{"ada", "0.002", "64", "2"});
  for (std::size_t i = 0; i < runs.size(); ++i) {
    CHECK(runs[i].index == i);
    CHECK(std::count_if(runs.begin(), runs.end(), [&](const auto& r) { return r.id == runs[i].id; }) == 1);
  }
}

TEST_CASE("experiments::sweep: shards partition the grid") {
  CHECK_THROWS_AS(ex::parse_shard("0/2"), ex::ConfigError);
  CHECK_THROWS_AS(ex::parse_shard("3/2"), ex::ConfigError);
  CHECK_THROWS_AS(ex::parse_shard("1-2"), ex::ConfigError);
  CHECK_THROWS_AS(ex::parse_shard("/2"), ex::ConfigError);
  CHECK_THROWS_AS(ex::parse_shard("a/b"), ex::ConfigError);
  const ex::Shard shards[] = {ex::parse_shard("1/3"), ex::parse_shard("2/3"), ex::parse_shard("3/3")};
  for (std::size_t run = 0; run < 20; ++run) {
    CHECK(std::count_if(std::begin(shards), std::end(shards),
                        [run](const ex::Shard& s) { return s.contains(run); }) == 1);
  }
  CHECK(ex::parse_shard("2/3").contains(4));
}

TEST_CASE("experiments::sweep: a tiny sweep's summary.csv agrees with its runs and with closed forms") {
  const TempDir temp;
  // The base file carries the data set; the sweep names it relative to itself.
  fs::create_directories(temp.path() / "configs");
  write_file(temp.path() / "configs" / "base.toml",
             "[train]\ndataset = \"fashion-mnist\"\nbatch_per_worker = 16\n");
  const fs::path sweep = temp.path() / "configs" / "tiny.toml";
  write_file(
      sweep,
      sweep_text("tiny", "algorithm = [\"ring\", \"complete\"]\n\"train.workers\" = [8]\nseed = [1, 2]\n",
                 "base = \"base.toml\"\ntarget_accuracy = 0.3\n"));
  const fs::path out = temp.path() / "out";
  const auto result = run_dbench(sweep_command(sweep, out, "-j 2"));
  CAPTURE(result.output);
  REQUIRE(result.status == 0);
  CHECK(result.output.find(fmt::format("summary: {}", (out / "summary.csv").string())) != std::string::npos);
  CHECK(read_file(out / "sweep.toml") == read_file(sweep));

  const Csv csv = read_csv(out / "summary.csv");
  const auto columns = ex::summary_columns();
  REQUIRE(csv.header.size() == columns.size() + 3);
  for (std::size_t i = 0; i < columns.size(); ++i) {
    CHECK(csv.header[i] == columns[i]);
  }
  CHECK(csv.header[columns.size()] == "grid.algorithm");  // named apart from the algorithm column
  CHECK(csv.header[columns.size() + 1] == "train.workers");
  CHECK(csv.header[columns.size() + 2] == "grid.seed");
  REQUIRE(csv.rows.size() == 4);
  const std::vector<std::string> ids = {"ring_w8_s1", "ring_w8_s2", "complete_w8_s1", "complete_w8_s2"};
  ex::GraphStatsCache cache;
  for (std::size_t r = 0; r < 4; ++r) {
    const auto& row = csv.rows[r];
    CAPTURE(ids[r]);
    CHECK(csv.cells[r].size() == csv.header.size());
    CHECK(row.at("run") == ids[r]);
    CHECK(row.at("status") == "done");
    const bool ring = r < 2;
    CHECK(row.at("label") == (ring ? "ring" : "complete"));
    CHECK(row.at("algorithm") == "dpsgd");
    CHECK(row.at("graph") == (ring ? "ring" : "complete"));
    CHECK(row.at("workers") == "8");
    CHECK(row.at("seed") == (r % 2 == 0 ? "1" : "2"));
    CHECK(csv.cells[r][columns.size()] == (ring ? "ring" : "complete"));

    // Against the run's own files.
    const fs::path run_dir = out / "runs" / ids[r];
    CHECK(fs::exists(out / "logs" / fmt::format("{}.log", ids[r])));
    const auto summary = nlohmann::json::parse(read_file(run_dir / "summary.json"));
    CHECK(number(row.at("final_test_accuracy")) == summary.at("final_test_accuracy").get<double>());
    CHECK(number(row.at("best_test_accuracy")) == summary.at("best_test_accuracy").get<double>());
    CHECK(number(row.at("seconds_per_iteration")) == summary.at("seconds_per_iteration").get<double>());
    CHECK(number(row.at("wall_seconds")) == summary.at("wall_seconds").get<double>());
    CHECK(row.at("iterations") == "10");
    // The design: a budget in iterations, 8 x 16 samples an iteration, the lr unscaled.
    CHECK(row.at("epochs").empty());
    CHECK(row.at("global_batch") == "128");
    CHECK(row.at("train_samples") == "60000");
    CHECK(row.at("samples") == "1280");
    CHECK(number(row.at("peak_lr")) == 0.1);
    CHECK(number(row.at("bytes_per_gpu")) ==
          dbench::testing::approx(10 * summary.at("bytes_per_gpu_per_iteration").get<double>()));
    const Csv metrics = read_csv(run_dir / "metrics.csv");
    REQUIRE(metrics.rows.size() == 3);  // iterations 0, 5 and 10
    CHECK(number(row.at("norm_variance_final")) == number(metrics.rows.back().at("norm_variance")));
    CHECK(number(row.at("consensus_distance_mean")) ==
          dbench::testing::approx((number(metrics.rows[1].at("consensus_distance")) +
                                   number(metrics.rows[2].at("consensus_distance"))) /
                                  2));
    CHECK(number(row.at("target_accuracy")) == 0.3);
    std::string first_at_target;
    for (const auto& m : metrics.rows) {
      if (first_at_target.empty() && number(m.at("test_accuracy")) >= 0.3) {
        first_at_target = m.at("iteration");
      }
    }
    CHECK(row.at("iterations_to_target") == first_at_target);
    if (!first_at_target.empty()) {
      for (const auto& a : read_csv(run_dir / "accuracy_time.csv").rows) {
        if (a.at("iteration") == first_at_target) {
          CHECK(row.at("simulated_time_to_target_s") == a.at("simulated_time_s"));
        }
      }
    }

    // Against closed forms: a ring has n edges and gap (2/3)(1 - cos(2 pi / n)); the complete graph
    // n(n-1)/2 edges and gap 1.
    const double n = 8;
    CHECK(number(row.at("edges")) == (ring ? n : n * (n - 1) / 2));
    CHECK(number(row.at("mean_degree")) == (ring ? 2 : n - 1));
    CHECK(number(row.at("spectral_gap")) ==
          dbench::testing::approx(ring ? 2.0 / 3.0 * (1.0 - std::cos(2.0 * kPi / n)) : 1.0).epsilon(1e-9));

    // The library function gives the same row without the command line.
    const dbench::results::SummaryRow direct = ex::summarize_run(run_dir, 0.3, cache);
    CHECK(direct.edges == number(row.at("edges")));
    CHECK(direct.final_test_accuracy == number(row.at("final_test_accuracy")));
  }
}

TEST_CASE("experiments::sweep: a fixed-epoch sweep trains every scale on the same samples") {
  // 2 epochs of a 1,600-sample teacher task: 4 x 16 samples an iteration take 50 iterations, 8 x 16 take 25;
  // the lr scales with the global batch (x 0.25 and x 0.5 of the 256-sample reference).
  const TempDir temp;
  const fs::path sweep = temp.path() / "epochs.toml";
  write_file(sweep, R"(name = "epochs"
[set]
"train.dataset" = "synthetic"
"train.synthetic_samples" = 1600
"train.synthetic_seed" = 5
"train.epochs" = 2
"train.linear_scaling" = true
"train.eval_every_epochs" = 0.5
"train.eval_samples" = 500
"train.replica_eval_samples" = 64
"platform.timing_model" = "mlp"
[grid]
algorithm = ["ring"]
"train.workers" = [4, 8]
)");
  const fs::path out = temp.path() / "out";
  const auto result = run_dbench(sweep_command(sweep, out, "-j 2"));
  CAPTURE(result.output);
  REQUIRE(result.status == 0);
  const Csv csv = read_csv(out / "summary.csv");
  REQUIRE(csv.rows.size() == 2);
  for (std::size_t r = 0; r < 2; ++r) {
    const auto& row = csv.rows[r];
    const int workers = r == 0 ? 4 : 8;
    CAPTURE(workers);
    CHECK(row.at("status") == "done");
    CHECK(number(row.at("epochs")) == 2.0);
    CHECK(number(row.at("iterations")) == 3200 / (16 * workers));
    CHECK(number(row.at("global_batch")) == 16 * workers);
    CHECK(row.at("train_samples") == "1600");
    CHECK(row.at("samples") == "3200");
    CHECK(number(row.at("peak_lr")) == dbench::testing::approx(0.1 * 16 * workers / 256));
    // Evaluations every half epoch: 4 of them after iteration 0.
    CHECK(read_csv(out / "runs" / row.at("run") / "metrics.csv").rows.size() == 5);
  }
  const std::string report = read_file(out / "report.md");
  CHECK(report.find("fixed sample budget: every run trains 2 epochs of the 1600-sample training set") !=
        std::string::npos);
}

TEST_CASE("experiments::sweep: a rerun skips finished runs and runs only what is missing or changed") {
  const TempDir temp;
  const fs::path sweep = temp.path() / "resume.toml";
  write_file(sweep,
             sweep_text("resume", "algorithm = [\"ring\"]\n\"train.workers\" = [8]\nseed = [1, 2, 3]\n"));
  const fs::path out = temp.path() / "out";
  const std::string command = sweep_command(sweep, out, "-j 2 --no-report");
  REQUIRE(run_dbench(command).status == 0);
  const fs::path kept = out / "runs" / "ring_w8_s1" / "summary.json";
  const auto kept_time = fs::last_write_time(kept);
  // Run 2 is lost; run 3 was made by another config (a sweep whose [set] changed since).
  fs::remove_all(out / "runs" / "ring_w8_s2");
  const fs::path changed = out / "runs" / "ring_w8_s3" / "config.toml";
  auto other = ex::load_config_file(changed);
  other.train.iterations = 12;
  write_file(changed, ex::to_toml(other));

  const auto rerun = run_dbench(command);
  CAPTURE(rerun.output);
  REQUIRE(rerun.status == 0);
  CHECK(rerun.output.find("skipped ring_w8_s1") != std::string::npos);
  CHECK(rerun.output.find("1 finished earlier, 2 to run") != std::string::npos);
  CHECK(fs::last_write_time(kept) == kept_time);
  CHECK(read_file(out / "logs" / "ring_w8_s1.log").find("skipped") != std::string::npos);
  CHECK(fs::exists(out / "runs" / "ring_w8_s2" / "summary.json"));
  CHECK(ex::load_config_file(changed).train.iterations == 10);
  const Csv csv = read_csv(out / "summary.csv");
  REQUIRE(csv.rows.size() == 3);
  for (const auto& row : csv.rows) {
    CHECK(row.at("status") == "done");
  }
}

TEST_CASE(
    "experiments::sweep: shards 1/2 and 2/2 partition the grid; summary.csv lists every run and a shard "
    "names the merge") {
  const TempDir temp;
  const fs::path sweep = temp.path() / "shards.toml";
  write_file(sweep,
             sweep_text("shards", "algorithm = [\"ring\"]\n\"train.workers\" = [8]\nseed = [1, 2, 3]\n"));
  const fs::path out = temp.path() / "out";

  const auto first = run_dbench(sweep_command(sweep, out, "-j 2 --shard 1/2"));
  CAPTURE(first.output);
  REQUIRE(first.status == 0);
  // The other shard's run is pending; the report is the merge's, and the shard says how to run it.
  CHECK(first.output.find(fmt::format("shard 1/2: 1 of the grid's runs are not finished here yet; once every "
                                      "shard has ended, merge them into summary.csv and the report with: "
                                      "dbench sweep {} --out {}",
                                      sweep.string(), out.string())) != std::string::npos);
  CHECK_FALSE(fs::exists(out / "report.html"));
  CHECK(fs::exists(out / "runs" / "ring_w8_s1"));
  CHECK_FALSE(fs::exists(out / "runs" / "ring_w8_s2"));
  CHECK(fs::exists(out / "runs" / "ring_w8_s3"));
  Csv csv = read_csv(out / "summary.csv");
  REQUIRE(csv.rows.size() == 3);
  CHECK(csv.rows[0].at("status") == "done");
  CHECK(csv.rows[1].at("status") == "pending");
  CHECK(csv.rows[1].at("final_test_accuracy").empty());
  CHECK(csv.rows[1].at("workers") == "8");
  CHECK(csv.rows[2].at("status") == "done");

  const auto second = run_dbench(sweep_command(sweep, out, "--shard 2/2"));
  CAPTURE(second.output);
  REQUIRE(second.status == 0);
  CHECK(second.output.find("0 finished earlier, 1 to run") != std::string::npos);
  CHECK(second.output.find(fmt::format("shard 2/2: every run of the grid is finished; write the report with: "
                                       "dbench sweep {} --out {}",
                                       sweep.string(), out.string())) != std::string::npos);
  csv = read_csv(out / "summary.csv");
  REQUIRE(csv.rows.size() == 3);
  for (const auto& row : csv.rows) {
    CHECK(row.at("status") == "done");
  }
  CHECK_FALSE(fs::exists(out / "report.html"));

  // The merge runs nothing again and writes the report.
  const auto merge = run_dbench(sweep_command(sweep, out, ""));
  CAPTURE(merge.output);
  REQUIRE(merge.status == 0);
  CHECK(merge.output.find("3 finished earlier, 0 to run") != std::string::npos);
  CHECK(fs::exists(out / "report.html"));
}

TEST_CASE("experiments::sweep: -j 2 gives the same summary as -j 1") {
  const TempDir temp;
  const fs::path sweep = temp.path() / "jobs.toml";
  write_file(sweep, sweep_text("jobs",
                               "algorithm = [\"one-peer-exponential\", \"centralized\"]\n"
                               "\"train.workers\" = [8]\n"));
  const auto serial = run_dbench(sweep_command(sweep, temp.path() / "j1", "-j 1 --no-report"));
  const auto parallel = run_dbench(sweep_command(sweep, temp.path() / "j2", "-j 2 --no-report"));
  CAPTURE(serial.output);
  CAPTURE(parallel.output);
  REQUIRE(serial.status == 0);
  REQUIRE(parallel.status == 0);
  Csv a = read_csv(temp.path() / "j1" / "summary.csv");
  Csv b = read_csv(temp.path() / "j2" / "summary.csv");
  REQUIRE(a.header == b.header);
  REQUIRE(a.cells.size() == 2);
  REQUIRE(b.cells.size() == 2);
  const auto wall = static_cast<std::size_t>(std::find(a.header.begin(), a.header.end(), "wall_seconds") -
                                             a.header.begin());
  for (std::size_t r = 0; r < 2; ++r) {
    a.cells[r][wall].clear();
    b.cells[r][wall].clear();
    CHECK(a.cells[r] == b.cells[r]);
  }
  // Centralized training counts as the complete graph: n(n-1)/2 edges, gap 1.
  CHECK(a.rows[1].at("graph") == "allreduce");
  CHECK(number(a.rows[1].at("spectral_gap")) == 1.0);
  CHECK(number(a.rows[1].at("edges")) == 28.0);
}

TEST_CASE("experiments::sweep: a bad sweep is refused before any run, naming the key") {
  const TempDir temp;
  const std::string grid = "[grid]\n\"train.workers\" = [8]\n";
  const std::pair<std::string, std::string> cases[] = {
      {"[grid]\n", "grid"},
      {"[set]\n\"train.iterations\" = 5\n", "grid"},
      {"[grid]\nseed = []\n", "seed"},
      {"[grid]\nseed = 1\n", "seed"},
      {"[grid]\n\"train.wrokers\" = [8]\n", "did you mean 'train.workers'"},
      {"[grid]\n\"train.workers\" = [\"8\"]\n", "train.workers"},
      {"[grid]\n\"train.workers\" = [0]\n", "train.workers"},
      {"[grid]\nalgorithm = [\"rnig\"]\n", "algorithm.graph"},
      {"[grid]\n\"algorithm.graph\" = [5]\n", "algorithm.graph"},
      {"[grid]\nalgorithm = [\"ring\"]\n\"algorithm.graph\" = [\"torus\"]\n", "algorithm.graph"},
      {fmt::format("[set]\n\"train.lr\" = \"fast\"\n{}", grid), "train.lr"},
      {fmt::format("[set]\n\"train.workers\" = 8\n{}", grid), "train.workers"},
      {fmt::format("nmae = \"x\"\n{}", grid), "did you mean 'name'"},
      {fmt::format("target_accuracy = 2\n{}", grid), "target_accuracy"},
      {fmt::format("base = \"missing.toml\"\n{}", grid), "base"},
      {"[grid]\nseed = [1, 1]\n", "seed"},
      {"[grid]\n\"train.lr\" = [0.1, nan]\n",
       "bad.toml:2:20: [grid] train.lr: must be a finite number, got nan"},
      {"[grid]\n\"train.lr\" = [inf]\n", "[grid] train.lr: must be a finite number, got inf"},
      {"[set]\n\"train.momentum\" = -inf\n[grid]\nseed = [1]\n",
       "[set] train.momentum: must be a finite number"},
      // Every expanded run is checked as simulate would check it: the run and the key are named.
      {"[grid]\n\"train.workers\" = [16, 512]\n\"train.batch_per_worker\" = [64, 128]\n",
       "bad.toml:3:33: train.batch_per_worker: 128 does not fit a replica's shard of 117 samples "
       "(fashion-mnist's "
       "60000 training samples over train.workers = 512) (from [grid] train.batch_per_worker = 128; run "
       "w512_batch_per_worker-128)"},
      {"[grid]\n\"train.workers\" = [8, 12]\nalgorithm = [\"hypercube\"]\n",
       "train.workers: a hypercube needs a "
       "power of two, got 12"},
  };
  for (const auto& [text, named] : cases) {
    CAPTURE(text);
    const std::string message = sweep_error(text, temp.path());
    CAPTURE(message);
    CHECK(message.starts_with("bad.toml"));
    CHECK(message.find('\n') == std::string::npos);
    CHECK(message.find(named) != std::string::npos);
  }
}

TEST_CASE("experiments::sweep: a bad sweep or shard exits with one line and writes nothing") {
  const TempDir temp;
  const fs::path out = temp.path() / "out";
  const fs::path bad = temp.path() / "bad.toml";
  write_file(bad, "[grid]\n\"train.wrokers\" = [8]\n");
  const auto result = run_dbench(sweep_command(bad, out, ""));
  CAPTURE(result.output);
  CHECK(result.status != 0);
  CHECK(one_line(result.output));
  CHECK(result.output.starts_with("dbench: error: "));
  CHECK(result.output.find("train.wrokers") != std::string::npos);
  CHECK_FALSE(fs::exists(out));

  // An existing directory is left as it was.
  const fs::path good = temp.path() / "good.toml";
  write_file(good, sweep_text("good", "\"train.workers\" = [8]\n"));
  fs::create_directories(out);
  write_file(out / "keep.txt", "mine");
  for (const std::string shard : {"0/2", "x/y"}) {
    const auto refused = run_dbench(sweep_command(good, out, fmt::format("--shard {}", shard)));
    CAPTURE(refused.output);
    CHECK(refused.status != 0);
    CHECK(one_line(refused.output));
    CHECK(refused.output.find("--shard") != std::string::npos);
  }
  const auto refused = run_dbench(sweep_command(bad, out, ""));
  CHECK(refused.status != 0);
  CHECK(std::distance(fs::directory_iterator(out), fs::directory_iterator()) == 1);
}

TEST_CASE("experiments::sweep: --dry-run lists the runs and writes nothing") {
  const TempDir temp;
  const fs::path sweep = temp.path() / "dry.toml";
  write_file(
      sweep,
      sweep_text("dry", "algorithm = [\"centralized\", \"exponential\"]\n\"train.workers\" = [16, 1008]\n"));
  const fs::path out = temp.path() / "out";
  const auto result = run_dbench(sweep_command(sweep, out, "--dry-run"));
  CAPTURE(result.output);
  REQUIRE(result.status == 0);
  for (const char* id : {"centralized_w16", "centralized_w1008", "exponential_w16", "exponential_w1008"}) {
    CHECK(result.output.find(id) != std::string::npos);
  }
  CHECK(result.output.find("algorithm.graph=\"exponential\" train.workers=1008") != std::string::npos);
  CHECK_FALSE(fs::exists(out));
}

TEST_CASE("experiments::sweep: every committed sweep builds and validates each of its runs") {
  const TempDir temp;
  const fs::path dir = fs::path(DBENCH_SOURCE_DIR) / "experiments" / "configs" / "sweeps";
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir)) {
    names.push_back(entry.path().filename().string());
    CAPTURE(entry.path());
    const auto sweep = ex::parse_sweep(read_file(entry.path()), entry.path().string(), dir);
    const auto runs = ex::expand_sweep(sweep);
    const auto result = run_dbench(sweep_command(entry.path(), temp.path() / "out", "--dry-run"));
    CAPTURE(result.output);
    CHECK(result.status == 0);
    CHECK(result.output.find(runs.back().id) != std::string::npos);
  }
  for (const char* name : {"quickstart.toml", "quickstart-10-epochs.toml", "paper.toml",
                           "paper-10-epochs.toml", "paper-fixed-iterations.toml", "paper-synthetic.toml"}) {
    CHECK(std::count(names.begin(), names.end(), name) == 1);
  }
}

TEST_CASE(
    "experiments::sweep: a rerun recomputes exactly the runs whose summary.json is damaged, saying why") {
  const TempDir temp;
  const fs::path sweep = temp.path() / "damaged.toml";
  write_file(sweep, sweep_text("damaged",
                               "algorithm = [\"ring\"]\n\"train.workers\" = [8]\nseed = [1, 2, 3, 4, 5]\n"));
  const fs::path out = temp.path() / "out";
  const std::string command = sweep_command(sweep, out, "-j 2 --no-report");
  REQUIRE(run_dbench(command).status == 0);
  const auto summary_of = [&](int seed) {
    return out / "runs" / fmt::format("ring_w8_s{}", seed) / "summary.json";
  };
  const fs::path kept = summary_of(1);
  const auto kept_time = fs::last_write_time(kept);
  // Garbage, a required key deleted, a key of the wrong type, the file deleted.
  write_file(summary_of(2), "{\"final_test_accuracy\": 0.5, garbage");
  auto json = nlohmann::json::parse(read_file(summary_of(3)));
  json.erase("final_test_accuracy");
  write_file(summary_of(3), json.dump(2));
  json = nlohmann::json::parse(read_file(summary_of(4)));
  json["best_test_accuracy"] = "high";
  write_file(summary_of(4), json.dump(2));
  fs::remove(summary_of(5));

  const auto rerun = run_dbench(command);
  CAPTURE(rerun.output);
  REQUIRE(rerun.status == 0);
  CHECK(rerun.output.find("1 finished earlier, 4 to run") != std::string::npos);
  CHECK(fs::last_write_time(kept) == kept_time);
  const std::pair<std::string, std::string> recomputed[] = {
      {"ring_w8_s2", "not valid JSON"},
      {"ring_w8_s3", "final_test_accuracy"},
      {"ring_w8_s4", "best_test_accuracy"},
      {"ring_w8_s5", "no summary.json"},
  };
  for (const auto& [id, reason] : recomputed) {
    CAPTURE(id);
    const auto at = rerun.output.find(fmt::format("recomputing {}: ", id));
    REQUIRE(at != std::string::npos);
    CHECK(rerun.output.find(fmt::format("recomputing {}: ", id), at + 1) == std::string::npos);
    CHECK(rerun.output.substr(at, rerun.output.find('\n', at) - at).find(reason) != std::string::npos);
  }
  CHECK(rerun.output.find("recomputing ring_w8_s1") == std::string::npos);
  const Csv csv = read_csv(out / "summary.csv");
  REQUIRE(csv.rows.size() == 5);
  for (int seed = 1; seed <= 5; ++seed) {
    const auto& row = csv.rows[static_cast<std::size_t>(seed - 1)];
    CAPTURE(seed);
    CHECK(row.at("status") == "done");
    const auto summary = nlohmann::json::parse(read_file(summary_of(seed)));
    CHECK(number(row.at("final_test_accuracy")) == summary.at("final_test_accuracy").get<double>());
    CHECK(number(row.at("best_test_accuracy")) == summary.at("best_test_accuracy").get<double>());
  }
}

TEST_CASE("experiments::sweep: runs do not outlive a sweep killed outright, and leave no staging behind") {
  const TempDir temp;
  const fs::path config = temp.path() / "long.toml";
  // Two runs long enough to be killed mid-way (each a few minutes alone).
  write_file(config, R"(name = "long"
[set]
"train.dataset" = "synthetic"
"train.iterations" = 100000
"train.eval_every" = 100000
"train.workers" = 64
"platform.timing_model" = "mlp"
[grid]
algorithm = ["ring", "exponential"]
)");
  const fs::path out = temp.path() / "killed-sweep";
  dbench::testing::BackgroundDbench sweep({"sweep", config.string(), "--out", out.string(), "-j", "2", "-q"},
                                          temp.path() / "sweep.log", out.string());
  const auto runs = [&] { return dbench::testing::processes_with(out.string() + "/runs/"); };
  REQUIRE(dbench::testing::wait_until(60, [&] { return runs().size() == 2; }));
  ::kill(sweep.pid(), SIGKILL);
  CHECK(dbench::testing::wait_until(10, [&] { return runs().empty(); }));
  std::vector<std::string> staged;
  for (const auto& entry : fs::directory_iterator(out / "runs")) {
    staged.push_back(entry.path().filename().string());
  }
  CAPTURE(fmt::format("{}", fmt::join(staged, ", ")));
  CHECK(staged.empty());
}

TEST_CASE("experiments::sweep: under taskset -c 0, sweep and simulate run one thread, not one per core") {
  const TempDir temp;
  const fs::path sweep = temp.path() / "pinned.toml";
  write_file(sweep, sweep_text("pinned", "algorithm = [\"ring\"]\n\"train.workers\" = [8]\n"));
  const std::string pinned = std::string("taskset -c 0 \"") + DBENCH_EXE + "\" ";
  const auto swept =
      dbench::testing::run_command(pinned + sweep_command(sweep, temp.path() / "out", "--no-report"));
  CAPTURE(swept.output);
  REQUIRE(swept.status == 0);
  CHECK(swept.output.find("-j 1, 1 thread each") != std::string::npos);

  const fs::path config = temp.path() / "pinned_run.toml";
  write_file(config,
             "name = \"pinned\"\n[train]\nworkers = 4\niterations = 3\nmlp_hidden = [16]\neval_every = 3\n"
             "eval_samples = 200\nreplica_eval_samples = 32\n[platform]\ntiming_model = \"mlp\"\n");
  const auto simulated = dbench::testing::run_command(pinned + "simulate " + quoted(config) + " --out " +
                                                      quoted(temp.path() / "run"));
  CAPTURE(simulated.output);
  REQUIRE(simulated.status == 0);
  CHECK(simulated.output.find("3 iterations, 1 thread\n") != std::string::npos);
}
