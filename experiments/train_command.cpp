// `dbench train CONFIG`: the runtime engine. One worker per MPI rank (mpirun / srun), or `--local N` to start
// N local workers through mpirun; rank 0 writes the results directory.
#include <fmt/core.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "experiments/commands.hpp"
#include "experiments/config.hpp"
#include "experiments/device_option.hpp"
#include "experiments/input_keys.hpp"
#include "experiments/run_files.hpp"
#include "experiments/signal_cleanup.hpp"
#include "experiments/sim_setup.hpp"
#include "experiments/train_recorder.hpp"
#include "models/errors.hpp"
#include "runtime/communicator.hpp"
#include "runtime/errors.hpp"
#include "runtime/image_folder.hpp"
#include "runtime/launcher.hpp"
#if defined(DBENCH_RUNTIME_HAVE_TORCH)
#include "runtime/torch_worker.hpp"
#endif
#if defined(DBENCH_RUNTIME_HAVE_NCCL)
#include "runtime/nccl_communicator.hpp"
#endif
#include "runtime/worker.hpp"
#if defined(DBENCH_RUNTIME_HAVE_MPI)
#include "runtime/mpi_communicator.hpp"
#endif

namespace dbench::experiments {
namespace {

struct TrainOptions {
  std::string config;
  std::vector<std::string> overrides;
  std::string out;
  int local = 0;
  std::int64_t checkpoint_every = 0;
  std::string checkpoint_dir;
  bool resume = false;
  bool overlap = false;
  double peer_timeout_s = 30.0;
  std::string inject_kill;
  int image_size = 32;
  std::string device;
  bool quiet = false;
};

/// A split of the config's data set: the simulator's loaders, plus ImageNet-style JPEG folders.
models::Dataset load_train_data(const ExperimentConfig& config, models::Split split, int image_size) {
  if (config.train.dataset == "imagenet-folder") {
    if (config.train.data_dir.empty()) {
      throw models::DataError(
          "train.data_dir: imagenet-folder needs the folder of class sub-folders of JPEGs");
    }
    return runtime::read_image_folder(split, config.train.data_dir, {image_size, image_size});
  }
  return config_dataset(config, split);
}

/// The arguments that make a worker run what this invocation asked for, minus --local.
std::vector<std::string> worker_args(const TrainOptions& o) {
  std::vector<std::string> args{"train"};
  if (!o.config.empty()) {
    args.push_back(o.config);
  }
  for (const auto& s : o.overrides) {
    args.insert(args.end(), {"--set", s});
  }
  args.insert(args.end(), {"--set", fmt::format("train.workers={}", o.local)});
  if (!o.out.empty()) {
    args.insert(args.end(), {"--out", o.out});
  }
  if (o.checkpoint_every > 0) {
    args.insert(args.end(), {"--checkpoint-every", std::to_string(o.checkpoint_every)});
  }
  if (!o.checkpoint_dir.empty()) {
    args.insert(args.end(), {"--checkpoint-dir", o.checkpoint_dir});
  }
  if (o.resume) {
    args.emplace_back("--resume");
  }
  if (o.overlap) {
    args.emplace_back("--overlap");
  }
  args.insert(args.end(), {"--peer-timeout", fmt::format("{}", o.peer_timeout_s)});
  if (!o.inject_kill.empty()) {
    args.insert(args.end(), {"--inject-kill", o.inject_kill});
  }
  args.insert(args.end(), {"--image-size", std::to_string(o.image_size)});
  if (!o.device.empty()) {
    args.insert(args.end(), {"--device", o.device});
  }
  if (o.quiet) {
    args.emplace_back("--quiet");
  }
  return args;
}

/// The whole of `text` as an integer, if it is one.
template <typename Int>
std::optional<Int> parse_integer(std::string_view text) {
  Int value{};
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || text.empty()) {
    return std::nullopt;
  }
  return value;
}

/// --inject-kill RANK:ITERATION of a run of `workers` workers and `iterations` iterations. A fault that
/// cannot happen (a rank or an iteration the run does not have) is refused: it would let a fault test pass
/// without its fault.
void parse_kill(const std::string& spec, int workers, std::int64_t iterations, runtime::WorkerOptions& w) {
  const auto colon = spec.find(':');
  const auto rank = parse_integer<int>(std::string_view(spec).substr(0, colon));
  const auto iteration = colon == std::string::npos
                             ? std::nullopt
                             : parse_integer<std::int64_t>(std::string_view(spec).substr(colon + 1));
  if (!rank || !iteration) {
    throw std::invalid_argument(fmt::format("--inject-kill: expected RANK:ITERATION, got '{}'", spec));
  }
  if (*rank < 0 || *rank >= workers) {
    throw std::invalid_argument(
        fmt::format("--inject-kill {}: rank {} does not exist; the {} workers are ranks 0 to {}", spec, *rank,
                    workers, workers - 1));
  }
  if (*iteration < 0 || *iteration >= iterations) {
    throw std::invalid_argument(fmt::format(
        "--inject-kill {}: iteration {} never starts; train.iterations = {} runs iterations 0 to {}", spec,
        *iteration, iterations, iterations - 1));
  }
  w.kill_rank = *rank;
  w.kill_iteration = *iteration;
}

/// The experiment config of this invocation: the file or the embedded defaults, with the --set overrides.
ExperimentConfig load_train_config(const TrainOptions& options) {
  return options.config.empty() ? load_config("", options.overrides, "<defaults>")
                                : load_config_file(options.config, options.overrides);
}

/// The results directory that rank 0 writes.
std::string results_path(const TrainOptions& options, const ExperimentConfig& config) {
  return options.out.empty() ? "results/" + config.name : options.out;
}

/// A LibTorch model on options.device: tensors move through NCCL on a GPU (the GPU of the worker's local rank
/// unless the device names one), through `host` on the CPU.
runtime::TrainResult train_on_device(const core::NumericsSpec& spec, const models::Dataset& train,
                                     const models::Dataset& test, topology::GraphPolicy& policy,
                                     runtime::Communicator& host, int local_rank,
                                     const runtime::WorkerOptions& w, TrainRecorder& recorder,
                                     const TrainOptions& options) {
#if defined(DBENCH_RUNTIME_HAVE_TORCH)
  if (on_gpu(options.device)) {
#if defined(DBENCH_RUNTIME_HAVE_NCCL)
    runtime::NcclOptions nccl_options;
    nccl_options.local_rank = local_rank;
    nccl_options.peer_timeout_s = options.peer_timeout_s;
    nccl_options.device = gpu_index(options.device);
    runtime::NcclCommunicator nccl(host, nccl_options);
    return runtime::train_torch_worker(spec, train, test, policy, host, nccl,
                                       fmt::format("cuda:{}", nccl.device()), w, recorder);
#else
    throw std::invalid_argument("--device cuda: this dbench was built without CUDA and NCCL");
#endif
  }
  static_cast<void>(local_rank);
  return runtime::train_torch_worker(spec, train, test, policy, host, host, "cpu", w, recorder);
#else
  static_cast<void>(spec);
  static_cast<void>(train);
  static_cast<void>(test);
  static_cast<void>(policy);
  static_cast<void>(host);
  static_cast<void>(local_rank);
  static_cast<void>(w);
  static_cast<void>(recorder);
  throw std::invalid_argument(
      fmt::format("--device {}: this dbench was built without LibTorch", options.device));
#endif
}

/// Cost-aware Ada's rungs, simulated once by rank 0 and sent to the others (every rank runs the same
/// policy); nothing for other policies.
std::optional<std::vector<bool>> ada_rungs_from_root(const ExperimentConfig& config,
                                                     runtime::Communicator& comm) {
  const AlgorithmConfig& a = config.algorithm;
  if (a.kind != "dpsgd" || a.graph != "ada") {
    return std::nullopt;
  }
  std::vector<std::byte> flags(split_names(a.ada_ladder).size());
  if (comm.rank() == 0) {
    const std::vector<bool> kept = ada_rungs_kept(config);
    for (std::size_t i = 0; i < flags.size(); ++i) {
      flags[i] = std::byte{kept.at(i) ? std::uint8_t{1} : std::uint8_t{0}};
    }
  }
  comm.broadcast(flags, 0);
  std::vector<bool> kept(flags.size());
  for (std::size_t i = 0; i < flags.size(); ++i) {
    kept[i] = flags[i] != std::byte{0};
  }
  return kept;
}

/// Trains as worker `rank`; `connect` joins the other workers once the data is loaded (loading takes
/// uneven time, and joining blocks without the peer timeout that training waits are held to).
/// `cleanup` removes rank 0's staged results when a stop signal ends the worker.
void train_on(int rank, int local_rank, const std::function<runtime::Communicator&()>& connect,
              const TrainOptions& options, SignalCleanup& cleanup) {
  const ExperimentConfig config = load_train_config(options);
  const std::string out = results_path(options, config);
  const bool root = rank == 0;
  runtime::WorkerOptions w;
  if (!options.inject_kill.empty()) {
    parse_kill(options.inject_kill, config.train.workers, config.train.iterations, w);
  }
  // Rank 0 opens the results directory first: a bad --out fails before minutes of training.
  std::unique_ptr<results::ResultsDir> dir;
  if (root) {
    dir = std::make_unique<results::ResultsDir>(stage_results(out, config, &cleanup));
  }
  const auto train = load_train_data(config, models::Split::train, options.image_size);
  const auto test = load_train_data(config, models::Split::test, options.image_size);
  const core::NumericsSpec spec = numerics_spec(config, train);
  runtime::Communicator& comm = connect();
  auto policy = make_policy(config, ada_rungs_from_root(config, comm));

  w.overlap = options.overlap;
  w.checkpoint_every = options.checkpoint_every;
  w.checkpoint_dir = options.checkpoint_dir.empty() ? out + ".checkpoints" : options.checkpoint_dir;
  w.resume = options.resume;
  w.run_key = to_toml(config);
  if (root && !options.quiet) {
    fmt::print(stderr, "train {}: {} workers x {} on {}, {} ({}), {} iterations{}{}\n", config.name,
               comm.size(), config.train.model, config.train.dataset, config.algorithm.kind, policy->name(),
               config.train.iterations, options.overlap ? ", overlapped gossip" : "",
               options.resume ? ", resumed" : "");
  }
  TrainRecorder recorder(spec.iterations, root && !options.quiet);
  const runtime::TrainResult result =
      options.device.empty()
          ? runtime::train_worker(spec, train, test, *policy, comm, w, recorder)
          : train_on_device(spec, train, test, *policy, comm, local_rank, w, recorder, options);
  if (!root) {
    return;
  }
  dir->write_text("metrics.csv", recorder.metrics_csv());
  dir->write_text("schedule.csv", recorder.schedule_csv());
  dir->write_text("replica_norms.csv", recorder.replica_norms_csv());
  dir->write_text("trace.csv", recorder.trace());
  dir->write_text("trace_worker.csv", recorder.worker_trace());
  results::SummaryJson summary = summary_header(config, "runtime", policy->name());
  add_training_summary(summary, config, result, recorder.gossip_messages());
  summary.resumed_from_iteration = result.start_iteration;
  summary.overlap = options.overlap;
  summary.device = options.device.empty() ? "cpu-worker" : options.device;
  summary.seconds_per_iteration = result.seconds_per_iteration;
  summary.samples_per_second = result.samples_per_second;
  summary.wall_seconds = result.wall_seconds;
  dir->write_text("summary.json", results::write_summary_json(summary));
  dir->commit();
  fmt::print("final test accuracy {:.4f} after {} iterations ({:.1f} s, {:.4f} s/iteration)\nresults: {}\n",
             result.final_test_accuracy, result.iterations, result.wall_seconds, result.seconds_per_iteration,
             dir->target().string());
}

void run_train(const TrainOptions& options) {
  check_device(options.device);
#if defined(DBENCH_RUNTIME_HAVE_MPI)
  const bool launch = options.local > 0;
#else
  // Without MPI there is no launcher to go through: one local worker runs in this process.
  runtime::check_local_workers(std::max(options.local, 1));
  const bool launch = false;
#endif
  if (launch) {
    // What the workers would refuse is refused here, before any of them starts.
    const ExperimentConfig config = load_train_config(options);
    if (!options.inject_kill.empty()) {
      runtime::WorkerOptions unused;
      parse_kill(options.inject_kill, options.local, config.train.iterations, unused);
    }
    const auto command =
        runtime::local_launch_command(options.local, runtime::current_executable(), worker_args(options));
    int status = 0;
    try {
      status = runtime::run_command(command);
    } catch (const runtime::Interrupted&) {
      results::remove_abandoned_staging(results_path(options, config));
      throw;
    }
    if (status != 0) {
      // Rank 0 removes its staged results on an error or a stop signal, but not when killed outright.
      results::remove_abandoned_staging(results_path(options, config));
      throw runtime::LaunchError(fmt::format(
          "{} local workers failed (launcher exit status {}); the workers' messages above name the "
          "cause",
          options.local, status));
    }
    return;
  }
  // From here on this process is a worker; a stop signal or the loss of its launcher ends it, after rank 0
  // removed its staged results.
  SignalCleanup cleanup;
  runtime::LauncherWatch launcher_watch;
#if defined(DBENCH_RUNTIME_HAVE_MPI)
  if (runtime::MpiEnvironment::launched_by_mpi()) {
    runtime::MpiEnvironment env(nullptr, nullptr);
    if (options.overlap && !env.threads_allowed()) {
      throw std::runtime_error(
          "--overlap: this MPI library does not allow calls from a helper thread "
          "(MPI_THREAD_SERIALIZED); run without --overlap");
    }
    std::optional<runtime::MpiCommunicator> comm;
    try {
      train_on(
          env.world_rank(), env.local_rank(),
          [&]() -> runtime::Communicator& {
            return comm.emplace(env, runtime::MpiOptions{options.peer_timeout_s});
          },
          options, cleanup);
    } catch (const std::exception& e) {
      // Each worker names itself: mpirun's summary alone would not say which worker failed or why.
      throw std::runtime_error(
          fmt::format("worker {} of {}: {}", env.world_rank(), env.world_size(), error_message(e)));
    }
    return;
  }
#endif
  runtime::SingleWorkerCommunicator single;
  TrainOptions alone = options;
  if (alone.local == 1) {
    alone.overrides.emplace_back("train.workers=1");  // as the launcher's worker would be told
  }
  train_on(
      0, 0, [&]() -> runtime::Communicator& { return single; }, alone, cleanup);
}

}  // namespace

