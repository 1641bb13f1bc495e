// `dbench simulate CONFIG`: the simulator's numerics on virtual replicas, written to a results directory.
#include <fmt/core.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "experiments/commands.hpp"
#include "experiments/config.hpp"
#include "experiments/results_dir.hpp"
#include "experiments/run_files.hpp"
#include "experiments/sim_setup.hpp"
#include "sim/numerics.hpp"

namespace dbench::experiments {
namespace {

struct SimulateOptions {
  std::string config;
  std::vector<std::string> overrides;
  std::string out;
  unsigned threads = 0;
  bool quiet = false;
};

void run_simulate(const SimulateOptions& options) {
  // Without a file the embedded defaults run (with any --set on top).
  const ExperimentConfig config = options.config.empty()
                                      ? load_config("", options.overrides, "<defaults>")
                                      : load_config_file(options.config, options.overrides);
  const std::string out = options.out.empty() ? "results/" + config.name : options.out;
  // Open the results directory first: a bad --out fails before minutes of training.
  ResultsDir dir(out, config);

  const auto train =
      sim::load_dataset(config.train.dataset, models::Split::train, config.train.data_dir, config.seed);
  const auto test =
      sim::load_dataset(config.train.dataset, models::Split::test, config.train.data_dir, config.seed);
  sim::NumericsSpec spec = numerics_spec(config, train);
  spec.threads = options.threads;
  auto policy = make_policy(config);

  if (!options.quiet) {
    fmt::print(stderr, "simulate {}: {} x {} on {}, {} ({}), {} iterations\n", config.name,
               config.train.workers, config.train.model, config.train.dataset, config.algorithm.kind,
               policy->name(), config.train.iterations);
  }
  RunRecorder recorder(spec.iterations, !options.quiet);
  const sim::NumericsResult result = sim::run_numerics(spec, train, test, *policy, recorder);

  dir.write_text("metrics.csv", recorder.metrics_csv());
  dir.write_text("schedule.csv", recorder.schedule_csv());
  dir.write_text("replica_norms.csv", recorder.replica_norms_csv());
  nlohmann::json summary;
  summary["name"] = config.name;
  summary["engine"] = "sim";
  summary["algorithm"] = config.algorithm.kind;
  summary["graph"] = policy->name();
  summary["model"] = config.train.model;
  summary["dataset"] = config.train.dataset;
  summary["workers"] = result.workers;
  summary["iterations"] = result.iterations;
  summary["parameters_per_worker"] = result.parameters;
  summary["final_test_accuracy"] = result.final_test_accuracy;
  summary["final_test_loss"] = result.final_test_loss;
  summary["best_test_accuracy"] = result.best_test_accuracy;
  summary["gossip_messages"] = recorder.gossip_messages();
  // Timing of the platform is simulated separately; without it these stay null rather than invented.
  summary["seconds_per_iteration"] = nullptr;
  summary["samples_per_second"] = nullptr;
  summary["wall_seconds"] = result.wall_seconds;
  summary["numerics_wall_seconds_per_iteration"] =
      result.wall_seconds / static_cast<double>(result.iterations);
  dir.write_text("summary.json", summary.dump(2) + "\n");
  dir.commit();
  fmt::print("final test accuracy {:.4f} after {} iterations ({:.1f} s)\nresults: {}\n",
             result.final_test_accuracy, result.iterations, result.wall_seconds, dir.target().string());
}

}  // namespace

void add_simulate_command(CLI::App& app) {
  auto options = std::make_shared<SimulateOptions>();
  auto* cmd = app.add_subcommand("simulate", "Train virtual replicas with the simulator's numerics");
  cmd->add_option("config", options->config, "Experiment config (TOML); without one, the embedded defaults");
  cmd->add_option("--set", options->overrides, "Override a key: section.key=value (repeatable)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  cmd->add_option("--out", options->out, "Results directory (default: results/<name>)");
  cmd->add_option("--threads", options->threads,
                  "Compute threads (0: all cores; results do not depend on it)")
      ->capture_default_str();
  cmd->add_flag("--quiet,-q", options->quiet, "No progress output");
  cmd->callback([options] { run_simulate(*options); });
}

}  // namespace dbench::experiments
