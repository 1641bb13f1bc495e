// `dbench calibrate [CONFIG] --local N [--device D]`: micro-benchmarks on N real workers (one MPI rank each,
// or under mpirun across nodes) — the local training step per model and batch size, point-to-point,
// concurrent exchanges and all-reduce over message sizes — fitted into a calibration the simulator's
// platforms accept. Without --device the CPU workers' models and MPI are timed; with it, the LibTorch worker
// of `dbench train --device` on that device (a GPU with NCCL, or the CPU with MPI).
#include <fmt/core.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <filesystem>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <numeric>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/numerics.hpp"
#include "experiments/child_runs.hpp"
#include "experiments/commands.hpp"
#include "experiments/config.hpp"
#include "experiments/device_option.hpp"
#include "experiments/input_keys.hpp"
#include "experiments/signal_cleanup.hpp"
#include "experiments/sim_setup.hpp"
#include "experiments/timing_setup.hpp"
#include "experiments/train_recorder.hpp"
#include "results/atomic_file.hpp"
#include "results/results_dir.hpp"
#include "results/results_tree.hpp"
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
#include "validation/placement.hpp"
#include "validation/speed_watch.hpp"
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
  /// Runs of each dbench train loop at each batch, of which each part's median counts (as validate takes its
  /// runs'). Five, not three: a loop's mean communication is carried by the few iterations a worker waits out
  /// its neighbour's 2-4 ms descheduling, and with three runs LeNet's ring on 2 workers at the same batch
  /// came out 10 % apart between calibrations.
  int loop_runs = 5;
  /// Largest change of the reference kernel's time from the first reading that counts as the same machine.
  double drift_tolerance = 0.15;
  /// Re-measurements of a measurement the machine's speed drifted during, before refusing.
  int retries = 2;
  /// Most seconds to wait for a drifted speed to come back before measuring again (SpeedWatchOptions).
  double settle_wait = 90.0;
  /// Non-empty: only time the reference kernel on the workers and write its seconds per call there.
  std::string speed_check;
  /// With speed_check: also time the config's model's local step at its batch per worker there
  /// (validation::step_reading_seconds), the machine's speed for that model's own kernels.
  bool speed_step = false;
  /// Empty: the CPU workers' models (dbench train without --device); else "cpu", "cuda" or "cuda:N".
  std::string device;
  /// Non-empty (workers of calibrate --local): write the measurements to this file unfitted, without
  /// dbench train's loops, which the launcher times as fresh runs and fits.
  std::string unfitted;
  /// Non-empty: fit the measurements of this calibration folder's calibration.json again and rewrite it
  /// (or write --out) without timing anything.
  std::string refit;
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
    if (m.step_between) {
      const auto at = [&](const validation::ComputeFit& f) {
        return f.seconds_at(m.step_batch, m.flops_per_sample);
      };
      fmt::print(
          "    step at the config's batch {:g}: {:.3e} s, between the timed batches around it (the line "
          "through all: {:.3e} s)\n",
          m.step_batch, at(*m.step_between), at(m.fit));
    }
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

/// Iterations left out at the start of a loop's means, as validate leaves them out by default.
constexpr std::int64_t kWarmup = 5;

/// Seconds per iteration of dbench train's own loop on the workers of `comm` for `config`, and its parts,
/// measured as validate measures a run (validation::mean_parts over trace_worker.csv, evaluations left out).
validation::PartTimes training_loop_parts(const ExperimentConfig& config, const models::Dataset& train,
                                          const models::Dataset& test, runtime::Communicator& comm) {
  const core::NumericsSpec spec = numerics_spec(config, train);
  const auto policy = make_policy(config);
  TrainRecorder recorder(spec.iterations, false);
  runtime::train_worker(spec, train, test, *policy, comm, runtime::WorkerOptions{}, recorder);
  std::array<double, 3> parts{0.0, 0.0, 0.0};
  if (comm.rank() == 0) {
    const auto measured = validation::mean_parts(recorder.worker_trace(), kWarmup,
                                                 validation::evaluation_iterations(recorder.metrics_csv()));
    parts = {measured.total_s, measured.compute_s, measured.comm_s};
  }
  comm.allreduce(std::span<double>(parts), runtime::ReduceOp::sum);
  return {.total_s = parts[0], .compute_s = parts[1], .comm_s = parts[2]};
}

/// The exchange `file`'s platform charges the first iteration of `graph` over `workers` GPUs of `model` with
/// its intra-node links at `bandwidth_Bps`, without the turns of workers sharing a core (or their relief) or
/// a round's fixed cost.
double simulated_exchange_s(const CalibrateOptions& o, const std::filesystem::path& file,
                            const std::string& model, const std::string& graph, int workers,
                            double bandwidth_Bps) {
  ExperimentConfig config =
      load_with(o, {"train.model=" + model, fmt::format("train.workers={}", workers), "algorithm.kind=dpsgd",
                    "algorithm.graph=" + graph, "platform.timing_model=" + model});
  config.platform.preset = file.string();
  const auto policy = make_policy(config);
  const std::array<topology::ScheduleStep, 1> schedule{policy->graph_for(0, nullptr)};
  sim::TimingSpec spec = make_timing_spec(config);
  spec.platform.shared_core_turns = 0.0;
  spec.platform.same_core_relief = 0.0;
  spec.platform.collective_latency_s = 0.0;
  spec.platform.intra_node_bandwidth_Bps = bandwidth_Bps;
  return sim::time_schedule(spec, schedule).iterations.front().comm_s;
}

