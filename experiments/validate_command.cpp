// `dbench validate CONFIG --local N`: the same config run by the runtime on N real workers and by the
// simulator on the calibrated platform of this machine, per algorithm and graph; writes the comparison
// (validation.json with max_relative_error, .md, .csv), the accuracy curves of both side by side and plots.
#include <fmt/core.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "core/parallel.hpp"
#include "experiments/child_runs.hpp"
#include "experiments/commands.hpp"
#include "experiments/config.hpp"
#include "experiments/device_option.hpp"
#include "experiments/timing_setup.hpp"
#include "report/gnuplot.hpp"
#include "results/atomic_file.hpp"
#include "results/results_tree.hpp"
#include "runtime/errors.hpp"
#include "runtime/launcher.hpp"
#include "validation/comparison.hpp"
#include "validation/foreign_load.hpp"
#include "validation/speed_watch.hpp"

namespace dbench::experiments {
namespace {

namespace fs = std::filesystem;

struct ValidateOptions {
  std::string config;
  std::vector<std::string> overrides;
  std::string out;
  int local = 4;
  std::string calibration;
  std::vector<std::string> algorithms{"centralized", "ring", "exponential", "one-peer-exponential"};
  std::int64_t warmup = 5;
  int repeats = 20;
  int runs = 5;
  /// Largest change of the reference kernel's time that counts as the same machine; 0: the calibration's.
  double drift_tolerance = 0.0;
  /// Largest change of the model's step that counts as the machine calibrated (SpeedWatchOptions).
  double step_tolerance = 0.06;
  /// Re-runs of a case the machine's speed drifted during, before refusing; without --calibration, also the
  /// calibrations taken again when the machine differs from its own calibration at the start.
  int retries = 2;
  /// Most seconds to wait for a drifted speed to come back before running a round again (SpeedWatchOptions).
  double settle_wait = 90.0;
  /// Empty: dbench train's CPU workers; else its LibTorch worker on "cpu", "cuda" or "cuda:N".
  std::string device;
  bool quiet = false;
};

/// A file a run wrote (metrics.csv, trace.csv), read as a results file.
std::string read_file(const fs::path& path) {
  return results::read_results_file(path, path);
}

/// Writes one of validate's files whole (results::write_file_atomically).
void write_file(const fs::path& path, const std::string& text) {
  results::write_file_atomically(path, text);
}

/// Runs `dbench args...` as a child process (run_child); throws naming what failed. The runs' and the
/// simulations' summary lines are not validate's output (`output` discards them); their errors still show.
void run_dbench(std::vector<std::string> args, const std::string& what,
                runtime::Output output = runtime::Output::shown) {
  args.insert(args.begin(), runtime::current_executable());
  run_child(args, "validate", what, output);
}

/// The [algorithm] overrides of one case: "centralized" or a D-PSGD graph.
std::vector<std::string> case_overrides(const std::string& algorithm) {
  if (algorithm == "centralized") {
    return {"algorithm.kind=centralized"};
  }
  return {"algorithm.kind=dpsgd", "algorithm.graph=" + algorithm};
}

/// How a child dbench starts its workers: through mpirun when there are several; a single one runs in the
/// child's own process, so that one GPU needs no launcher.
std::vector<std::string> with_workers(std::vector<std::string> args, int local) {
  if (local == 1) {
    args.insert(args.end(), {"--set", "train.workers=1"});
  } else {
    args.insert(args.end(), {"--local", std::to_string(local)});
  }
  return args;
}

std::vector<std::string> with_device(std::vector<std::string> args, const std::string& device) {
  if (!device.empty()) {
    args.insert(args.end(), {"--device", device});
  }
  return args;
}

std::vector<std::string> with_sets(std::vector<std::string> args, const std::vector<std::string>& sets) {
  for (const auto& s : sets) {
    args.insert(args.end(), {"--set", s});
  }
  return args;
}

/// The platform file of `model` in a calibration: the directory's <model>.toml, or the file itself.
fs::path platform_file(const fs::path& calibration, const std::string& model) {
  const fs::path file = fs::is_directory(calibration) ? calibration / (model + ".toml") : calibration;
  if (!fs::exists(file)) {
    throw std::invalid_argument(fmt::format(
        "--calibration: {} does not exist (dbench calibrate --models {} writes it)", file.string(), model));
  }
  return fs::absolute(file);
}

/// Draws measured against simulated seconds per iteration and the accuracy curves with gnuplot, when present.
/// Paths and case names reach the script only through report::gnuplot_string (an --out path may hold any
/// byte).
void plot(const fs::path& out, const std::vector<validation::ValidationCase>& cases) {
  std::string points;
  double top = 0.0;
  for (const auto& c : cases) {
    points += fmt::format("{} {} {}\n", c.measured.total_s, c.simulated.total_s,
                          report::gnuplot_data_field(fmt::format("{}/{}", c.algorithm, c.graph)));
    top = std::max({top, c.measured.total_s, c.simulated.total_s});
  }
  write_file(out / "validation_points.dat", points);
  std::string script = fmt::format(
      "set terminal svg size 720,540 dynamic noenhanced background rgb 'white'\n"
      "set output {}\n"
      "set title 'Seconds per iteration: simulated against measured'\n"
      "set xlabel 'measured s/iteration'\nset ylabel 'simulated s/iteration'\n"
      "set xrange [0:{}]\nset yrange [0:{}]\nset key top left\n"
      "plot x title 'simulated = measured' lc rgb 'gray', 1.15*x title '+15 %' dt 2 lc rgb 'gray', "
      "0.85*x title '-15 %' dt 2 lc rgb 'gray', {} using 1:2 with points pt 7 title 'cases', "
      "'' using 1:2:3 with labels offset 1,0.5 left font ',8' notitle\n",
      report::gnuplot_string((out / "validation.svg").string()), 1.1 * top, 1.1 * top,
      report::gnuplot_string((out / "validation_points.dat").string()));
  script += fmt::format(
      "set output {}\nset title 'Test accuracy: runtime (lines) and numerics (points)'\n"
      "set xlabel 'iteration'\nset ylabel 'test accuracy'\nset autoscale\nset key bottom right\n"
      "set datafile separator ','\nplot ",
      report::gnuplot_string((out / "accuracy.svg").string()));
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const std::string name = fmt::format("{}/{}", cases[i].algorithm, cases[i].graph);
    script += fmt::format(
        "{}{} using 1:(strcol(2) eq {} ? $3 : 1/0) every ::1 with lines lc {} title {}, "
        "'' using 1:(strcol(2) eq {} ? $4 : 1/0) every ::1 with points lc {} title {}",
        i == 0 ? "" : ", ", report::gnuplot_string((out / "accuracy.csv").string()),
        report::gnuplot_string(name), i + 1, report::gnuplot_label(name + " runtime"),
        report::gnuplot_string(name), i + 1, report::gnuplot_label(name + " numerics"));
  }
  script += "\n";
  write_file(out / "plots.gp", script);
  try {
    report::run_gnuplot(out / "plots.gp", out / "gnuplot.log");
  } catch (const report::GnuplotError& e) {
    fmt::print(stderr, "validate: the plots are missing: {}\n", e.what());
  }
}

/// What validate reads from a calibration directory's calibration.json, read once: the workers it was taken
/// on and the machine's speed then. A platform file alone (no calibration.json) reads as CPU workers whose
/// speed was not read.
struct CalibrationFacts {
  std::string device = "cpu-worker";
  double reference_kernel_s = 0.0;  ///< 0: not read
  double drift_tolerance = 0.0;     ///< 0: not recorded
  double speed_step_s = 0.0;        ///< the validated model's step reading; 0: not read
  int speed_step_batch = 0;         ///< the batch it was read at
};

CalibrationFacts read_calibration_facts(const fs::path& calibration, const std::string& model) {
  CalibrationFacts facts;
  const fs::path file = calibration / "calibration.json";
  if (!fs::is_directory(calibration) || !fs::exists(file)) {
    return facts;
  }
  try {
    const auto json = nlohmann::json::parse(read_config_text(file, "calibration file"));
    if (!json.is_object()) {
      throw std::invalid_argument(
          fmt::format("--calibration: {}: expected a JSON object, got {}", file.string(), json.type_name()));
    }
    if (const auto given = json.find("device"); given != json.end()) {
      if (!given->is_string()) {
        throw std::invalid_argument(fmt::format("--calibration: {}: key 'device' is a {}, not a string",
                                                file.string(), given->type_name()));
      }
      facts.device = given->get<std::string>();
    }
    facts.reference_kernel_s = json.value("reference_kernel_s", 0.0);
    facts.drift_tolerance = json.value("drift_tolerance", 0.0);
    for (const auto& m : json.value("models", nlohmann::json::array())) {
      if (m.is_object() && m.value("model", std::string()) == model) {
        facts.speed_step_s = m.value("speed_step_s", 0.0);
        facts.speed_step_batch = m.value("speed_step_batch", 0);
      }
    }
  } catch (const nlohmann::json::exception& e) {
    throw std::invalid_argument(
        fmt::format("--calibration: {}: not valid JSON: {}", file.string(), e.what()));
  } catch (const ConfigError& e) {
    throw std::invalid_argument(fmt::format("--calibration: {}", e.what()));
  }
  return facts;
}

/// Refuses a calibration taken on other workers than --device runs.
void check_calibrated_device(const CalibrationFacts& facts, const fs::path& calibration,
                             const std::string& device) {
  const std::string wanted = device.empty() ? "cpu-worker" : device;
  const auto kind = [](const std::string& d) { return d.rfind("cuda", 0) == 0 ? std::string("cuda") : d; };
  if (kind(facts.device) != kind(wanted)) {
    throw std::invalid_argument(fmt::format(
        "--calibration: {} was calibrated on {}, not on {}; calibrate with{}", calibration.string(),
        facts.device, wanted, device.empty() ? "out --device" : " --device " + device));
  }
}

void run_validate(const ValidateOptions& o) {
  runtime::check_local_workers(o.local);
  if (o.local == 1) {
    for (const auto& algorithm : o.algorithms) {
      if (algorithm != "centralized") {
        throw std::invalid_argument(fmt::format(
            "--algorithms: '{}' needs at least 2 workers to gossip; with --local 1 validate centralized only",
            algorithm));
      }
    }
    if (o.device.empty()) {
      throw std::invalid_argument(
          "--local 1: the CPU workers are validated in twos or more; a single worker runs with --device");
    }
  }
  check_device(o.device);
  const ExperimentConfig config = load_config_file(o.config, o.overrides);
  refuse_repeated(o.algorithms, "--algorithms", "each case is validated once, its runs in one folder");
  // The sets of each case's runs, in the order of --algorithms.
  std::vector<std::vector<std::string>> case_sets;
  for (const auto& algorithm : o.algorithms) {
    std::vector<std::string> sets = o.overrides;
    for (const auto& s : case_overrides(algorithm)) {
      sets.push_back(s);
    }
    case_sets.push_back(std::move(sets));
  }
  // Every case's config is loaded as its runs will load it before the first worker starts: a misspelt
  // --algorithms entry would otherwise fail only after the calibration and the cases before it.
  for (std::size_t i = 0; i < case_sets.size(); ++i) {
    std::vector<std::string> sets = case_sets[i];
    sets.push_back(fmt::format("train.workers={}", o.local));
    try {
      load_config_file(o.config, sets);
    } catch (const ConfigError& e) {
      throw std::invalid_argument(
          fmt::format("--algorithms: '{}' cannot be validated: {}", o.algorithms[i], e.what()));
    }
  }
  const fs::path out = o.out.empty() ? fs::path(fmt::format("results/validation-{}-{}", config.name, o.local))
                                     : fs::path(o.out);
  const std::string& model = config.train.model;
  std::optional<CalibrationFacts> given;
  if (!o.calibration.empty()) {
    // A calibration that cannot serve fails before anything is written.
    given = read_calibration_facts(o.calibration, model);
    check_calibrated_device(*given, o.calibration, o.device);
    platform_file(o.calibration, model);
  }
  fs::create_directories(out / "runs");
  const bool calibrating = o.calibration.empty();
  const fs::path calibration = calibrating ? out / "calibration" : fs::path(o.calibration);
  const auto calibrate = [&] {
    if (!o.quiet) {
      fmt::print(stderr, "validate: calibrating {} on {} local workers\n", model, o.local);
    }
    std::vector<std::string> args{"calibrate",     o.config,
                                  "--models",      model,
                                  "--repeats",     std::to_string(o.repeats),
                                  "--retries",     std::to_string(o.retries),
                                  "--settle-wait", fmt::format("{}", o.settle_wait),
                                  "--out",         calibration.string()};
    if (o.quiet) {
      args.emplace_back("--quiet");
    }
    if (o.drift_tolerance > 0.0) {
      args.insert(args.end(), {"--drift-tolerance", fmt::format("{}", o.drift_tolerance)});
    }
    // Calibrate's lines (what it measures, and a drift's waits and re-measurements: a quarter of an hour or
    // more on a shared machine) show as validate's progress; its summary is not validate's output.
    run_dbench(with_sets(with_device(with_workers(args, o.local), o.device), o.overrides), "dbench calibrate",
               runtime::Output::stdout_discarded);
  };
  if (calibrating) {
    calibrate();
  }
  const fs::path platform = platform_file(calibration, model);
  // The calibrated node holds the workers that ran together; other worker counts would spill onto
  // uncalibrated NICs and share the cores differently.
  if (const int calibrated = read_calibration(platform).gpus_per_node; calibrated != o.local) {
    throw std::invalid_argument(fmt::format(
        "--calibration: {} was calibrated on {} workers, not the {} of --local; calibrate with --local {}",
        platform.string(), calibrated, o.local, o.local));
  }
  // The machine's speed, read by the reference kernel (and, on CPU workers, the model's own step at the
  // calibration's batch) on the workers before the first case and after each round, against the
  // calibration's readings: a round run while it drifted is run again, and a drift that stays (or a machine
  // that changed since the calibration) refuses the validation. A validation that calibrated itself
  // calibrates again instead, at most --retries times in all, where the machine differs at the start or
  // moved during the rounds and stayed so; then every round runs again, against the new calibration.
  const fs::path speed_file = out / "speed.json";
  std::optional<validation::SpeedWatch> watch;
  double tolerance = 0.0;
  const auto start_watch = [&] {
    const CalibrationFacts facts = given ? *given : read_calibration_facts(calibration, model);
    tolerance = o.drift_tolerance > 0.0       ? o.drift_tolerance
                : facts.drift_tolerance > 0.0 ? facts.drift_tolerance
                                              : 0.15;
    const bool step = facts.speed_step_s > 0.0 && o.device.empty();
    std::vector<std::string> check{runtime::current_executable()};
    for (auto& a : speed_check_args({.config = o.config,
                   .overrides = o.overrides,
                   .model = step ? model : std::string(),
                   .batch = facts.speed_step_batch,
                   .file = speed_file})) {
      check.push_back(std::move(a));
    }
    check = with_device(with_workers(check, o.local), o.device);
    watch.emplace([check, &speed_file] { return fresh_speed_reading(check, speed_file, "validate"); },
                  [&](const std::string& line) {
                    if (!o.quiet) {
                      fmt::print(stderr, "{}\n", line);
                    }
                  },
                  validation::SpeedWatchOptions{.command = "validate",
                                                .tolerance = tolerance,
                                                .step_tolerance = o.step_tolerance,
                                                .retries = o.retries,
                                                .settle_wait_s = o.settle_wait});
    watch->start(facts.reference_kernel_s, facts.speed_step_s);
  };
  // The runtime runs several times: a machine shared with other work has slow spells that last longer than
  // one short run, and the median stands for the machine rather than for one such spell. The runs go in
  // rounds, one of every case each, each round starting one case later: a spell of a minute then moves every
  // case alike. Run case by case, five runs each, three cases of the same graph (LeNet on 2 workers, where
  // ring and both exponential graphs are one exchange) communicated 0.23, 0.29 and 0.32 ms.
  const std::size_t case_count = o.algorithms.size();
  std::vector<std::vector<std::pair<validation::PartTimes, fs::path>>> case_runs;
  const auto run_rounds = [&] {
    case_runs.assign(case_count, {});
    for (int r = 0; r < o.runs; ++r) {
      std::vector<std::pair<validation::PartTimes, fs::path>> round(case_count);
      watch->phase(fmt::format("round {} of {} (one run of every case)", r + 1, o.runs), [&] {
        if (!o.quiet) {
          fmt::print(stderr, "validate: round {} of {}: one run of every case on {} workers\n", r + 1, o.runs,
                     o.local);
        }
        for (std::size_t k = 0; k < case_count; ++k) {
          const std::size_t i = (k + static_cast<std::size_t>(r)) % case_count;
          const std::string& algorithm = o.algorithms[i];
          const fs::path run =
              out / "runs" / algorithm / (r == 0 ? std::string("runtime") : fmt::format("runtime-{}", r + 1));
          run_dbench(with_sets(with_device(with_workers({"train", o.config, "--out", run.string(), "--quiet"},
                                                        o.local),
                                           o.device),
                               case_sets[i]),
                     fmt::format("dbench train ({}, run {} of {})", algorithm, r + 1, o.runs),
                     runtime::Output::stdout_discarded);
          round[i] = {run_parts(run, o.warmup), run};
        }
      });
      for (std::size_t i = 0; i < case_count; ++i) {
        case_runs[i].push_back(std::move(round[i]));
      }
    }
  };
  int recalibrations = 0;
  // What other processes took of the machine while it measured: a steady neighbour moves every timing
  // without moving the reference kernel away from a calibration taken beside it.
  const validation::CpuClock measuring_from = validation::read_cpu_clock();
  try {
    recalibrations = validation::measure_with_recalibration(
        calibrating ? o.retries : 0, start_watch, run_rounds,
        [&](int n, validation::DriftSeen seen, const std::string& finding) {
          if (!o.quiet) {
            fmt::print(stderr, "validate: {}: {}; calibrating again ({} of {}){}\n",
                       seen == validation::DriftSeen::at_start
                           ? "the machine still differs from its calibration"
                           : "the machine moved away from its calibration during the runs and stayed so",
                       finding, n, o.retries,
                       seen == validation::DriftSeen::at_start ? "" : ", then every round runs again");
          }
          calibrate();
        });
  } catch (const validation::DriftError& e) {
    throw runtime::Refused(e.what());
  }
  const double foreign = validation::foreign_cores(measuring_from, validation::read_cpu_clock());
  std::vector<validation::ValidationCase> cases;
  for (std::size_t i = 0; i < case_count; ++i) {
    const std::string& algorithm = o.algorithms[i];
    const fs::path dir = out / "runs" / algorithm;
    const std::vector<std::string>& sets = case_sets[i];
    auto& runs = case_runs[i];
    if (!o.quiet) {
      fmt::print(stderr, "validate: {} on {} workers in the simulator\n", algorithm, o.local);
    }
    std::sort(runs.begin(), runs.end(),
              [](const auto& a, const auto& b) { return a.first.total_s < b.first.total_s; });
    const auto& median_run = runs[runs.size() / 2].second;
    std::vector<validation::PartTimes> run_times;
    for (const auto& run : runs) {
      run_times.push_back(run.first);
    }
    const validation::PartTimes median_parts = validation::median_parts(run_times);
    std::vector<std::string> sim_sets = sets;
    for (const auto& s : {fmt::format("train.workers={}", o.local), "platform.preset=" + platform.string(),
                          "platform.timing_model=" + model,
                          fmt::format("platform.timing_batch_per_gpu={}", config.train.batch_per_worker)}) {
      sim_sets.push_back(s);
    }
    run_dbench(with_sets({"simulate", o.config, "--out", (dir / "simulate").string(), "--quiet"}, sim_sets),
               fmt::format("dbench simulate ({})", algorithm), runtime::Output::stdout_discarded);

    validation::ValidationCase c;
    c.algorithm = algorithm == "centralized" ? "centralized" : "dpsgd";
    c.graph = algorithm == "centralized" ? "all-reduce" : algorithm;
    c.model = model;
    c.workers = o.local;
    const std::string runtime_metrics = read_file(dir / "runtime" / "metrics.csv");
    const std::string numerics_metrics = read_file(dir / "simulate" / "metrics.csv");
    const auto evaluations = validation::evaluation_iterations(runtime_metrics);
    c.measured = median_parts;
    for (const auto& run : runs) {
      c.measured_runs.push_back(run.first.total_s);
    }
    c.measured_run = median_run.filename().string();
    c.simulated = validation::mean_parts(read_file(dir / "simulate" / "trace.csv"), o.warmup, evaluations);
    const validation::Evaluations runtime = validation::read_evaluations(runtime_metrics);
    c.iterations = runtime.iterations;
    c.runtime_accuracy = runtime.test_accuracy;
    c.numerics_accuracy = validation::read_evaluations(numerics_metrics).test_accuracy;
    cases.push_back(std::move(c));
  }
  auto json = validation::validation_json(cases);
  json["reference_kernel_s"] = watch->baseline();
  json["largest_drift"] = watch->largest_drift();
  json["recalibrations"] = recalibrations;
  json["largest_counted_drift"] = watch->largest_counted_drift();
  if (watch->step_baseline() > 0.0) {
    json["speed_step_s"] = watch->step_baseline();
    json["largest_step_drift"] = watch->largest_step_drift();
    json["largest_counted_step_drift"] = watch->largest_counted_step_drift();
  }
  json["speed_readings"] = nlohmann::json::array();
  for (const auto& r : watch->readings()) {
    json["speed_readings"].push_back({{"after", r.after}, {"seconds", r.seconds}});
    if (r.step_seconds > 0.0) {
      json["speed_readings"].back()["step_seconds"] = r.step_seconds;
    }
  }
  json["foreign_cores"] = foreign;
  // Beside a neighbour, an error beyond the stated bound is the neighbour's as much as the model's: the
  // figures stay in the folder, but no verdict is given on them.
  const double largest = json.at("max_relative_error").get<double>();
  const std::string refusal = validation::shared_machine_refusal(foreign, core::available_cpus(), largest,
                                                                 (out / "validation.md").string());
  const bool shared = !refusal.empty();
  json["refused"] = shared ? nlohmann::json(refusal) : nlohmann::json(nullptr);
  write_file(out / "validation.json", json.dump(2) + "\n");
  // Within the tolerance the machine's speed still moves every case: how much it did, beside the errors.
  const std::string table =
      validation::validation_markdown(cases) +
      fmt::format(
          "The machine's speed (the reference kernel) stayed within {:.1f} % of the calibration's under the "
          "runs compared (tolerance {:.0f} %){}; errors of that size may be the machine's rather than the "
          "model's.\n",
          100.0 * watch->largest_counted_drift(), 100.0 * tolerance,
          watch->step_baseline() > 0.0
              ? fmt::format(", the model's step within {:.1f} % (tolerance {:.0f} %)",
                            100.0 * watch->largest_counted_step_drift(), 100.0 * o.step_tolerance)
              : std::string()) +
      (recalibrations > 0
           ? fmt::format("The machine moved away from its calibration and stayed so {} time{}; it was "
                         "calibrated again and every round run again under the last calibration.\n",
                         recalibrations, recalibrations == 1 ? "" : "s")
           : std::string()) +
      fmt::format(
          "Other processes kept {:.2f} of the machine's {} cores busy on average while it was measured "
          "(/proc/stat less validate's own processes){}.\n",
          foreign, core::available_cpus(),
          shared ? fmt::format("; with an error beyond {:.0f} % that is no verdict on the model",
                               100.0 * validation::kSharedErrorBound)
                 : std::string());
  write_file(
      out / "validation.md",
      fmt::format("# Validation: {} on {} workers ({})\n\nCalibration: {}\n\n{}", config.name, o.local,
                  o.device.empty() ? "CPU workers" : "LibTorch on " + o.device, platform.string(), table));
  write_file(out / "validation.csv", validation::validation_csv(cases));
  write_file(out / "accuracy.csv", validation::accuracy_csv(cases));
  plot(out, cases);
  fmt::print("{}\nlargest accuracy difference between runtime and numerics: {}\nresults: {}\n", table,
             json.at("max_accuracy_difference").dump(), out.string());
  if (shared) {
    throw runtime::Refused(refusal);
  }
}

}  // namespace

