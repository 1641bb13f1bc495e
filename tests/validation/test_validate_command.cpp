// dbench calibrate and dbench validate end to end on 4 local workers, with a small MLP config.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "experiments/timing_setup.hpp"
#include "support/run_dbench.hpp"
#include "support/temp_dir.hpp"
#include "validation/comparison.hpp"

namespace {

namespace fs = std::filesystem;

std::string read(const fs::path& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
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
      dbench::testing::run_dbench("calibrate \"" + config.string() +
                                  "\" --local 4 --models mlp --batches 8,4096 --sizes 1024,65536,262144 " +
                                  "--repeats 3 --quiet --out \"" + calibration.string() + "\"");
  INFO(calibrate.output);
  REQUIRE(calibrate.status == 0);
  // The platform carries the measured all-reduce that centralized steps pay.
  const auto platform = dbench::experiments::read_calibration(calibration / "mlp.toml");
  CHECK(platform.allreduce_bandwidth_Bps > 0.0);
  const auto fits = nlohmann::json::parse(read(calibration / "calibration.json"));
  CHECK(fits.at("workers") == 4);
  CHECK(fits.at("allreduce").at("bandwidth_Bps").get<double>() ==
        doctest::Approx(platform.allreduce_bandwidth_Bps));
  // The step in the loop, with the step alone and the gossip round alone beside it, per batch.
  const auto& mlp = fits.at("models").at(0);
  CHECK(mlp.at("seconds").size() == 2);
  CHECK(mlp.at("seconds_alone").size() == 2);
  CHECK(mlp.at("gossip_seconds").size() == 2);
  CHECK(fits.at("exchange").at("fit").at("residuals").size() == 3);

  const fs::path out = dir.path() / "validation";
  const auto validate = dbench::testing::run_dbench(
      "validate \"" + config.string() + "\" --local 4 --algorithms centralized,one-peer-exponential " +
      "--warmup 2 --runs 2 --quiet --calibration \"" + calibration.string() + "\" --out \"" + out.string() +
      "\"");
  INFO(validate.output);
  REQUIRE(validate.status == 0);
  const auto json = nlohmann::json::parse(read(out / "validation.json"));
  REQUIRE(json.at("cases").size() == 2);
  CHECK(json.at("max_relative_error").get<double>() >= 0.0);
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
  CHECK(json.at("max_relative_error").get<double>() == doctest::Approx(worst));
  const std::string csv = read(out / "validation.csv");
  CHECK(dbench::validation::csv_column(csv, "simulated_s").size() == 2);
  CHECK(read(out / "validation.md").find("| dpsgd/one-peer-exponential | mlp | 4 |") != std::string::npos);
  CHECK(dbench::validation::csv_column(read(out / "accuracy.csv"), "numerics_test_accuracy").size() == 6);
}