/// A graph's simulated exchange as a line in the links' inverse bandwidth x: seconds = at_zero + slope * x
/// (max-min sharing of fixed messages is affine in it), from two simulations.
struct ExchangeLine {
  double at_zero = 0.0;
  double slope = 0.0;
};

ExchangeLine exchange_line(const CalibrateOptions& o, const std::filesystem::path& file,
                           const std::string& model, const std::string& graph, int workers,
                           double bandwidth_Bps) {
  const double x1 = 1.0 / bandwidth_Bps;
  const double y1 = simulated_exchange_s(o, file, model, graph, workers, bandwidth_Bps);
  const double y2 = simulated_exchange_s(o, file, model, graph, workers, 2.0 * bandwidth_Bps);
  const double slope = (y1 - y2) / (0.5 * x1);
  return {y1 - slope * x1, slope};
}

/// Every worker's share of its in-neighbours on its own core in each of the first 2 x `workers` rounds of
/// `graph` (a period of every time-varying family), the workers pinned round-robin to `cores` cores.
std::vector<double> same_core_shares(const CalibrateOptions& o, const std::string& model,
                                     const std::string& graph, int workers, int cores) {
  const ExperimentConfig config =
      load_with(o, {"train.model=" + model, fmt::format("train.workers={}", workers), "algorithm.kind=dpsgd",
                    "algorithm.graph=" + graph});
  const auto policy = make_policy(config);
  sim::PlatformSpec platform;
  platform.gpus_per_node = workers;
  platform.cores_per_node = cores;
  std::vector<double> shares;
  for (std::int64_t t = 0; t < 2 * static_cast<std::int64_t>(workers); ++t) {
    const std::vector<double> round = sim::same_core_share(*policy->graph_for(t, nullptr).graph, platform);
    shares.insert(shares.end(), round.begin(), round.end());
  }
  return shares;
}

double mean_of(const std::vector<double>& v) {
  return v.empty() ? 0.0 : std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
}

/// The steps beyond its own that the simulator makes a worker wait on average over `shares` (sim's
/// gossip_wait_steps), with `turns`, `relief` and `whole` as the platform's shared_core_turns,
/// same_core_relief and same_core_relief_whole.
double mean_turns(const std::vector<double>& shares, double turns, double relief,
                  std::optional<double> whole = std::nullopt) {
  if (shares.empty()) {
    return turns;
  }
  sim::PlatformSpec platform;
  platform.shared_core_turns = turns;
  platform.same_core_relief = relief;
  platform.same_core_relief_whole = whole;
  double sum = 0.0;
  for (const double share : shares) {
    sum += sim::gossip_wait_steps(platform, share) - 1.0;
  }
  return sum / static_cast<double>(shares.size());
}

/// The intra-node links and a gossip round's fixed cost (the platform's collective_latency_s: the loss's
/// all-reduce and the synchronization every iteration pays, whatever it sends) under which the simulated ring
/// exchange takes `m.ring_exchange_in_loop_s` and the one-peer graph's `one_peer_s`: two lines in the inverse
/// bandwidth, two unknowns. Without `one_peer_s` (its loop fits the relief of workers whose in-neighbours
/// share their core instead), or where the one-peer graph's exchange cost as much as the ring's, the links
/// keep the exchanges' fit and the round's cost takes the rest of the ring's; where the lines do not meet
/// otherwise (two workers, whose graphs send alike), the ring alone decides the bandwidth and the round costs
/// nothing extra; where the links' latency alone takes longer than the ring's exchange, latency and transfer
/// take half of it each. Returns the one-peer graph's simulated exchange under the links fitted, the round's
/// cost included.
double fit_links_to_loops(const CalibrateOptions& o, const std::filesystem::path& file, int workers,
                          const validation::AlphaBetaFit& link, std::optional<double> one_peer_s,
                          validation::ModelCalibration& m) {
  const ExchangeLine ring = exchange_line(o, file, m.model, "ring", workers, link.bandwidth_Bps);
  const ExchangeLine one_peer =
      exchange_line(o, file, m.model, "one-peer-exponential", workers, link.bandwidth_Bps);
  const double ring_s = m.ring_exchange_in_loop_s;
  m.link_in_loop = link;
  m.round_latency_s = 0.0;
  const auto one_peer_exchange = [&] {
    return one_peer.at_zero + one_peer.slope / m.link_in_loop.bandwidth_Bps + m.round_latency_s;
  };
  if (ring.slope <= 0.0) {
    return one_peer_exchange();
  }
  // What the loops paid beyond the links as the exchanges measured them is the round's, whatever it sends.
  const double kernel_round = ring_s - ring.at_zero - ring.slope / link.bandwidth_Bps;
  if (!one_peer_s && kernel_round >= 0.0) {
    m.round_latency_s = kernel_round;
    return one_peer_exchange();
  }
  if (one_peer_s && ring.slope - one_peer.slope > 0.0 && *one_peer_s > 0.0) {
    const double x =
        (ring_s - *one_peer_s - (ring.at_zero - one_peer.at_zero)) / (ring.slope - one_peer.slope);
    const double round = ring_s - ring.at_zero - ring.slope * x;
    if (x > 0.0 && round >= 0.0) {
      m.link_in_loop.bandwidth_Bps = 1.0 / x;
      m.round_latency_s = round;
      return one_peer_exchange();
    }
    // The one-peer graph's single message a round cost its loop as much as the ring's two: the round's
    // cost takes what the ring's loop paid beyond the links.
    if (x <= 0.0 && kernel_round >= 0.0) {
      m.round_latency_s = kernel_round;
      return one_peer_exchange();
    }
  }
  if (ring_s > 1.05 * ring.at_zero) {
    m.link_in_loop.bandwidth_Bps = ring.slope / (ring_s - ring.at_zero);
  } else {
    m.link_in_loop.alpha_s = link.alpha_s * (0.5 * ring_s) / std::max(ring.at_zero, 1e-12);
    m.link_in_loop.bandwidth_Bps = ring.slope / (0.5 * ring_s);
  }
  return one_peer_exchange();
}

