// The dbench command line as a user meets it: exit statuses, one-line errors naming the argument, files.
#include <doctest/doctest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "support/approx.hpp"
#include "support/files.hpp"
#include "support/run_dbench.hpp"

using dbench::testing::one_line;

namespace {

using dbench::testing::read_file;

namespace fs = std::filesystem;
using dbench::testing::run_dbench;

fs::path temp_dir(const std::string& name) {
  return fs::temp_directory_path() / ("dbench-test-" + name + "-" + std::to_string(::getpid()));
}

/// The committed quickstart config, quoted for the shell.
std::string quickstart() {
  std::string quoted(1, '"');
  quoted.append((fs::path(DBENCH_SOURCE_DIR) / "experiments" / "configs" / "quickstart.toml").string());
  quoted.push_back('"');
  return quoted;
}

}  // namespace

TEST_CASE("experiments::cli: bad graph arguments end with one line naming the argument") {
  const std::pair<std::string, std::string> cases[] = {
      {"graph --kind ring --nodes 0", "--nodes"},
      {"graph --kind ring --nodes 1", "--nodes"},
      {"graph --kind hypercube --nodes 1008", "--nodes"},
      {"graph --kind torus --nodes 1008 --shape 30x30", "--shape"},
      {"graph --kind random-regular --nodes 16 --degree 16", "--degree"},
      {"graph --kind exponential --nodes 16 --seed abc", "--seed"},
      {"graph --kind petersen --nodes 10", "--kind"},
      {"graph --kind ring --nodes 8 --no-such-option", "--no-such-option"},
      {"no-such-command", "no-such-command"},
  };
  for (const auto& [arguments, named] : cases) {
    CAPTURE(arguments);
    const auto result = run_dbench(arguments);
    CAPTURE(result.output);
    CHECK(result.status != 0);
    CHECK(one_line(result.output));
    CHECK(result.output.starts_with("dbench: error: "));
    CHECK(result.output.find(named) != std::string::npos);
  }
}

TEST_CASE("experiments::cli: graph --json carries kind, nodes, edges and spectral_gap") {
  const auto result = run_dbench("graph --kind ring --nodes 12 --json");
  REQUIRE(result.status == 0);
  const auto json = nlohmann::json::parse(result.output);
  CHECK(json.at("kind") == "ring");
  CHECK(json.at("nodes") == 12);
  CHECK(json.at("edges").get<int>() == 24);  // directed: each undirected edge both ways
  CHECK(json.at("spectral_gap").get<double>() ==
        dbench::testing::approx(2.0 / 3.0 * (1.0 - std::cos(2.0 * 3.14159265358979323846 / 12.0))));
}

TEST_CASE("experiments::cli: graphs writes its report into a results directory") {
  const fs::path out = temp_dir("graphs");
  fs::remove_all(out);
  const auto result = run_dbench("graphs --nodes 64 --out \"" + out.string() + "\"");
  CAPTURE(result.output);
  REQUIRE(result.status == 0);
  CHECK(result.output.find("one-peer-exponential") != std::string::npos);
  const auto json = nlohmann::json::parse(read_file(out / "graphs.json"));
  CHECK(json.size() >= 10);
  CHECK(fs::exists(out / "graphs.md"));
  fs::remove_all(out);
}

TEST_CASE("experiments::cli: simulate writes every file, and the same seed gives byte-identical metrics") {
  const fs::path a = temp_dir("sim-a");
  const fs::path b = temp_dir("sim-b");
  const std::string common = quickstart() + " --set train.iterations=30 --set train.eval_every=10 -q --out ";
  const auto first = run_dbench("simulate " + common + "\"" + a.string() + "\" --threads 1");
  CAPTURE(first.output);
  REQUIRE(first.status == 0);
  const auto second = run_dbench("simulate " + common + "\"" + b.string() + "\" --threads 2");
  REQUIRE(second.status == 0);
  for (const char* file :
       {"config.toml", "metrics.csv", "schedule.csv", "summary.json", "replica_norms.csv"}) {
    CAPTURE(file);
    CHECK(fs::exists(a / file));
  }
  CHECK(read_file(a / "metrics.csv") == read_file(b / "metrics.csv"));
  CHECK(read_file(a / "schedule.csv") == read_file(b / "schedule.csv"));
  const std::string metrics = read_file(a / "metrics.csv");
  CHECK(metrics.starts_with(
      "iteration,epoch,lr,train_loss,test_loss,test_accuracy,consensus_distance,norm_variance"));
  const auto summary = nlohmann::json::parse(read_file(a / "summary.json"));
  for (const char* key : {"final_test_accuracy", "iterations", "workers", "seconds_per_iteration",
                          "samples_per_second", "wall_seconds"}) {
    CAPTURE(key);
    CHECK(summary.contains(key));
  }
  CHECK(summary.at("iterations") == 30);
  fs::remove_all(a);
  fs::remove_all(b);
}

