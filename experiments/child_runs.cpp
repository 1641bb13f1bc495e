#include "experiments/child_runs.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "results/results_tree.hpp"
#include "runtime/errors.hpp"

namespace dbench::experiments {

namespace {

std::string read_run_file(const std::filesystem::path& path) {
  return results::read_results_file(path, path);
}

}  // namespace

void run_child(const std::vector<std::string>& command, std::string_view caller, std::string_view what,
               runtime::Output output) {
  const int status = runtime::run_command(command, output);
  if (status == runtime::Refused::kExitStatus) {
    throw runtime::Refused("");  // the child has said why, in one line
  }
  if (status != 0) {
    throw runtime::LaunchError(fmt::format(
        "{}: {} failed (exit status {}); the messages above name the cause", caller, what, status));
  }
}

std::vector<std::string> speed_check_args(const SpeedCheck& check) {
  std::vector<std::string> args{"calibrate"};
  if (!check.model.empty()) {
    if (!check.config.empty()) {
      args.push_back(check.config);
    }
    for (const auto& s : check.overrides) {
      args.insert(args.end(), {"--set", s});
    }
    args.insert(args.end(), {"--set", "train.model=" + check.model});
    if (check.batch > 0) {
      args.insert(args.end(), {"--set", fmt::format("train.batch_per_worker={}", check.batch)});
    }
  }
  args.insert(args.end(), {"--speed-check", check.file.string()});
  if (!check.model.empty()) {
    args.emplace_back("--speed-step");
  }
  args.emplace_back("--quiet");
  return args;
}

validation::Speed fresh_speed_reading(const std::vector<std::string>& command,
                                      const std::filesystem::path& speed_file, std::string_view caller) {
  run_child(command, caller, "calibrate --speed-check");
  const auto json = nlohmann::json::parse(read_run_file(speed_file), nullptr, false);
  if (json.is_discarded() || !json.is_object() || !json.contains("reference_kernel_s") ||
      !json.at("reference_kernel_s").is_number()) {
    throw std::runtime_error(fmt::format(
        "{}: calibrate --speed-check wrote no reference_kernel_s number to {}", caller, speed_file.string()));
  }
  validation::Speed speed{.kernel_s = json.at("reference_kernel_s").get<double>()};
  if (const auto step = json.find("step_s"); step != json.end()) {
    if (!step->is_number()) {
      throw std::runtime_error(fmt::format(
          "{}: calibrate --speed-check wrote a step_s that is no number to {}", caller, speed_file.string()));
    }
    speed.step_s = step->get<double>();
  }
  return speed;
}

validation::PartTimes run_parts(const std::filesystem::path& run, std::int64_t warmup) {
  return validation::mean_parts(read_run_file(run / "trace_worker.csv"), warmup,
                                validation::evaluation_iterations(read_run_file(run / "metrics.csv")));
}

void refuse_repeated(std::span<const std::string> names, std::string_view option, std::string_view why) {
  for (auto it = names.begin(); it != names.end(); ++it) {
    if (std::find(names.begin(), it, *it) != it) {
      throw std::invalid_argument(fmt::format("{}: '{}' is given twice; {}", option, *it, why));
    }
  }
}

}  // namespace dbench::experiments
