// `dbench calibrate [CONFIG] --local N [--device D]`: micro-benchmarks on N real workers (one MPI rank each,
// or under mpirun across nodes) — the local training step per model and batch size, point-to-point,
// concurrent exchanges and all-reduce over message sizes — fitted into a calibration the simulator's
// platforms accept. Without --device the CPU workers' models and MPI are timed; with it, the LibTorch worker
// of `dbench train --device` on that device (a GPU with NCCL, or the CPU with MPI).
#include <fmt/core.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/numerics.hpp"
#include "experiments/commands.hpp"
#include "experiments/config.hpp"
#include "experiments/device_option.hpp"
#include "experiments/input_keys.hpp"
#include "experiments/sim_setup.hpp"
#include "experiments/timing_setup.hpp"
#include "experiments/train_recorder.hpp"
#include "results/results_dir.hpp"
#include "runtime/communicator.hpp"
#include "runtime/errors.hpp"
#include "runtime/launcher.hpp"
#include "runtime/worker.hpp"
#include "sim/timing.hpp"
#include "topology/graph_policy.hpp"
#include "validation/calibration.hpp"
#include "validation/comparison.hpp"
#include "validation/compute_kernels.hpp"
#include "validation/fits.hpp"
#include "validation/link_kernels.hpp"
#include "validation/timed_rounds.hpp"
#if defined(DBENCH_RUNTIME_HAVE_MPI)
#include "runtime/mpi_communicator.hpp"
#endif
#if defined(DBENCH_RUNTIME_HAVE_NCCL)
#include "runtime/nccl_communicator.hpp"
#endif

