// `dbench simulate CONFIG`: the simulator's numerics on virtual replicas, then the SimGrid timing of the
// realized schedule on the configured platform, written to a results directory.
#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/numerics.hpp"
#include "core/parallel.hpp"
#include "experiments/commands.hpp"
#include "experiments/config.hpp"
#include "experiments/memory_estimate.hpp"
#include "experiments/run_files.hpp"
#include "experiments/signal_cleanup.hpp"
#include "experiments/sim_setup.hpp"
#include "experiments/timing_setup.hpp"
#include "models/model_profile.hpp"
#include "runtime/launcher.hpp"
#include "sim/simgrid_options.hpp"
#include "sim/timing.hpp"

namespace dbench::experiments {
namespace {

struct SimulateOptions {
  std::string config;
  std::vector<std::string> overrides;
  std::string out;
  unsigned threads = 0;
  bool quiet = false;
  bool timing_only = false;
  std::string fidelity = "fast";
  bool per_gpu_trace = false;
  std::vector<std::string> simgrid_cfg;
  std::vector<std::string> simgrid_log;
};

// Forwards everything to the recorder and keeps what the timing needs: the realized schedule and the
// accuracy of each metrics row.
class TimedRun final : public core::NumericsObserver {
 public:
  explicit TimedRun(RunRecorder& recorder) : recorder_(recorder) {}
  void on_schedule(std::int64_t iteration, const topology::ScheduleStep& step) override {
    schedule_.push_back(step);
    recorder_.on_schedule(iteration, step);
  }
  void on_metrics(const core::MetricsRow& row) override {
    rows_.push_back(row);
    rows_.back().tensors.clear();
    recorder_.on_metrics(row);
  }
  void on_iteration(std::int64_t iteration) override { recorder_.on_iteration(iteration); }

  const std::vector<topology::ScheduleStep>& schedule() const { return schedule_; }
  const std::vector<core::MetricsRow>& rows() const { return rows_; }

