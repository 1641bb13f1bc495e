// dbench sweep with timing_only = true: each run is `simulate --timing-only`, summary.csv leaves the accuracy
// empty and carries the timed model's size, the report plots scaling efficiency against it, and resume,
// shards and merge work as for a trained sweep.
#include <doctest/doctest.h>
#include <fmt/core.h>
#include <fmt/format.h>
#include <signal.h>

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "experiments/config.hpp"
#include "experiments/sweep.hpp"
#include "models/model_zoo.hpp"
#include "results/summary_csv.hpp"
#include "support/files.hpp"
#include "support/processes.hpp"
#include "support/run_dbench.hpp"
#include "support/temp_dir.hpp"
#include "sweep_fixtures.hpp"

namespace {

namespace fs = std::filesystem;
namespace ex = dbench::experiments;
using dbench::testing::read_file;
using dbench::testing::run_dbench;
using dbench::testing::TempDir;
using dbench::testing::write_file;
using ex::testing::sweep_command;
using ex::testing::sweep_error;

// 2 models x 2 communications on 8 GPUs, 3 iterations: a second or two of timing in all.
constexpr const char* kTinyTimingSweep = R"(name = "timed"
timing_only = true
[set]
"train.workers" = 8
"train.iterations" = 3
"platform.preset" = "frontier"
[grid]
"platform.timing_model" = ["resnet20", "resnet50"]
algorithm = ["centralized", "ring"]
)";

const std::vector<std::string> kIds = {"timing_model-resnet20_centralized", "timing_model-resnet20_ring",
                                       "timing_model-resnet50_centralized", "timing_model-resnet50_ring"};

std::vector<dbench::results::SummaryRow> summary_rows(const fs::path& out) {
  return dbench::results::parse_summary_csv(read_file(out / "summary.csv"), "summary.csv");
}

}  // namespace

TEST_CASE(
    "experiments::sweep: a timing-only sweep leaves accuracy empty, carries the model's size and plots "
    "efficiency against it") {
  const TempDir temp;
  const fs::path sweep = temp.path() / "timed.toml";
  write_file(sweep, kTinyTimingSweep);
  const fs::path out = temp.path() / "out";
  const auto result = run_dbench(sweep_command(sweep, out, "-j 2"));
  CAPTURE(result.output);
  REQUIRE(result.status == 0);
  CHECK(result.output.find("4 runs (timing only)") != std::string::npos);

  const auto rows = summary_rows(out);
  REQUIRE(rows.size() == kIds.size());
  // The raw cells: empty, not zero.
  const std::string csv = read_file(out / "summary.csv");
  for (std::size_t r = 0; r < rows.size(); ++r) {
    const auto& row = rows[r];
    CAPTURE(row.run);
    CHECK(row.run == kIds[r]);
    CHECK(row.status == "done");
    CHECK(row.timing_only());
    const std::string model = r < 2 ? "resnet20" : "resnet50";
    CHECK(row.timing_model == model);
    CHECK(row.platform == "frontier");
    CHECK(row.parameters == static_cast<double>(dbench::models::timing_profile(model).parameter_count()));
    for (const double empty :
         {row.final_test_accuracy, row.best_test_accuracy, row.final_test_loss, row.target_accuracy,
          row.iterations_to_target, row.norm_variance_mean, row.consensus_distance_final}) {
      CHECK(std::isnan(empty));
    }
    CHECK(row.iterations == 3);
    CHECK(row.scaling_efficiency > 0.0);
    CHECK(row.scaling_efficiency <= 1.0);
    CHECK(row.edges == (r % 2 == 0 ? 28.0 : 8.0));  // all-reduce: the complete graph; a ring: n edges
    const auto summary = nlohmann::json::parse(read_file(out / "runs" / row.run / "summary.json"));
    CHECK(summary.at("timing_only") == true);
    CHECK(summary.at("scaling_efficiency").get<double>() == row.scaling_efficiency);
    CHECK(summary.at("timing_model_parameters").get<double>() == row.parameters);
    CHECK_FALSE(fs::exists(out / "runs" / row.run / "metrics.csv"));
    const std::string line_start = row.run + ",done,";
    const auto at = csv.find(line_start);
    REQUIRE(at != std::string::npos);
    CHECK(csv.substr(at, csv.find('\n', at) - at).find(",,,,") != std::string::npos);
  }

  // The report: efficiency against size, one line per communication; no accuracy, no verdicts.
  const std::string markdown = read_file(out / "report.md");
  CHECK(markdown.find("(timing only)") != std::string::npos);
  CHECK(markdown.find("plots/efficiency-size-1.svg") != std::string::npos);
  CHECK(fs::exists(out / "plots" / "efficiency-size-1.svg"));
  CHECK(markdown.find("frontier, 8 GPUs") != std::string::npos);
  CHECK(markdown.find("| model | parameters | all-reduce | ring |") != std::string::npos);
  CHECK(markdown.find(fmt::format("| resnet50 | {} |", rows[2].parameters)) != std::string::npos);
  CHECK(markdown.find("observations") == std::string::npos);
  CHECK(markdown.find("accuracy (%)") == std::string::npos);
  const std::string svg = read_file(out / "plots" / "efficiency-size-1.svg");
  CHECK(svg.find("all-reduce") != std::string::npos);
  CHECK(svg.find("ring") != std::string::npos);

  // Resume: nothing runs again; a trained sweep of the same grid would not keep these runs.
  const auto rerun = run_dbench(sweep_command(sweep, out, "-j 2 --no-report"));
  CAPTURE(rerun.output);
  REQUIRE(rerun.status == 0);
  CHECK(rerun.output.find("4 finished earlier, 0 to run") != std::string::npos);
  const auto config = ex::load_config_file(out / "runs" / kIds[0] / "config.toml");
  CHECK(ex::check_run(out / "runs" / kIds[0], config, true).finished);
  const ex::RunCheck trained = ex::check_run(out / "runs" / kIds[0], config, false);
  CHECK_FALSE(trained.finished);
  CHECK(trained.reason.find("timing-only run") != std::string::npos);
}