namespace dbench::experiments {
namespace {

struct CalibrateOptions {
  std::string config;
  std::vector<std::string> overrides;
  std::string out;
  int local = 0;
  std::vector<std::string> models{"mlp", "lenet"};
  std::vector<int> batches{8, 16, 32, 64};
  std::vector<double> sizes{256, 4096, 16384, 65536, 131072, 262144, 524288, 1048576};
  int repeats = 20;
  /// Empty: the CPU workers' models (dbench train without --device); else "cpu", "cuda" or "cuda:N".
  std::string device;
  bool quiet = false;
};

#if defined(DBENCH_RUNTIME_HAVE_TORCH)
/// `config`'s numerics at each of `batches` per worker: the LibTorch worker is built per batch size, and with
/// linear scaling its learning rate follows the batch.
std::vector<core::NumericsSpec> specs_per_batch(ExperimentConfig config, const models::Dataset& train,
                                                std::span<const int> batches) {
  std::vector<core::NumericsSpec> specs;
  for (const int batch : batches) {
    config.train.batch_per_worker = batch;
    specs.push_back(numerics_spec(config, train));
  }
  return specs;
}
#endif

std::string host_name() {
  std::array<char, 256> name{};
  return ::gethostname(name.data(), name.size()) == 0 ? std::string(name.data()) : std::string("unknown");
}

void print_summary(const validation::Calibration& c, const std::filesystem::path& out) {
  fmt::print("calibration of {} worker{} on {} ({})\n", c.workers, c.workers == 1 ? "" : "s", c.host,
             c.device);
  for (const auto& m : c.models) {
    fmt::print("  compute {:6}: {:.3e} FLOP/s, overhead {:.3e} s (R^2 {:.4f}, largest residual {:.1f} %)\n",
               m.model, m.fit.flops_per_s, m.fit.overhead_s, m.fit.line.r_squared,
               100.0 * m.fit.line.max_relative_residual);
  }
  for (const auto* l : {&c.point_to_point, &c.exchange, &c.allreduce}) {
    if (l->bytes.empty()) {
      continue;  // not measured: a single worker has no links
    }
    fmt::print("  {}:\n    alpha {:.3e} s, beta {:.3e} B/s (R^2 {:.4f}, largest residual {:.1f} %)\n",
               l->pattern, l->fit.alpha_s, l->fit.bandwidth_Bps, l->fit.line.r_squared,
               100.0 * l->fit.line.max_relative_residual);
  }
  fmt::print("  all-reduce of one double (in the fitted overheads): {:.3e} s\nresults: {}\n",
             c.small_allreduce_s, out.string());
}

/// The config `calibrate` was given, with `extra` overrides after the command line's.
ExperimentConfig load_with(const CalibrateOptions& o, std::vector<std::string> extra) {
  std::vector<std::string> overrides = o.overrides;
  overrides.insert(overrides.end(), extra.begin(), extra.end());
  return o.config.empty() ? load_config("", overrides, "<defaults>") : load_config_file(o.config, overrides);
}

/// Seconds per iteration of dbench train's own loop on the workers of `comm` for `config`, measured as
/// validate measures a run (validation::mean_parts over trace_worker.csv, evaluations left out).
double training_loop_seconds(const ExperimentConfig& config, const models::Dataset& train,
                             const models::Dataset& test, runtime::Communicator& comm) {
  constexpr std::int64_t kWarmup = 5;
  const core::NumericsSpec spec = numerics_spec(config, train);
  const auto policy = make_policy(config);
  TrainRecorder recorder(spec.iterations, false);
  runtime::train_worker(spec, train, test, *policy, comm, runtime::WorkerOptions{}, recorder);
  std::array<double, 1> seconds{0.0};
  if (comm.rank() == 0) {
    seconds[0] = validation::mean_parts(recorder.worker_trace(), kWarmup,
                                        validation::evaluation_iterations(recorder.metrics_csv()))
                     .total_s;
  }
  comm.allreduce(std::span<double>(seconds), runtime::ReduceOp::sum);
  return seconds[0];
}

/// CPU workers: times dbench train's own loop on a ring and with the all-reduce at each batch of `m`, the
/// median of a few runs each (a shared machine has slow spells).
void time_training_loops(const CalibrateOptions& o, const std::string& model, const models::Dataset& train,
                         const models::Dataset& test, runtime::Communicator& comm,
                         validation::ModelCalibration& m) {
  constexpr int kRuns = 3;
  for (std::size_t i = 0; i < m.batches.size(); ++i) {
    // Runs as long as the runs validate compares (its config's 300 iterations), or about 0.5 s as the kernels
    // timed them: the first tens of iterations are slower (LeNet on 4 workers sharing 2 cores: 60-iteration
    // runs 5 % slower than 300-iteration ones), and a calibration from shorter runs predicts them slow.
    const double estimate = std::max(m.kernel_seconds[i] + m.gossip_seconds[i], 1e-6);
    const auto iterations = std::clamp<std::int64_t>(static_cast<std::int64_t>(0.5 / estimate), 300, 2000);
    const std::vector<std::string> common{
        "train.model=" + model, fmt::format("train.batch_per_worker={:g}", m.batches[i]),
        fmt::format("train.workers={}", comm.size()), fmt::format("train.iterations={}", iterations),
        fmt::format("train.eval_every={}", iterations)};
    auto with = [&](std::vector<std::string> algorithm) {
      algorithm.insert(algorithm.begin(), common.begin(), common.end());
      return load_with(o, algorithm);
    };
    const ExperimentConfig ring = with({"algorithm.kind=dpsgd", "algorithm.graph=ring"});
    const ExperimentConfig centralized = with({"algorithm.kind=centralized"});
    std::vector<double> ring_runs;
    std::vector<double> centralized_runs;
    for (int r = 0; r < kRuns; ++r) {
      ring_runs.push_back(training_loop_seconds(ring, train, test, comm));
      centralized_runs.push_back(training_loop_seconds(centralized, train, test, comm));
    }
    m.ring_loop_seconds.push_back(validation::median(ring_runs));
    m.allreduce_loop_seconds.push_back(validation::median(centralized_runs));
  }
}

/// The communication `file`'s platform charges one iteration of a ring over `workers` GPUs of `model`.
double simulated_ring_s(const CalibrateOptions& o, const std::filesystem::path& file,
                        const std::string& model, int workers) {
  ExperimentConfig config =
      load_with(o, {"train.model=" + model, fmt::format("train.workers={}", workers), "algorithm.kind=dpsgd",
                    "algorithm.graph=ring", "platform.timing_model=" + model});
  config.platform.preset = file.string();
  const auto policy = make_policy(config);
  const std::array<topology::ScheduleStep, 1> schedule{policy->graph_for(0, nullptr)};
  return sim::time_schedule(make_timing_spec(config), schedule).iterations.front().comm_s;
}

/// Fits `m`'s step to the ring loop less the communication the calibrated platform charges a ring's iteration
/// (so that the platform predicts the measured ring), and its all-reduce to the centralized loop less that
/// step, then writes its platform file. What the loop does beyond the kernels timed alone (gathering shuffled
/// samples, the unfused step of centralized training, caches shared with the exchange) is then in the
/// platform, as in the runs it predicts.
void fit_to_loops(const CalibrateOptions& o, const validation::Calibration& c,
                  validation::ModelCalibration& m, const results::ResultsDir& out) {
  const std::string name = fmt::format("{}.toml", m.model);
  // The links do not depend on the step: the platform as fitted to the kernels gives the ring's share.
  out.write_text(name, validation::platform_toml(c, m));
  const std::filesystem::path file = out.path(name);
  const double ring_s = simulated_ring_s(o, file, m.model, c.workers);
  std::vector<double> allreduce_s;
  for (std::size_t i = 0; i < m.batches.size(); ++i) {
    const double step = m.ring_loop_seconds[i] - ring_s;
    if (step <= 0.0) {
      throw std::runtime_error(fmt::format(
          "calibrate: {} at batch {:g}: dbench train's ring loop took {:.3e} s per iteration, no more than "
          "the {:.3e} s of communication the fitted links give it; the machine's load changed while "
          "calibrating, run it again",
          m.model, m.batches[i], m.ring_loop_seconds[i], ring_s));
    }
    m.seconds[i] = step;
    allreduce_s.push_back(m.allreduce_loop_seconds[i] - step);
  }
  m.fit = validation::fit_compute(m.batches, m.seconds, m.flops_per_sample);
  // Not below an all-reduce of one double: where the centralized loop was no slower than the step (LeNet on
  // 4 workers sharing 2 cores, whose ring iterations also wait for their neighbours' turns), its all-reduce
  // costs next to nothing beyond it.
  m.allreduce_in_loop_s = std::max(validation::median(allreduce_s), c.small_allreduce_s);
}

/// Where the calibration goes (--out, or results/calibration-<workers>); checked before anything is timed.
std::filesystem::path calibration_path(const CalibrateOptions& o, int workers) {
  return o.out.empty() ? std::filesystem::path(fmt::format("results/calibration-{}", workers))
                       : std::filesystem::path(o.out);
}

/// The staged calibration folder; errors name --out.
results::ResultsDir calibration_out(const CalibrateOptions& o, int workers) {
  try {
    return results::ResultsDir(calibration_path(o, workers));
  } catch (const results::ResultsDirError& e) {
    throw std::invalid_argument(fmt::format("--out: {}", e.what()));
  }
}

/// Calibrates on the workers of `comm`: the models' steps and the links, then rank 0 writes the results.
/// `tensors` carries the timed messages (NCCL on a GPU, else `comm` itself); `comm` synchronizes the workers.
void calibrate_with(runtime::Communicator& comm, runtime::Communicator& tensors, const CalibrateOptions& o) {
  const ExperimentConfig config = load_with(o, {});
  const bool root = comm.rank() == 0;
  // Staged from the start: a calibration that fails (or a folder that cannot take it) leaves the previous
  // one whole, and a bad --out is refused before minutes of measurements.
  std::optional<results::ResultsDir> out;
  if (root) {
    out.emplace(calibration_out(o, comm.size()));
  }
  const auto train = config_dataset(config, models::Split::train);
  validation::Calibration c;
  c.workers = comm.size();
  c.host = host_name();
  c.device = o.device.empty() ? "cpu-worker" : o.device;
  for (const auto& model : o.models) {
    if (root && !o.quiet) {
      fmt::print(stderr, "calibrate: {} step on {} at batch sizes", model, c.device);
      for (const int b : o.batches) {
        fmt::print(stderr, " {}", b);
      }
      fmt::print(stderr, "\n");
    }
    ExperimentConfig model_config = config;
    model_config.train.model = model;
    model_config.train.workers = comm.size();
#if defined(DBENCH_RUNTIME_HAVE_TORCH)
    if (!o.device.empty()) {
      c.models.push_back(validation::time_torch_compute(specs_per_batch(model_config, train, o.batches),
                                                        train, o.repeats, o.device, comm, tensors));
      continue;
    }
#endif
    c.models.push_back(
        validation::time_compute(numerics_spec(model_config, train), train, o.batches, o.repeats, comm));
  }
  std::unique_ptr<validation::LinkBuffers> buffers = std::make_unique<validation::HostLinkBuffers>();
#if defined(DBENCH_RUNTIME_HAVE_TORCH)
  if (!o.device.empty()) {
    buffers = std::make_unique<validation::DeviceLinkBuffers>(o.device);
  }
#endif
  if (root && !o.quiet) {
    fmt::print(stderr, "calibrate: {}all-reduce over {} sizes and the models' parameter sizes\n",
               comm.size() >= 2 ? "point-to-point, exchange and " : "", o.sizes.size());
  }
  // The links are also timed at each model's parameter size, the messages its training sends, which its
  // platform file then takes as measured (validation::anchored_fit).
  std::vector<double> sizes = o.sizes;
  for (const auto& m : c.models) {
    if (m.parameter_bytes > 0.0 && std::find(sizes.begin(), sizes.end(), m.parameter_bytes) == sizes.end()) {
      sizes.push_back(m.parameter_bytes);
    }
  }
  std::sort(sizes.begin(), sizes.end());
  // A single worker has no links; its all-reduce still costs what the runtime pays for one.
  if (comm.size() >= 2) {
    c.point_to_point = validation::time_point_to_point(comm, tensors, *buffers, sizes, o.repeats);
    c.exchange = validation::time_exchange(comm, tensors, *buffers, sizes, o.repeats);
  }
  c.allreduce = validation::time_allreduce(
      comm, tensors, *buffers, sizes, o.repeats,
      o.device.empty() ? "summed in double, as centralized training takes it"
                       : fmt::format("summed on {}, as the LibTorch worker takes it",
                                     on_gpu(o.device) ? "the GPU by NCCL" : "the CPU"));
  buffers.reset();
  std::array<double, 1> one{1.0};
  c.small_allreduce_s = validation::seconds_per_call(
      comm, o.repeats, [&] { comm.allreduce(std::span<double>(one), runtime::ReduceOp::sum); });
  if (o.device.empty()) {
    const auto test = config_dataset(config, models::Split::test);
    for (auto& m : c.models) {
      if (root && !o.quiet) {
        fmt::print(stderr, "calibrate: {} in dbench train's loop, on a ring and with the all-reduce\n",
                   m.model);
      }
      time_training_loops(o, m.model, train, test, comm, m);
    }
  }
  if (!root) {
    return;
  }
  for (auto& m : c.models) {
    if (!m.ring_loop_seconds.empty()) {
      fit_to_loops(o, c, m, *out);
    }
  }
  out->write_text("calibration.json", validation::to_json(c).dump(2) + "\n");
  for (const auto& m : c.models) {
    out->write_text(fmt::format("{}.toml", m.model), validation::platform_toml(c, m));
  }
  out->commit();
  if (!o.quiet) {
    print_summary(c, out->target());
  }
}

/// Calibrates on the workers of `comm`, the MPI workers (or the single worker) this process is one of.
void calibrate_on(runtime::Communicator& comm, int local_rank, const CalibrateOptions& o) {
  if (comm.size() < 2 && o.device.empty()) {
    throw std::invalid_argument(
        "calibrate: the CPU workers need at least 2 (--local N or mpirun -n N); one worker calibrates with "
        "--device");
  }
  if (on_gpu(o.device)) {
#if defined(DBENCH_RUNTIME_HAVE_NCCL)
    runtime::NcclOptions nccl_options;
    nccl_options.local_rank = local_rank;
    nccl_options.device = gpu_index(o.device);
    runtime::NcclCommunicator nccl(comm, nccl_options);
    CalibrateOptions on_device = o;
    on_device.device = fmt::format("cuda:{}", nccl.device());
    calibrate_with(comm, nccl, on_device);
    return;
#endif
  }
  static_cast<void>(local_rank);
  calibrate_with(comm, comm, o);
}

std::vector<std::string> worker_args(const CalibrateOptions& o) {
  std::vector<std::string> args{"calibrate"};
  if (!o.config.empty()) {
    args.push_back(o.config);
  }
  for (const auto& s : o.overrides) {
    args.insert(args.end(), {"--set", s});
  }
  const auto join = [](const auto& values) {
    std::string s;
    for (const auto& v : values) {
      s += (s.empty() ? "" : ",") + fmt::format("{}", v);
    }
    return s;
  };
  args.insert(args.end(), {"--models", join(o.models), "--batches", join(o.batches), "--sizes", join(o.sizes),
                           "--repeats", std::to_string(o.repeats)});
  if (!o.out.empty()) {
    args.insert(args.end(), {"--out", o.out});
  }
  if (!o.device.empty()) {
    args.insert(args.end(), {"--device", o.device});
  }
  if (o.quiet) {
    args.emplace_back("--quiet");
  }
  return args;
}

/// Throws naming `option` when `values` has fewer than two distinct values: a line is fitted through them.
template <class T>
void require_two_distinct(const char* option, std::vector<T> values, const char* what) {
  std::sort(values.begin(), values.end());
  values.erase(std::unique(values.begin(), values.end()), values.end());
  if (values.size() < 2) {
    throw std::invalid_argument(
        fmt::format("{}: at least two different {} are needed, since a line is fitted through them; got {}",
                    option, what, values.size()));
  }
}

void run_calibrate(const CalibrateOptions& o) {
  check_device(o.device);
  require_two_distinct("--batches", o.batches, "batch sizes");
  require_two_distinct("--sizes", o.sizes, "message sizes");
  // Each model's config is loaded here as the workers will load it, so that a misspelt --models entry or a
  // bad config is refused before any worker starts, not by every worker after the launch.
  load_with(o, {});
  for (const auto& model : o.models) {
    try {
      load_with(o, {"train.model=" + model});
    } catch (const ConfigError& e) {
      throw std::invalid_argument(fmt::format("--models: '{}' cannot be calibrated: {}", model, e.what()));
    }
  }
  if (o.local == 1 && o.device.empty()) {
    throw std::invalid_argument(
        "--local 1: the CPU workers calibrate in twos or more; a single worker calibrates with --device");
  }
  // One worker runs in this process, as dbench validate --local 1 runs its training: no launcher, no pinning.
  if (o.local >= 2) {
    try {
      results::check_results_target(calibration_path(o, o.local));
    } catch (const results::ResultsDirError& e) {
      throw std::invalid_argument(fmt::format("--out: {}", e.what()));
    }
    const int status = runtime::run_command(
        runtime::local_launch_command(o.local, runtime::current_executable(), worker_args(o)));
    if (status != 0) {
      throw runtime::LaunchError(fmt::format(
          "calibrate: {} local workers failed (launcher exit status {}); the workers' messages above name "
          "the cause",
          o.local, status));
    }
    return;
  }
#if defined(DBENCH_RUNTIME_HAVE_MPI)
  if (runtime::MpiEnvironment::launched_by_mpi()) {
    runtime::LauncherWatch launcher_watch;  // a worker whose launcher is gone stops
    runtime::MpiEnvironment env(nullptr, nullptr);
    std::optional<runtime::MpiCommunicator> comm;
    try {
      comm.emplace(env, runtime::MpiOptions{});
      calibrate_on(*comm, env.local_rank(), o);
    } catch (const std::exception& e) {
      throw std::runtime_error(
          fmt::format("worker {} of {}: {}", env.world_rank(), env.world_size(), error_message(e)));
    }
    return;
  }
#endif
  if (!o.device.empty()) {
    // One worker in this process: a single GPU (or the CPU) needs no launcher.
    runtime::SingleWorkerCommunicator single;
    calibrate_on(single, 0, o);
    return;
  }
  throw std::invalid_argument(
      "calibrate: needs at least 2 workers: --local N, or run under mpirun -n N (with MPI built in); one "
      "worker calibrates with --device");
}

}  // namespace

void add_calibrate_command(CLI::App& app) {
  auto options = std::make_shared<CalibrateOptions>();
  auto* cmd = app.add_subcommand("calibrate",
                                 "Micro-benchmarks on real workers (--local N, or mpirun -n N dbench "
                                 "calibrate) fitted into a calibration "
                                 "file per model for platform.preset");
  cmd->add_option("config", options->config,
                  "Experiment config for the data set and model shapes; without one, the embedded defaults");
  cmd->add_option("--set", options->overrides, "Override a key: section.key=value (repeatable)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  cmd->add_option("--out", options->out,
                  "Directory for calibration.json and <model>.toml (default: results/calibration-<N>)")
      ->check(non_empty_path());
  cmd->add_option("--local", options->local,
                  "Start this many local workers through mpirun (at least 2, or 1 with --device)")
      ->check(number_in(1, 4096));
  cmd->add_option("--device", options->device,
                  "Time the LibTorch worker of dbench train --device on cpu, cuda or cuda:N (NCCL between "
                  "GPUs) instead of the CPU workers; one worker may calibrate alone");
  cmd->add_option("--models", options->models, "Models whose training step is timed")
      ->delimiter(',')
      ->capture_default_str();
  cmd->add_option("--batches", options->batches, "Batch sizes the step is timed at (at least two)")
      ->delimiter(',')
      ->check(number_at_least(1))
      ->capture_default_str();
  cmd->add_option("--sizes", options->sizes, "Message sizes in bytes (at least two)")
      ->delimiter(',')
      ->check(finite_number())
      ->check(number_in(8.0, 1e9))
      ->capture_default_str();
  cmd->add_option(
         "--repeats", options->repeats,
         "Calls per timing at least (more until a timing lasts 20 ms; the median of 7 rounds is kept)")
      ->check(number_in(1, 100000))
      ->capture_default_str();
  cmd->add_flag("--quiet,-q", options->quiet, "No progress output");
  cmd->callback([options] { run_calibrate(*options); });
}

}  // namespace dbench::experiments
