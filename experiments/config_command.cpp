// `dbench config`: the quickest way to see what a config plus its overrides resolves to, before a long run.
#include <fmt/core.h>

#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "experiments/commands.hpp"
#include "experiments/config.hpp"
#include "experiments/run_files.hpp"
#include "experiments/signal_cleanup.hpp"

namespace dbench::experiments {
namespace {

struct ConfigOptions {
  std::string config_path;
  std::vector<std::string> overrides;
  std::string out_dir;
};

void run_config_command(const ConfigOptions& options) {
  const ExperimentConfig config = load_config_file(options.config_path, options.overrides);
  // Stage before printing, so that an unusable --out fails before any output.
  SignalCleanup cleanup;
  std::optional<results::ResultsDir> dir;
  if (!options.out_dir.empty()) {
    dir.emplace(stage_results(options.out_dir, config, &cleanup));
  }
  fmt::print("{}", to_toml(config));
  std::fflush(stdout);
  if (dir) {
    dir->commit();
    fmt::print(stderr, "wrote {}\n", (dir->target() / "config.toml").string());
  }
}

}  // namespace

void add_config_command(CLI::App& app) {
  // Owned by the callback, so the options live as long as the App that parses into them.
  auto options = std::make_shared<ConfigOptions>();
  CLI::App* command = app.add_subcommand(
      "config", "Validate a config with its overrides; print (and optionally write) it resolved");
  command->add_option("CONFIG", options->config_path, "experiment config (TOML)")->required();
  command
      ->add_option("--set", options->overrides,
                   "override a key, e.g. --set train.workers=64 (repeatable; value read as TOML)")
      ->allow_extra_args(false)
      ->type_name("KEY=VALUE");
  command->add_option("--out", options->out_dir, "also write DIR/config.toml (DIR is replaced as a whole)")
      ->type_name("DIR")
      ->check(non_empty_path());
  command->callback([options] { run_config_command(*options); });
}

}  // namespace dbench::experiments