 private:
  RunRecorder& recorder_;
  std::vector<topology::ScheduleStep> schedule_;
  std::vector<core::MetricsRow> rows_;
};

// trace.csv: the simulated iterations, on the simulated clock.
std::string simulated_trace_csv(const sim::TimingResult& timing) {
  std::vector<TraceRow> rows;
  rows.reserve(timing.iterations.size());
  for (const auto& it : timing.iterations) {
    rows.push_back({it.iteration, it.graph, it.compute_s, it.comm_s, it.total_s, it.bytes_sent});
  }
  return trace_csv(rows);
}

// trace_worker.csv: one row per iteration and GPU (the numerics keep no per-replica loss per iteration, so
// loss and lr stay empty).
std::string simulated_worker_trace_csv(const sim::TimingResult& timing) {
  std::vector<WorkerTraceRow> rows;
  for (const auto& it : timing.iterations) {
    for (std::size_t g = 0; g < it.gpu_comm_s.size(); ++g) {
      WorkerTraceRow row;
      row.iteration = it.iteration;
      row.worker = static_cast<std::int64_t>(g);
      row.compute_s = it.compute_s;
      row.comm_s = it.gpu_comm_s[g];
      row.total_s = it.gpu_total_s[g];
      row.bytes_sent = it.gpu_bytes_sent[g];
      rows.push_back(row);
    }
  }
  return worker_trace_csv(rows);
}

// accuracy_time.csv: the metrics rows on the simulated clock, for accuracy against wall-clock time.
std::string accuracy_time_csv(const std::vector<core::MetricsRow>& rows, const sim::TimingResult& timing) {
  std::vector<double> elapsed(timing.iterations.size() + 1, 0.0);
  for (std::size_t t = 0; t < timing.iterations.size(); ++t) {
    elapsed[t + 1] = elapsed[t] + timing.iterations[t].total_s;
  }
  std::vector<results::AccuracyTimeRecord> records;
  for (const auto& row : rows) {
    const auto at = std::min<std::size_t>(static_cast<std::size_t>(row.iteration), elapsed.size() - 1);
    records.push_back({row.iteration, elapsed[at], row.test_accuracy, row.test_loss, row.train_loss,
                       row.consensus_distance});
  }
  return results::accuracy_time_csv(records);
}

void add_timing(results::SummaryJson& summary, const sim::TimingResult& timing, const sim::TimingSpec& spec,
                const ExperimentConfig& config, const std::string& fidelity) {
  const sim::PlatformSpec& platform = spec.platform;
  summary.seconds_per_iteration = timing.seconds_per_iteration;
  summary.samples_per_second = timing.samples_per_second;
  summary.scaling_efficiency = timing.scaling_efficiency;
  summary.single_gpu_seconds_per_iteration = timing.single_gpu_seconds_per_iteration;
  summary.bytes_per_gpu_per_iteration = timing.bytes_per_gpu_per_iteration;
  summary.simulated_seconds = timing.seconds_per_iteration * static_cast<double>(timing.iterations.size());
  summary.platform = platform.name;
  summary.fabric = sim::fabric_name(platform.fabric);
  summary.timing_model = config.platform.timing_model;
  // The timed model's size, from its profile, so that a sweep's report plots against it without the model.
  summary.timing_model_parameters = spec.profile.parameter_count();
  summary.timing_batch_per_gpu = config.platform.timing_batch_per_gpu;
  summary.allreduce = config.platform.allreduce;
  // What each all-reduce ran, by its size in bytes per GPU (the gradient, a bucket, the parameters):
  // "algorithm/protocol", with auto the choice made per size.
  std::map<std::string, std::string> algorithms;
  for (const auto& [bytes, choice] : timing.allreduce_algorithms) {
    algorithms[std::to_string(bytes)] = choice.name();
  }
  summary.allreduce_algorithms = std::move(algorithms);
  // The GPUs platform.stragglers slowed (a seeded choice), so a per-GPU trace can be read against them.
  summary.straggler_gpus =
      std::vector<std::int64_t>(timing.straggler_gpus.begin(), timing.straggler_gpus.end());
  summary.fidelity = fidelity;
  summary.timing_simulations = timing.simulations;
  summary.timing_wall_seconds = timing.wall_seconds;
}

void run_simulate(const SimulateOptions& options) {
  const runtime::LauncherWatch launcher_watch;  // a sweep's run stops when its sweep is killed outright
  const auto started = std::chrono::steady_clock::now();
  // A stop signal removes the staged results before it ends the process.
  SignalCleanup cleanup;
  // Without a file the embedded defaults run (with any --set on top).
  const Validation validation = options.timing_only ? Validation::timing_only : Validation::full;
  const ExperimentConfig config = options.config.empty()
                                      ? load_config("", options.overrides, "<defaults>", validation)
                                      : load_config_file(options.config, options.overrides, validation);
  // The platform is checked before anything runs: a bad [platform] fails before minutes of training.
  sim::TimingSpec timing_spec = experiments::make_timing_spec(config);
  // Said even with --quiet: it is about the numbers, not the progress (a sweep's run says it in its log).
  if (const std::string caveat = calibration_caveat(config); !caveat.empty()) {
    fmt::print(stderr, "warning: {}\n", caveat);
  }
  timing_spec.options.fidelity = sim::parse_fidelity(options.fidelity);
  for (const auto& cfg : options.simgrid_cfg) {
    timing_spec.options.simgrid_args.push_back("--cfg=" + cfg);
  }
  for (const auto& log : options.simgrid_log) {
    timing_spec.options.simgrid_args.push_back("--log=" + log);
  }
  const std::string out = options.out.empty() ? "results/" + config.name : options.out;
  // Open the results directory first: a bad --out fails before minutes of training.
  results::ResultsDir dir = stage_results(out, config, &cleanup);
  auto policy = make_policy(config);

  results::SummaryJson summary = summary_header(config, "sim", policy->name());
  summary.workers = config.train.workers;
  summary.iterations = config.train.iterations;

  if (options.timing_only) {
    if (!options.quiet) {
      fmt::print(stderr, "simulate {} (timing only): {} x {} at batch {} on {}, {} ({}), {} iterations\n",
                 config.name, config.train.workers, config.platform.timing_model, timing_spec.batch_per_gpu,
                 timing_spec.platform.name, config.algorithm.kind, policy->name(), config.train.iterations);
    }
    check_memory(simulate_memory(config, nullptr, options.per_gpu_trace), available_memory_bytes());
    std::vector<topology::ScheduleStep> schedule;
    RunRecorder schedule_csv(config.train.iterations, false);
    for (std::int64_t t = 0; t < config.train.iterations; ++t) {
      schedule.push_back(policy->graph_for(t, nullptr));
      schedule_csv.on_schedule(t, schedule.back());
    }
    const sim::TimingResult timing = sim::time_schedule(timing_spec, schedule, options.per_gpu_trace);
    dir.write_text("schedule.csv", schedule_csv.schedule_csv());
    dir.write_text("trace.csv", simulated_trace_csv(timing));
    if (options.per_gpu_trace) {
      dir.write_text("trace_worker.csv", simulated_worker_trace_csv(timing));
    }
    summary.timing_only = true;
    add_timing(summary, timing, timing_spec, config, options.fidelity);
    summary.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    dir.write_text("summary.json", results::write_summary_json(summary));
    dir.commit();
    fmt::print(
        "{:.4f} s per iteration, {:.0f} samples/s, scaling efficiency {:.3f} ({:.2f} s of timing)\nresults: "
        "{}\n",
        timing.seconds_per_iteration, timing.samples_per_second, timing.scaling_efficiency,
        timing.wall_seconds, dir.target().string());
    return;
  }

  const auto train = config_dataset(config, models::Split::train);
  const auto test = config_dataset(config, models::Split::test);
  core::NumericsSpec spec = numerics_spec(config, train);
  spec.threads = options.threads;
  // The replicas' matrices are the first large allocation: a run that cannot fit is refused before it.
  const models::ModelProfile profile = models::model_profile(spec.model);
  const NumericsShape shape{profile.parameter_count(),
                            std::int64_t{train.channels} * train.height * train.width,
                            static_cast<std::int64_t>(profile.tensors.size())};
  check_memory(simulate_memory(config, &shape, options.per_gpu_trace), available_memory_bytes());

  if (!options.quiet) {
    const unsigned threads = core::resolve_threads(spec.threads);
    fmt::print(stderr, "simulate {}: {} x {} on {}, {} ({}), {} iterations, {} thread{}\n", config.name,
               config.train.workers, config.train.model, config.train.dataset, config.algorithm.kind,
               policy->name(), config.train.iterations, threads, threads == 1 ? "" : "s");
  }
  RunRecorder recorder(spec.iterations, !options.quiet);
  TimedRun run(recorder);
  const core::NumericsResult result = core::run_numerics(spec, train, test, *policy, run);
  // Synchronous training's numerics do not depend on time: the realized schedule is timed afterwards.
  const sim::TimingResult timing = sim::time_schedule(timing_spec, run.schedule(), options.per_gpu_trace);

  dir.write_text("metrics.csv", recorder.metrics_csv());
  dir.write_text("schedule.csv", recorder.schedule_csv());
  dir.write_text("replica_norms.csv", recorder.replica_norms_csv());
  dir.write_text("trace.csv", simulated_trace_csv(timing));
  dir.write_text("accuracy_time.csv", accuracy_time_csv(run.rows(), timing));
  if (options.per_gpu_trace) {
    dir.write_text("trace_worker.csv", simulated_worker_trace_csv(timing));
  }
  add_training_summary(summary, config, result, recorder.gossip_messages());
  add_timing(summary, timing, timing_spec, config, options.fidelity);
  summary.wall_seconds = result.wall_seconds;
  summary.numerics_wall_seconds_per_iteration = result.wall_seconds / static_cast<double>(result.iterations);
  dir.write_text("summary.json", results::write_summary_json(summary));
  dir.commit();
  fmt::print(
      "final test accuracy {:.4f} after {} iterations ({:.1f} s); simulated {:.4f} s per iteration on {}\n"
      "results: {}\n",
      result.final_test_accuracy, result.iterations, result.wall_seconds, timing.seconds_per_iteration,
      timing_spec.platform.name, dir.target().string());
}

}  // namespace

void add_simulate_command(CLI::App& app) {
  auto options = std::make_shared<SimulateOptions>();
  auto* cmd = app.add_subcommand("simulate", "Train virtual replicas and time them on a simulated platform");
  cmd->add_option("config", options->config, "Experiment config (TOML); without one, the embedded defaults");
  cmd->add_option("--set", options->overrides, "Override a key: section.key=value (repeatable)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  cmd->add_option("--out", options->out, "Results directory (default: results/<name>)")
      ->check(non_empty_path());
  cmd->add_option("--threads", options->threads,
                  "Compute threads (0: all cores; results do not depend on it)")
      ->capture_default_str();
  cmd->add_flag("--quiet,-q", options->quiet, "No progress output");
  cmd->add_flag("--timing-only", options->timing_only,
                "Only the timing of platform.timing_model for train.iterations iterations (no training)");
  cmd->add_option("--fidelity", options->fidelity,
                  "fast: each distinct communication simulated once and reused; full: every message of every "
                  "iteration")
      ->check(CLI::IsMember({"fast", "full"}))
      ->capture_default_str();
  cmd->add_flag("--per-gpu-trace", options->per_gpu_trace,
                "Also write trace_worker.csv (per GPU, per iteration)");
  // Checked here: SimGrid itself aborts the process on a setting it does not know.
  cmd->add_option("--cfg", options->simgrid_cfg,
                  "A SimGrid option, e.g. --cfg=network/model:LV08 (repeatable)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->check(CLI::Validator([](std::string& text) { return sim::check_simgrid_cfg(text); }, "ITEM:VALUE"));
  cmd->add_option("--log", options->simgrid_log,
                  "A SimGrid log setting, e.g. --log=root.thres:info (repeatable)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->check(CLI::Validator([](std::string& text) { return sim::check_simgrid_log(text); },
                             "CATEGORY.thres:LEVEL"));
  cmd->callback([options] { run_simulate(*options); });
}

}  // namespace dbench::experiments