void add_train_command(CLI::App& app) {
  auto options = std::make_shared<TrainOptions>();
  auto* cmd = app.add_subcommand(
      "train", "Train on real workers: one per MPI rank (mpirun -n N dbench train ...), or --local N");
  cmd->add_option("config", options->config, "Experiment config (TOML); without one, the embedded defaults");
  cmd->add_option("--set", options->overrides, "Override a key: section.key=value (repeatable)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  cmd->add_option("--out", options->out, "Results directory, written by rank 0 (default: results/<name>)")
      ->check(non_empty_path());
  cmd->add_option("--local", options->local,
                  "Start this many local workers through mpirun (sets train.workers)")
      ->check(CLI::Validator(
          [](const std::string& value) {
            // One machine's launcher: --local 100000 would start that many processes before anything fails.
            constexpr long long kMaxLocal = 4096;
            const auto workers = parse_integer<long long>(value);
            if (workers && *workers < 1) {
              return fmt::format("needs at least 1 worker, got {}", value);
            }
            return workers && *workers > kMaxLocal
                       ? fmt::format(
                             "at most {} local workers on one machine, got {}; start more under "
                             "mpirun or srun",
                             kMaxLocal, value)
                       : std::string();
          },
          "1 <= N <= 4096"));
  cmd->add_option("--checkpoint-every", options->checkpoint_every,
                  "Write a checkpoint every K iterations and at the end (0: never)")
      ->check(number_at_least(0));
  cmd->add_option("--checkpoint-dir", options->checkpoint_dir,
                  "Where checkpoints go, shared by all workers (default: <out>.checkpoints)");
  cmd->add_flag("--resume", options->resume, "Continue from the latest checkpoint of the same config");
  cmd->add_flag(
      "--overlap", options->overlap,
      "Overlap each gossip exchange with the local step (x_{t+1} = W x_t - lr d_t; off by default)");
  cmd->add_option("--peer-timeout", options->peer_timeout_s,
                  "Seconds without progress after which a silent worker is reported lost (0: wait forever)")
      ->capture_default_str()
      ->check(finite_number())
      ->check(number_at_least(0));
  cmd->add_option(
      "--inject-kill", options->inject_kill,
      "Fault injection for tests: RANK:ITERATION kills that worker when it starts that iteration");
  cmd->add_option("--image-size", options->image_size,
                  "imagenet-folder: images are resized to this many pixels square")
      ->capture_default_str()
      ->check(number_at_least(1));
  cmd->add_option(
      "--device", options->device,
      "Train a LibTorch model on cpu, cuda (the GPU of the local rank, NCCL) or cuda:N instead of the "
      "simulator's replica model");
  cmd->add_flag("--quiet,-q", options->quiet, "No progress output");
  cmd->callback([options] { run_train(*options); });
}

}  // namespace dbench::experiments