TEST_CASE("experiments::sweep: a timing-only sweep's shards merge into the unsharded summary") {
  const TempDir temp;
  const fs::path sweep = temp.path() / "timed.toml";
  write_file(sweep, kTinyTimingSweep);
  const fs::path out = temp.path() / "sharded";
  for (const char* shard : {"1/2", "2/2"}) {
    const auto result = run_dbench(sweep_command(sweep, out, fmt::format("--shard {}", shard)));
    CAPTURE(result.output);
    REQUIRE(result.status == 0);
  }
  const auto merge = run_dbench(sweep_command(sweep, out, ""));
  CAPTURE(merge.output);
  REQUIRE(merge.status == 0);
  CHECK(merge.output.find("4 finished earlier, 0 to run") != std::string::npos);
  const auto rows = summary_rows(out);
  REQUIRE(rows.size() == kIds.size());
  for (const auto& row : rows) {
    CHECK(row.timing_only());
    CHECK(row.parameters > 0.0);
  }
  CHECK(read_file(out / "report.md").find("plots/efficiency-size-1.svg") != std::string::npos);
}

TEST_CASE("experiments::sweep: timing_only is checked like every sweep key") {
  const TempDir temp;
  const std::string grid = "[grid]\n\"train.workers\" = [8]\n";
  const std::pair<std::string, std::string> cases[] = {
      {"timing_only = \"yes\"\n" + grid, "bad.toml:1:15: timing_only: expected true or false"},
      {"timing_onyl = true\n" + grid, "did you mean 'timing_only'"},
      {"timing_only = true\ntarget_accuracy = 0.9\n" + grid,
       "bad.toml:2:19: target_accuracy: a timing-only sweep (timing_only = true) measures no accuracy"},
  };
  for (const auto& [text, expected] : cases) {
    CAPTURE(text);
    const std::string message = sweep_error(text, temp.path());
    CAPTURE(message);
    CHECK(message.find(expected) != std::string::npos);
  }
  CHECK(ex::parse_sweep("timing_only = true\n" + grid, "ok.toml", temp.path()).timing_only);
  CHECK_FALSE(ex::parse_sweep("timing_only = false\ntarget_accuracy = 0.9\n" + grid, "ok.toml", temp.path())
                  .timing_only);
  CHECK_FALSE(ex::parse_sweep(grid, "ok.toml", temp.path()).timing_only);
}

TEST_CASE("experiments::sweep: a timing-only run that fails leaves its error in its log, the others finish") {
  const TempDir temp;
  const fs::path sweep = temp.path() / "fails.toml";
  // The second run's schedule cannot fit in memory: simulate refuses it, after the sweep has started it.
  write_file(sweep, R"(name = "fails"
timing_only = true
[set]
"train.workers" = 8
"platform.preset" = "frontier"
"platform.timing_model" = "resnet20"
"algorithm.kind" = "dpsgd"
"algorithm.graph" = "ring"
[grid]
"train.iterations" = [3, 2147483647]
)");
  const fs::path out = temp.path() / "out";
  const auto result = run_dbench(sweep_command(sweep, out, "-j 2"));
  CAPTURE(result.output);
  CHECK(result.status == 1);
  CHECK(result.output.find("1 of 2 runs failed: iterations-2147483647") != std::string::npos);
  const std::string log = read_file(out / "logs" / "iterations-2147483647.log");
  CHECK(log.find("dbench: error: train.iterations: this run needs about") != std::string::npos);
  CHECK(log.find("dbench sweep: failed (exit status 1)") != std::string::npos);
  const auto rows = summary_rows(out);
  REQUIRE(rows.size() == 2);
  CHECK(rows[0].status == "done");
  CHECK(rows[1].status == "failed");
}