void add_validate_command(CLI::App& app) {
  auto options = std::make_shared<ValidateOptions>();
  auto* cmd = app.add_subcommand(
      "validate",
      "Run a config on local workers and in the calibrated simulator, per algorithm and graph, and compare "
      "seconds per iteration and accuracy curves (validation.json, .md, .csv, plots)");
  cmd->add_option("config", options->config, "Experiment config (TOML)")->required();
  cmd->add_option("--set", options->overrides, "Override a key: section.key=value (repeatable)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  cmd->add_option("--out", options->out, "Results directory (default: results/validation-<name>-<N>)")
      ->check(non_empty_path());
  cmd->add_option(
         "--local", options->local,
         "Local workers (mpirun) of the runtime runs (at least 2, or 1 with --device and centralized)")
      ->check(number_in(1, 4096))
      ->capture_default_str();
  cmd->add_option(
      "--device", options->device,
      "Run dbench train's LibTorch worker on cpu, cuda or cuda:N (NCCL between GPUs) instead of its "
      "CPU workers; calibrate with the same --device");
  cmd->add_option(
      "--calibration", options->calibration,
      "Calibration directory (dbench calibrate --out) or platform file; default: calibrate first");
  cmd->add_option("--algorithms", options->algorithms,
                  "Cases: centralized and D-PSGD graphs (ring, exponential, one-peer-exponential, ...)")
      ->delimiter(',')
      ->capture_default_str();
  cmd->add_option("--warmup", options->warmup, "Iterations left out of the means at the start")
      ->check(number_at_least(0))
      ->capture_default_str();
  cmd->add_option("--repeats", options->repeats, "Repetitions per micro-benchmark when calibrating")
      ->check(number_in(1, 100000))
      ->capture_default_str();
  cmd->add_option("--runs", options->runs,
                  "Runtime runs per case, in rounds of one run of every case; each part's median over "
                  "them is compared")
      ->check(number_in(1, 1000))
      ->capture_default_str();
  cmd->add_option("--drift-tolerance", options->drift_tolerance,
                  "Largest change of the reference kernel's time, as a fraction, that counts as the machine "
                  "calibrated (default: the calibration's)")
      ->check(number_in(0.01, 10.0));
  cmd->add_option("--step-tolerance", options->step_tolerance,
                  "Largest change of the model's step, as a fraction, that counts as the machine calibrated "
                  "(CPU workers, against the calibration's reading at its batch)")
      ->check(number_in(0.01, 10.0))
      ->capture_default_str();
  cmd->add_option(
         "--retries", options->retries,
         "Re-runs of a round the machine's speed drifted during, before refusing; without "
         "--calibration, also calibrations taken again (then every round run again) where the machine "
         "differs at the start or moved during the rounds and stayed so")
      ->check(number_in(0, 10))
      ->capture_default_str();
  cmd->add_option("--settle-wait", options->settle_wait,
                  "Most seconds to wait, where the machine's speed drifted, for it to come back within the "
                  "tolerance before reading it or running the round again; 0: at once")
      ->check(number_in(0.0, 3600.0))
      ->capture_default_str();
  cmd->add_flag("--quiet,-q", options->quiet, "No progress output");
  cmd->callback([options] { run_validate(*options); });
}

}  // namespace dbench::experiments