/// Fits `m`'s parts each to its own measurement in dbench train's loops, then writes its platform file: the
/// step to the ring loop's compute; the centralized step's separate update to the difference of the loops'
/// compute; the link to the ring loop's communication less the turns of workers sharing a core (the wait for
/// the others' steps); the all-reduce to the centralized loop's communication less those turns. What the loop
/// does beyond the kernels timed alone (gathering shuffled samples, the unfused step of centralized training,
/// caches shared with the exchange) is then in the platform, as in the runs it predicts.
void fit_to_loops(const CalibrateOptions& o, const validation::Calibration& c,
                  validation::ModelCalibration& m, const results::ResultsDir& out) {
  const std::string name = fmt::format("{}.toml", m.model);
  m.seconds = m.ring_loop_compute_s;
  m.fit = validation::fit_compute(m.batches, m.seconds, m.flops_per_sample);
  const auto step = [&](std::size_t i) { return m.fit.seconds_at(m.batches[i], m.flops_per_sample); };
  // The turns: how the ring's communication grows with the step, at most one step per other worker.
  double turns = 0.0;
  if (c.workers_per_core > 1) {
    std::vector<double> steps;
    for (std::size_t i = 0; i < m.batches.size(); ++i) {
      steps.push_back(step(i));
    }
    turns = std::clamp(validation::fit_line(steps, m.ring_loop_comm_s).slope, 0.0,
                       static_cast<double>(c.workers_per_core - 1));
  }
  m.shared_core_turns = turns;
  std::vector<double> extra;
  std::vector<double> exchange;
  std::vector<double> allreduce;
  for (std::size_t i = 0; i < m.batches.size(); ++i) {
    extra.push_back(m.allreduce_loop_compute_s[i] - m.ring_loop_compute_s[i]);
  }
  m.gradient_step_overhead_s = std::max(0.0, validation::median(extra));
  for (std::size_t i = 0; i < m.batches.size(); ++i) {
    allreduce.push_back(m.allreduce_loop_comm_s[i] - turns * (step(i) + m.gradient_step_overhead_s));
  }
  // In-neighbours on a worker's own core spare it part of its wait: the ring's and the exponential graph's
  // loops send as many messages alike (every port sends and receives two on 4 workers), and their
  // communication apart, beyond what the simulated exchanges differ by, is that relief times the step and
  // the graphs' shares of such in-neighbours apart.
  std::vector<double> ring_shares;
  std::vector<double> one_peer_shares;
  m.same_core_relief = 0.0;
  bool relieved = false;
  // The simulated exchanges below need neither the step nor the turns (they are simulated without turns,
  // relief or a round's fixed cost): the platform as fitted to the kernels gives them, for the relief's fit
  // and the links' alike.
  out.write_text(name, validation::platform_toml(c, m));
  if (m.exponential_loop_comm_s.size() == m.batches.size() && c.cores > 0 && c.workers_per_core > 1) {
    ring_shares = same_core_shares(o, m.model, "ring", c.workers, c.cores);
    one_peer_shares = same_core_shares(o, m.model, "one-peer-exponential", c.workers, c.cores);
    const double apart =
        mean_of(same_core_shares(o, m.model, "exponential", c.workers, c.cores)) - mean_of(ring_shares);
    if (apart > 0.0) {
      relieved = true;
      const double bandwidth = validation::anchored_fit(c.exchange, m.parameter_bytes).bandwidth_Bps;
      const double exchanges_apart =
          simulated_exchange_s(o, out.path(name), m.model, "ring", c.workers, bandwidth) -
          simulated_exchange_s(o, out.path(name), m.model, "exponential", c.workers, bandwidth);
      std::vector<double> relief;
      for (std::size_t i = 0; i < m.batches.size(); ++i) {
        relief.push_back((m.ring_loop_comm_s[i] - m.exponential_loop_comm_s[i] - exchanges_apart) /
                         (apart * step(i)));
      }
      // Not bounded by the turns' slope: the ring loop's communication beyond that slope (its fitted
      // exchange) is partly waiting too, for in-neighbours on the other cores.
      m.same_core_relief =
          std::clamp(validation::median(relief), 0.0, static_cast<double>(c.workers_per_core - 1));
    }
  }
  for (std::size_t i = 0; i < m.batches.size(); ++i) {
    exchange.push_back(m.ring_loop_comm_s[i] - mean_turns(ring_shares, turns, m.same_core_relief) * step(i));
  }
  m.ring_exchange_in_loop_s = validation::median(exchange);
  if (m.ring_exchange_in_loop_s <= 0.0) {
    throw std::runtime_error(fmt::format(
        "calibrate: {}: dbench train's ring loop communicated {:.3e} s per iteration (the median over the "
        "batches), no more than the turns of the {} workers sharing a core take; the machine's load changed "
        "while calibrating, run it again",
        m.model, validation::median(m.ring_loop_comm_s), c.workers_per_core));
  }
  // Not below an all-reduce of one double: where the centralized loop paid no more than the turns, its
  // all-reduce costs next to nothing beyond them.
  m.allreduce_in_loop_s = std::max(validation::median(allreduce), c.small_allreduce_s);
  const validation::AlphaBetaFit kernel_link = validation::anchored_fit(c.exchange, m.parameter_bytes);
  m.same_core_relief_whole.reset();
  if (!relieved) {
    std::vector<double> one_peer;
    for (std::size_t i = 0; i < m.batches.size() && i < m.one_peer_loop_comm_s.size(); ++i) {
      one_peer.push_back(m.one_peer_loop_comm_s[i] - mean_turns(one_peer_shares, turns, 0.0) * step(i));
    }
    fit_links_to_loops(o, out.path(name), c.workers, kernel_link,
                       one_peer.empty() ? 0.0 : validation::median(one_peer), m);
    return;
  }
  // Where in-neighbours on a worker's own core relieve it, the one-peer graph's loop tells how much they do
  // at a whole share (its rounds alternate between none and all of them there), and the links keep the
  // exchanges' fit.
  const double one_peer_exchange_s =
      fit_links_to_loops(o, out.path(name), c.workers, kernel_link, std::nullopt, m);
  const double most = static_cast<double>(c.workers_per_core - 1);
  const auto wait = [&](double w) { return mean_turns(one_peer_shares, turns, m.same_core_relief, w); };
  // Under another process's load on a core, the one-peer graph's loop can pay less than its simulated
  // exchange even at the most relief (the MLP on 4 workers beside a busy loop: 5.8 ms against 6.8 ms):
  // the waits are that process's time slices, not steps, and a worker waits for one in-neighbour a round
  // there, for two on the ring. The links then take both loops' exchanges, as where no relief is fitted.
  std::vector<double> beyond_most;
  for (std::size_t i = 0; i < m.batches.size() && i < m.one_peer_loop_comm_s.size(); ++i) {
    beyond_most.push_back(m.one_peer_loop_comm_s[i] - wait(most) * step(i));
  }
  if (!beyond_most.empty()) {
    const double beyond = validation::median(beyond_most);
    if (beyond < one_peer_exchange_s) {
      fit_links_to_loops(o, out.path(name), c.workers, kernel_link, beyond, m);
      m.same_core_relief_whole = most;
      return;
    }
  }
  // Per batch, the relief at which the simulated mean wait over its rounds equals what its loop communicated
  // beyond its simulated exchange; the wait falls as the relief grows.
  std::vector<double> whole;
  for (std::size_t i = 0; i < m.batches.size() && i < m.one_peer_loop_comm_s.size(); ++i) {
    const double waited = (m.one_peer_loop_comm_s[i] - one_peer_exchange_s) / step(i);
    double low = 0.0;
    double high = most;
    if (wait(low) <= waited) {
      whole.push_back(low);
      continue;
    }
    if (wait(high) >= waited) {
      whole.push_back(high);
      continue;
    }
    for (int k = 0; k < 50; ++k) {
      const double mid = 0.5 * (low + high);
      (wait(mid) > waited ? low : high) = mid;
    }
    whole.push_back(0.5 * (low + high));
  }
  if (!whole.empty()) {
    m.same_core_relief_whole = validation::median(whole);
  }
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

/// Fits every model timed in dbench train's loops to them, then writes the calibration into `out` and
/// commits it.
void fit_and_write(const CalibrateOptions& o, validation::Calibration& c, results::ResultsDir& out) {
  const double batch = static_cast<double>(load_with(o, {}).train.batch_per_worker);
  for (auto& m : c.models) {
    if (!m.ring_loop_seconds.empty()) {
      fit_to_loops(o, c, m, out);
    }
    // The platform charges the config's batch the step between the timed batches around it; the other
    // constants keep the line through all of them.
    m.step_batch = batch;
    m.step_between = validation::fit_compute_between(m.batches, m.seconds, m.flops_per_sample, batch);
  }
  out.write_text("calibration.json", validation::to_json(c).dump(2) + "\n");
  for (const auto& m : c.models) {
    out.write_text(fmt::format("{}.toml", m.model), validation::platform_toml(c, m));
  }
  out.commit();
  if (!o.quiet) {
    print_summary(c, out.target());
  }
}

/// What a part of a model's loops is called in the lines a drift says: "mlp's loops at batch 16, round 2 of
/// 5".
std::string loops_part_name(const std::string& model, int round, int rounds, double batch) {
  return fmt::format("{}'s loops at batch {:g}, round {} of {}", model, batch, round + 1, rounds);
}

/// Calibrates on the workers of `comm`: the models' steps and the links, then rank 0 writes the results.
/// `tensors` carries the timed messages (NCCL on a GPU, else `comm` itself); `comm` synchronizes the workers.
void calibrate_with(runtime::Communicator& comm, runtime::Communicator& tensors, const CalibrateOptions& o) {
  const bool root = comm.rank() == 0;
  if (!o.speed_check.empty()) {
    // Only the reference kernel (and the model's step), for the readings around validate's runs and
    // calibrate's loops.
    nlohmann::json speed{{"reference_kernel_s", validation::reference_kernel_seconds(comm)}};
    if (o.speed_step) {
      ExperimentConfig config = load_with(o, {});
      config.train.workers = comm.size();
      const auto train = config_dataset(config, models::Split::train);
      speed["step_s"] = validation::step_reading_seconds(numerics_spec(config, train), train, comm);
      speed["step_model"] = config.train.model;
      speed["step_batch"] = config.train.batch_per_worker;
    }
    if (root) {
      results::write_file_atomically(o.speed_check, speed.dump() + "\n");
    }
    return;
  }
  const ExperimentConfig config = load_with(o, {});
  // Staged from the start: a calibration that fails (or a folder that cannot take it) leaves the previous
  // one whole, and a bad --out is refused before minutes of measurements.
  std::optional<results::ResultsDir> out;
  if (root && o.unfitted.empty()) {
    out.emplace(calibration_out(o, comm.size()));
  }
  const auto train = config_dataset(config, models::Split::train);
  validation::Calibration c;
  c.workers = comm.size();
  const validation::Placement placement = validation::worker_placement(comm);
  c.workers_per_core = placement.workers_per_core;
  c.cores = placement.round_robin_cores;
  c.host = host_name();
  c.device = o.device.empty() ? "cpu-worker" : o.device;
  // Every measurement is bracketed by readings of the reference kernel (SpeedWatch); where the first readings
  // timed a slow spell (the machine stays faster than they read), everything is measured again from the
  // start, at most --retries times.
  const auto measure_all = [&] {
    validation::SpeedWatch watch(
        [&] { return validation::Speed{.kernel_s = validation::reference_kernel_seconds(comm)}; },
        [&](const std::string& line) {
          if (root && !o.quiet) {
            fmt::print(stderr, "{}\n", line);
          }
        },
        {.command = "calibrate",
         .tolerance = o.drift_tolerance,
         .retries = o.retries,
         .settle_wait_s = o.settle_wait});
    watch.start();
    c.models.resize(o.models.size());
    for (std::size_t i = 0; i < o.models.size(); ++i) {
      const std::string& model = o.models[i];
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
      watch.phase(fmt::format("the {} step", model), [&] {
#if defined(DBENCH_RUNTIME_HAVE_TORCH)
        if (!o.device.empty()) {
          c.models[i] = validation::time_torch_compute(specs_per_batch(model_config, train, o.batches), train,
                                                       o.repeats, o.device, comm, tensors);
          return;
        }
#endif
        c.models[i] =
            validation::time_compute(numerics_spec(model_config, train), train, o.batches, o.repeats, comm);
      });
    }
    if (root && !o.quiet) {
      fmt::print(stderr, "calibrate: {}all-reduce over {} sizes and the models' parameter sizes\n",
                 comm.size() >= 2 ? "point-to-point, exchange and " : "", o.sizes.size());
    }
    // The links are also timed at each model's parameter size, the messages its training sends, which its
    // platform file then takes as measured (validation::anchored_fit).
    std::vector<double> sizes = o.sizes;
    for (const auto& m : c.models) {
      if (m.parameter_bytes > 0.0 &&
          std::find(sizes.begin(), sizes.end(), m.parameter_bytes) == sizes.end()) {
        sizes.push_back(m.parameter_bytes);
      }
    }
    std::sort(sizes.begin(), sizes.end());
    watch.phase("the links", [&] {
      std::unique_ptr<validation::LinkBuffers> buffers = std::make_unique<validation::HostLinkBuffers>();
#if defined(DBENCH_RUNTIME_HAVE_TORCH)
      if (!o.device.empty()) {
        buffers = std::make_unique<validation::DeviceLinkBuffers>(o.device);
      }
#endif
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
    });
    // Launched by calibrate --local, the workers stop here: the launcher times dbench train's loops as fresh
    // runs, as validate runs them. Under mpirun alone, the workers time them in their own processes.
    if (o.device.empty() && o.unfitted.empty()) {
      const auto test = config_dataset(config, models::Split::test);
      for (auto& m : c.models) {
        if (root && !o.quiet) {
          fmt::print(stderr, "calibrate: {} in dbench train's loop, on a ring and with the all-reduce\n",
                     m.model);
        }
        time_training_loops(
            m.model, comm.size(), c.cores > 0 && c.workers_per_core > 1, o.loop_runs,
            [&](const std::vector<std::string>& overrides) {
              return training_loop_parts(load_with(o, overrides), train, test, comm);
            },
            m,
            [&](int round, double batch, const std::function<void()>& measure) {
              watch.phase(loops_part_name(m.model, round, o.loop_runs, batch), measure);
            });
      }
    }
    c.reference_kernel_s = watch.settled();
    c.speed_readings = watch.readings();
  };
  for (int restart = 1;; ++restart) {
    try {
      measure_all();
      break;
    } catch (const validation::SlowStart&) {
      if (restart > o.retries) {
        throw;
      }
      if (root && !o.quiet) {
        fmt::print(stderr, "calibrate: measuring everything again from the start ({} of {})\n", restart,
                   o.retries);
      }
    }
  }
  c.drift_tolerance = o.drift_tolerance;
  if (!root) {
    return;
  }
  if (!o.unfitted.empty()) {
    results::write_file_atomically(o.unfitted, validation::to_json(c).dump() + "\n");
    return;
  }
  fit_and_write(o, c, *out);
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
                           "--repeats", std::to_string(o.repeats), "--loop-runs", std::to_string(o.loop_runs),
                           "--drift-tolerance", fmt::format("{}", o.drift_tolerance), "--retries",
                           std::to_string(o.retries), "--settle-wait", fmt::format("{}", o.settle_wait)});
  if (!o.out.empty()) {
    args.insert(args.end(), {"--out", o.out});
  }
  if (!o.speed_check.empty()) {
    args.insert(args.end(), {"--speed-check", o.speed_check});
  }
  if (o.speed_step) {
    args.emplace_back("--speed-step");
  }
  if (!o.device.empty()) {
    args.insert(args.end(), {"--device", o.device});
  }
  if (!o.unfitted.empty()) {
    args.insert(args.end(), {"--unfitted", o.unfitted});
  }
  if (o.quiet) {
    args.emplace_back("--quiet");
  }
  return args;
}