TEST_CASE("experiments::sweep: timing-only runs do not outlive a sweep killed outright") {
  const TempDir temp;
  const fs::path sweep = temp.path() / "long.toml";
  // Two runs of several seconds each: 10,080 concurrent transfers, and auto's candidate all-reduces.
  write_file(sweep, R"(name = "long"
timing_only = true
[set]
"train.workers" = 1008
"train.iterations" = 3
"platform.preset" = "summit"
"platform.timing_model" = "bert_base"
[grid]
algorithm = ["exponential", "centralized"]
)");
  const fs::path out = temp.path() / "killed";
  // A timing-only run is the sweep forked: it carries the sweep's command line, --out included.
  dbench::testing::BackgroundDbench background(
      {"sweep", sweep.string(), "--out", out.string(), "-j", "2", "-q"}, temp.path() / "sweep.log",
      out.string());
  const auto processes = [&] { return dbench::testing::processes_with(out.string()); };
  REQUIRE(dbench::testing::wait_until(60, [&] { return processes().size() == 3; }));
  ::kill(background.pid(), SIGKILL);
  CHECK(dbench::testing::wait_until(10, [&] { return processes().empty(); }));
  std::vector<std::string> staged;
  for (const auto& entry : fs::directory_iterator(out / "runs")) {
    staged.push_back(entry.path().filename().string());
  }
  CAPTURE(fmt::format("{}", fmt::join(staged, ", ")));
  CHECK(staged.empty());
}

TEST_CASE(
    "experiments::config: a timing-only run reads no data, so its shards go unchecked; training keeps them") {
  const std::string too_many = "[train]\nworkers = 65536\n[algorithm]\nkind = \"centralized\"\n";
  const std::string big_batch = "[train]\nworkers = 64\nbatch_per_worker = 1000\n";
  for (const auto& text : {too_many, big_batch}) {
    CAPTURE(text);
    CHECK_THROWS_AS(ex::load_config(text, {}, "test.toml"), ex::ConfigError);
    CHECK_NOTHROW(ex::load_config(text, {}, "test.toml", ex::Validation::timing_only));
  }
  CHECK_THROWS_WITH_AS(ex::load_config(too_many, {}, "test.toml"),
                       doctest::Contains("train.workers: 65536 replicas cannot share fashion-mnist's 60000"),
                       ex::ConfigError);
  // What a timing-only run does use is still checked: the platform.
  CHECK_THROWS_WITH_AS(ex::load_config("[platform]\ngpus_per_node = 8\n[train]\nworkers = 12\n", {},
                                       "test.toml", ex::Validation::timing_only),
                       doctest::Contains("platform.gpus_per_node: 12 GPUs do not fill whole nodes of 8 GPUs"),
                       ex::ConfigError);
}

TEST_CASE(
    "experiments::sweep: a timing-only sweep and simulate --timing-only time more replicas than samples") {
  const TempDir temp;
  const std::string sweep_text =
      "[set]\n\"train.dataset\" = \"synthetic\"\n\"train.synthetic_samples\" = 4\n"
      "[grid]\n\"train.workers\" = [8]\n";
  CHECK(
      ex::expand_sweep(ex::parse_sweep("timing_only = true\n" + sweep_text, "ok.toml", temp.path())).size() ==
      1);
  CHECK_THROWS_WITH_AS(ex::expand_sweep(ex::parse_sweep(sweep_text, "trained.toml", temp.path())),
                       doctest::Contains("8 replicas cannot share synthetic's 4 training samples"),
                       ex::ConfigError);

  const std::string sets =
      "--set train.dataset=synthetic --set train.synthetic_samples=4 --set train.workers=8 "
      "--set train.iterations=2 --set platform.preset=frontier --set platform.timing_model=resnet20";
  const auto timed = run_dbench(
      fmt::format("simulate --timing-only --quiet --out \"{}\" {}", (temp.path() / "timed").string(), sets));
  CAPTURE(timed.output);
  CHECK(timed.status == 0);
  CHECK(fs::is_regular_file(temp.path() / "timed" / "summary.json"));
  const auto trained =
      run_dbench(fmt::format("simulate --quiet --out \"{}\" {}", (temp.path() / "trained").string(), sets));
  CAPTURE(trained.output);
  CHECK(trained.status != 0);
  CHECK(trained.output.find("train.workers: 8 replicas cannot share synthetic's 4 training samples") !=
        std::string::npos);
}