TEST_CASE(
    "experiments::cli: bad simulate configs fail clearly and leave an existing results directory intact") {
  const fs::path out = temp_dir("sim-keep");
  fs::remove_all(out);
  const auto good =
      run_dbench("simulate " + quickstart() + " --set train.iterations=5 -q --out \"" + out.string() + "\"");
  REQUIRE(good.status == 0);
  const std::string metrics_before = read_file(out / "metrics.csv");

  const std::pair<std::string, std::string> cases[] = {
      {"--set train.model=vgg", "train.model"},
      {"--set train.dataset=mnist", "train.dataset"},
      {"--set algorithm.graph=petersen", "algorithm.graph"},
      {"--set train.workers=1000 --set train.batch_per_worker=100", "train.batch_per_worker"},
      {"--set train.workers=0", "train.workers"},
      {"--set train.lr=-0.1", "train.lr"},
      {"--set train.data_dir=/nonexistent/fashion", "dataset-fashion-mnist"},
      {"--set train.model=resnet50", "train.model"},
  };
  for (const auto& [overrides, named] : cases) {
    CAPTURE(overrides);
    const auto result =
        run_dbench("simulate " + quickstart() + " -q " + overrides + " --out \"" + out.string() + "\"");
    CAPTURE(result.output);
    CHECK(result.status != 0);
    CHECK(result.output.find("dbench: error: ") != std::string::npos);
    CHECK(result.output.find(named) != std::string::npos);
    CHECK(read_file(out / "metrics.csv") == metrics_before);
  }
  // No staging directories are left behind next to the results.
  for (const auto& entry : fs::directory_iterator(out.parent_path())) {
    CHECK(entry.path().filename().string().find(out.filename().string() + ".tmp") == std::string::npos);
  }
  fs::remove_all(out);
}

TEST_CASE("experiments::cli: train refuses an --inject-kill fault that the run cannot have") {
  const fs::path out = temp_dir("inject-kill");
  const std::string run =
      "train --local 1 --set train.dataset=synthetic --set train.iterations=100 -q --out \"" + out.string() +
      "\" --inject-kill ";
  const std::pair<std::string, std::string> cases[] = {
      {"5:10", "rank 5 does not exist"},       {"-1:10", "rank -1 does not exist"},
      {"0:100", "iteration 100 never starts"}, {"0:-3", "iteration -3 never starts"},
      {"0:x", "expected RANK:ITERATION"},
  };
  for (const auto& [spec, reason] : cases) {
    CAPTURE(spec);
    const auto result = run_dbench(run + spec);
    CAPTURE(result.output);
    CHECK(result.status != 0);
    CHECK(one_line(result.output));
    CHECK(result.output.starts_with("dbench: error: --inject-kill"));
    CHECK(result.output.find(reason) != std::string::npos);
    CHECK(!fs::exists(out));
  }
}

TEST_CASE("experiments::cli: train --local 0 says that a worker is needed") {
  for (const std::string count : {"0", "-2"}) {
    CAPTURE(count);
    const auto result = run_dbench("train --local " + count + " -q");
    CAPTURE(result.output);
    CHECK(result.status != 0);
    CHECK(one_line(result.output));
    CHECK(result.output.find("--local: needs at least 1 worker, got " + count) != std::string::npos);
  }
}

TEST_CASE("experiments::cli: nan and inf are refused by every float option, naming it") {
  const std::pair<std::string, std::string> cases[] = {
      {"train --peer-timeout nan", "--peer-timeout: must be a finite number, got nan"},
      {"train --peer-timeout inf", "--peer-timeout: must be a finite number, got inf"},
      {"train --peer-timeout -inf", "--peer-timeout: must be a finite number, got -inf"},
      {"calibrate --sizes 256,nan", "--sizes: must be a finite number, got nan"},
      {"calibrate --sizes inf,256", "--sizes: must be a finite number, got inf"},
      {"graph --kind erdos-renyi --nodes 8 --probability nan", "--probability: must be a finite number"},
      {"graph --kind erdos-renyi --nodes 8 --probability inf", "--probability: must be a finite number"},
  };
  for (const auto& [arguments, expected] : cases) {
    CAPTURE(arguments);
    const auto result = run_dbench(arguments);
    CAPTURE(result.output);
    CHECK(result.status != 0);
    CHECK(one_line(result.output));
    CHECK(result.output.find(expected) != std::string::npos);
  }
}

TEST_CASE("experiments::cli: graph errors name graph's own options; graphs works from 2 nodes") {
  const auto shape = run_dbench("graph --kind torus --nodes 16 --shape 3x5");
  CHECK(shape.output == "dbench: error: --shape: 3x5 is 15 nodes, but the graph has 16\n");
  for (const char* nodes : {"2", "3", "5"}) {
    CAPTURE(nodes);
    const auto result = run_dbench(std::string("graphs --nodes ") + nodes);
    CAPTURE(result.output);
    CHECK(result.status == 0);
    CHECK(result.output.find("--degree") == std::string::npos);
    CHECK(result.output.find("ring") != std::string::npos);
  }
  const auto one = run_dbench("graphs --nodes 1");
  CHECK(one.status != 0);
  CHECK(one.output ==
        "dbench: error: --nodes: must be at least 2 (a graph of one node has no edges), got 1\n");
}