/// One fresh run of `dbench train --local N` with `overrides`, in `run` (removed after): its seconds per
/// iteration and their parts, as validate measures its runs (validation::mean_parts over trace_worker.csv,
/// warm-up and evaluations left out).
validation::PartTimes fresh_loop_parts(const CalibrateOptions& o, const std::vector<std::string>& overrides,
                                       const std::filesystem::path& run) {
  std::vector<std::string> command{runtime::current_executable(), "train"};
  if (!o.config.empty()) {
    command.push_back(o.config);
  }
  for (const auto* sets : {&o.overrides, &overrides}) {
    for (const auto& s : *sets) {
      command.insert(command.end(), {"--set", s});
    }
  }
  command.insert(command.end(), {"--local", std::to_string(o.local), "--out", run.string(), "--quiet"});
  // Its summary lines are not calibrate's output; its errors still show.
  run_child(command, "calibrate", fmt::format("dbench train ({})", fmt::join(overrides, ", ")),
            runtime::Output::stdout_discarded);
  const validation::PartTimes parts = run_parts(run, kWarmup);
  std::filesystem::remove_all(run);
  return parts;
}

/// calibrate --local N on CPU workers: the workers time the kernels and the links and hand them over
/// unfitted; this process then times dbench train's loops as fresh runs of their own, as validate runs the
/// cases it compares (a loop timed in a warm worker process differed from fresh runs by up to 8 %), its
/// reference kernel read around them against the workers' reading, and fits and writes the calibration.
void calibrate_with_fresh_loops(const CalibrateOptions& o) {
  SignalCleanup cleanup;  // a stop signal removes the staged calibration and the runs' scratch folder
  std::optional<results::ResultsDir> out;
  try {
    out.emplace(calibration_path(o, o.local), &cleanup);
  } catch (const results::ResultsDirError& e) {
    throw std::invalid_argument(fmt::format("--out: {}", e.what()));
  }
  const results::StagingDir scratch(out->target(), &cleanup);
  const std::filesystem::path unfitted = scratch.path() / "unfitted.json";
  CalibrateOptions workers = o;
  workers.unfitted = unfitted.string();
  validation::Calibration c;
  const auto measure_on_workers = [&] {
    run_child(
        runtime::local_launch_command(o.local, runtime::current_executable(), worker_args(workers), true),
        "calibrate", fmt::format("{} local workers", o.local));
    c = validation::calibration_from_json(
        nlohmann::json::parse(results::read_results_file(unfitted, unfitted)));
  };
  const std::filesystem::path speed_file = scratch.path() / "speed.json";
  const int batch = load_with(o, {}).train.batch_per_worker;
  int runs = 0;
  const auto time_loops = [&] {
    const bool exponential = c.cores > 0 && c.workers_per_core > 1;
    for (auto& m : c.models) {
      // The readings around a model's loops time its own step at the config's batch too: the machine's speed
      // for the kernels whose compute the loops fit, which validate's readings are compared with. The step
      // decides nothing here (its tolerance is not applied): the loops' medians over rounds spread across the
      // phase stand for the machine over the phase, as the readings' median then does; the reference kernel
      // still re-measures or refuses a phase under another process's load.
      const std::vector<std::string> check =
          runtime::local_launch_command(o.local, runtime::current_executable(),
                                        speed_check_args({.config = o.config,
                                                          .overrides = o.overrides,
                                                          .model = m.model,
                                                          .batch = batch,
                                                          .file = speed_file}),
                                        true);
      validation::SpeedWatch watch(
          [&] { return fresh_speed_reading(check, speed_file, "calibrate"); },
          [&](const std::string& line) {
            if (!o.quiet) {
              fmt::print(stderr, "{}\n", line);
            }
          },
          {.command = "calibrate",
           .tolerance = o.drift_tolerance,
           .step_tolerance = std::numeric_limits<double>::infinity(),
           .retries = o.retries,
           .settle_wait_s = o.settle_wait,
           .baseline_when = "its workers' reading a moment before, on fresh workers",
           .baseline_remedy = "nothing is written; calibrate again when the machine is steady"});
      watch.start(c.reference_kernel_s);
      if (!o.quiet) {
        fmt::print(stderr,
                   "calibrate: {} in dbench train's loop, {} fresh runs of {} iterations or more: on a ring, "
                   "{}the one-peer exponential graph and with the all-reduce\n",
                   m.model, o.loop_runs * (exponential ? 4 : 3) * m.batches.size(),
                   validation::kLoopIterations, exponential ? "the directed exponential graph, " : "");
      }
      time_training_loops(
          m.model, o.local, exponential, o.loop_runs,
          [&](const std::vector<std::string>& overrides) {
            return fresh_loop_parts(o, overrides, scratch.path() / fmt::format("run-{}", ++runs));
          },
          m,
          [&](int round, double part_batch, const std::function<void()>& measure) {
            watch.phase(loops_part_name(m.model, round, o.loop_runs, part_batch), measure);
          });
      m.speed_step_s = watch.settled_step();
      m.speed_step_batch = batch;
      // The launcher's readings (fresh processes, as validate takes its own) after the workers'.
      for (const auto& r : watch.readings()) {
        c.speed_readings.push_back(
            {fmt::format("launcher, {}: {}", m.model, r.after), r.seconds, r.step_seconds});
      }
    }
  };
  // Where the machine differs from what the workers read and stays so (before the loops or through a part's
  // re-runs), the workers' readings timed a spell, or the machine has moved since: the workers measure
  // everything again and the loops run again against them, at most --retries times, rather than write
  // loops and steps taken at two speeds.
  measure_on_workers();
  try {
    validation::measure_with_recalibration(
        o.retries, [] {}, time_loops,
        [&](int n, validation::DriftSeen, const std::string& finding) {
          if (!o.quiet) {
            fmt::print(
                stderr,
                "calibrate: {}, and stayed so; the workers measure the steps and the links again, then "
                "the loops run again ({} of {})\n",
                finding, n, o.retries);
          }
          measure_on_workers();
        });
  } catch (const validation::DriftError& e) {
    throw runtime::Refused(e.what());
  }
  fit_and_write(o, c, *out);
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

/// calibrate --refit: the measurements of a calibration folder fitted again, as a calibration that timed
/// them now would fit them (with this config and --set), written back into it or into --out. Nothing is
/// timed: a fit that changed since the folder was written, or a config's other batch, applies to what was
/// measured then.
void refit_calibration(const CalibrateOptions& o) {
  load_with(o, {});
  const std::filesystem::path dir = o.refit;
  const std::filesystem::path file = dir / "calibration.json";
  validation::Calibration c;
  try {
    c = validation::calibration_from_json(nlohmann::json::parse(results::read_results_file(file, file)));
  } catch (const std::exception& e) {
    throw std::invalid_argument(fmt::format("--refit: {} is not a calibration: {}", dir.string(), e.what()));
  }
  if (c.models.empty()) {
    throw std::invalid_argument(fmt::format("--refit: {} holds no model's measurements", file.string()));
  }
  results::ResultsDir out = [&] {
    try {
      return results::ResultsDir(o.out.empty() ? dir : std::filesystem::path(o.out));
    } catch (const results::ResultsDirError& e) {
      throw std::invalid_argument(fmt::format("{}: {}", o.out.empty() ? "--refit" : "--out", e.what()));
    }
  }();
  fit_and_write(o, c, out);
}

void run_calibrate(const CalibrateOptions& o) {
  if (!o.refit.empty()) {
    refit_calibration(o);
    return;
  }
  check_device(o.device);
  require_two_distinct("--batches", o.batches, "batch sizes");
  require_two_distinct("--sizes", o.sizes, "message sizes");
  // Each model's config is loaded here as the workers will load it, so that a misspelt --models entry or a
  // bad config is refused before any worker starts, not by every worker after the launch.
  // A speed check reads no config unless it times the model's step too. The config itself first, so that
  // its own errors are not blamed on a model.
  if (o.speed_check.empty() || o.speed_step) {
    load_with(o, {});
  }
  if (o.speed_step && !o.device.empty()) {
    throw std::invalid_argument(
        "--speed-step: the step it reads is the CPU workers'; a calibration with --device reads the "
        "reference "
        "kernel alone");
  }
  const std::vector<std::string> models = o.speed_check.empty() ? o.models : std::vector<std::string>{};
  refuse_repeated(models, "--models", "each model is calibrated once, into one file");
  for (const std::string& model : models) {
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
      if (o.speed_check.empty()) {
        results::check_results_target(calibration_path(o, o.local));
      }
    } catch (const results::ResultsDirError& e) {
      throw std::invalid_argument(fmt::format("--out: {}", e.what()));
    }
    if (o.speed_check.empty() && o.device.empty()) {
      calibrate_with_fresh_loops(o);
      return;
    }
    run_child(runtime::local_launch_command(o.local, runtime::current_executable(), worker_args(o), true),
              "calibrate", fmt::format("{} local workers", o.local));
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
    } catch (const validation::DriftError& e) {
      // Every worker read the same drift and stops: worker 0 says so, once.
      throw runtime::Refused(env.world_rank() == 0 ? e.what() : "");
    } catch (const validation::LinkTimingRefused& e) {
      // Every worker has the same timings (the slowest worker's): worker 0 says so, once.
      throw runtime::Refused(env.world_rank() == 0 ? fmt::format("calibrate: {}", e.what()) : "");
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
    try {
      calibrate_on(single, 0, o);
    } catch (const validation::DriftError& e) {
      throw runtime::Refused(e.what());
    } catch (const validation::LinkTimingRefused& e) {
      throw runtime::Refused(fmt::format("calibrate: {}", e.what()));
    }
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
  cmd->add_option("--loop-runs", options->loop_runs,
                  "Runs of each dbench train loop at each batch on CPU workers; each part's median over them "
                  "is fitted")
      ->check(number_in(1, 99))
      ->capture_default_str();
  cmd->add_option("--drift-tolerance", options->drift_tolerance,
                  "Largest change of the reference kernel's time, as a fraction, that counts as the same "
                  "machine; a measurement the machine drifted further during is taken again")
      ->check(number_in(0.01, 10.0))
      ->capture_default_str();
  cmd->add_option("--retries", options->retries,
                  "Re-measurements of a measurement the machine's speed drifted during, before refusing")
      ->check(number_in(0, 10))
      ->capture_default_str();
  cmd->add_option("--settle-wait", options->settle_wait,
                  "Most seconds to wait, where the machine's speed drifted, for it to come back within the "
                  "tolerance before measuring again (a shared machine's slow spells pass); 0: at once")
      ->check(number_in(0.0, 3600.0))
      ->capture_default_str();
  cmd->add_option("--speed-check", options->speed_check,
                  "Only time the reference kernel on the workers and write its seconds per call to this "
                  "JSON file (what validate reads around its runs)")
      ->check(non_empty_path());
  cmd->add_flag("--speed-step", options->speed_step,
                "With --speed-check: also time the config's model's local training step at its batch per "
                "worker, and write its seconds per step there")
      ->needs("--speed-check");
  cmd->add_option(
         "--unfitted", options->unfitted,
         "Workers of calibrate --local: write the measurements unfitted to this file and leave dbench "
         "train's loops to the launcher")
      ->group("");
  auto* refit =
      cmd->add_option("--refit", options->refit,
                      "Fit the measurements of this calibration folder again and rewrite its "
                      "calibration.json and <model>.toml (or write them to --out); nothing is timed")
          ->check(non_empty_path());
  for (const char* measuring :
       {"--local", "--device", "--models", "--batches", "--sizes", "--repeats", "--loop-runs",
        "--drift-tolerance", "--retries", "--settle-wait", "--speed-check", "--speed-step", "--unfitted"}) {
    refit->excludes(measuring);
  }
  cmd->add_flag("--quiet,-q", options->quiet, "No progress output");
  cmd->callback([options] { run_calibrate(*options); });
}

}  // namespace dbench::experiments
