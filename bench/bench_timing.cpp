// `dbench simulate --timing-only` at scale (default: 1008 GPUs, ResNet-50 at batch 32, 1000 iterations) for
// each communication, its wall time and peak memory measured on the command itself, against the reference
// measured in the same run: full fidelity (every message, one actor per GPU) for one period of the schedule.
//
//   bench_timing [--preset P] [--gpus N] [--iterations I] [--jitter CV] [--no-full]
//   bench_timing --scaling [--preset P] [--iterations I] [--max-gpus N] [--stop-after S]
//
// Targets: <= 10 s wall and 1 GB per command at up to 4,096 GPUs, <= 60 s beyond; the fast path within 1 % of
// full fidelity (without jitter; with it the GPUs drift apart, see the README's per-GPU clocks).
//
// --scaling: auto all-reduce and the one-peer exponential graph at 16,384 GPUs and each doubling up to
// --max-gpus (default 131,072; dgx-h100 unless --preset), each against the size before it: at most 2.3 times
// the CPU time (the wall time of an otherwise idle machine) per doubling, and the largest within 10 minutes
// and 8 GB. A size whose slowest command took over --stop-after seconds (default 300) is the last one run.
#include <fcntl.h>
#include <fmt/core.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "models/model_profile.hpp"
#include "models/model_zoo.hpp"
#include "models/profile_file.hpp"
#include "sim/platform.hpp"
#include "sim/timing.hpp"
#include "topology/generators.hpp"
#include "topology/graph_policy.hpp"

namespace {

namespace fs = std::filesystem;
namespace sim = dbench::sim;
namespace topology = dbench::topology;

struct Options {
  std::string preset;              // empty: frontier, or dgx-h100 for --scaling
  std::string model = "resnet50";  // platform.timing_model: a built-in or zoo name, or a profile file
  int gpus = 1008;
  int iterations = 1000;
  bool full = true;
  double jitter = 0.0;  // platform.compute_jitter_cv of every case
  bool scaling = false;
  int max_gpus = 131072;
  double stop_after_s = 300.0;
};

struct Case {
  std::string label;
  std::vector<std::string> sets;  // --set overrides of dbench simulate
  std::string kind;               // "allreduce" or a graph kind
  sim::AllReduceAlgorithm allreduce = sim::AllReduceAlgorithm::ring;
};

struct Measured {
  int status = -1;
  double wall_s = 0.0;
  double cpu_s = 0.0;  // user + system: what the wall time would be on an otherwise idle machine
  double peak_MB = 0.0;
  double seconds_per_iteration = 0.0;
};

// Runs dbench as a child process; wait4 gives its own peak resident memory.
Measured run_dbench(const std::vector<std::string>& args, const fs::path& out) {
  std::vector<std::string> argv_text = {DBENCH_EXE, "simulate", "--timing-only",
                                        "--quiet",  "--out",    out.string()};
  argv_text.insert(argv_text.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_text) {
    argv.push_back(a.data());
  }
  argv.push_back(nullptr);
  Measured m;
  const auto start = std::chrono::steady_clock::now();
  const pid_t pid = fork();
  if (pid == 0) {
    // The command's own report is read from summary.json; its output would interleave with the table.
    const int null = open("/dev/null", O_WRONLY);
    dup2(null, STDOUT_FILENO);
    dup2(null, STDERR_FILENO);
    execv(argv[0], argv.data());
    _exit(127);
  }
  int status = 0;
  rusage usage{};
  wait4(pid, &status, 0, &usage);
  m.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  m.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  m.peak_MB = static_cast<double>(usage.ru_maxrss) / 1024.0;  // ru_maxrss is in KiB on Linux
  const auto seconds = [](const timeval& t) {
    return static_cast<double>(t.tv_sec) + 1e-6 * static_cast<double>(t.tv_usec);
  };
  m.cpu_s = seconds(usage.ru_utime) + seconds(usage.ru_stime);
  if (m.status == 0) {
    std::ifstream in(out / "summary.json");
    std::stringstream text;
    text << in.rdbuf();
    m.seconds_per_iteration = nlohmann::json::parse(text.str())["seconds_per_iteration"].get<double>();
  }
  return m;
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        fmt::print(stderr, "bench_timing: {} needs a value\n", a);
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--preset") {
      o.preset = next();
    } else if (a == "--model") {
      o.model = next();
    } else if (a == "--gpus") {
      o.gpus = std::stoi(next());
    } else if (a == "--iterations") {
      o.iterations = std::stoi(next());
    } else if (a == "--jitter") {
      o.jitter = std::stod(next());
    } else if (a == "--no-full") {
      o.full = false;
    } else if (a == "--scaling") {
      o.scaling = true;
    } else if (a == "--max-gpus") {
      o.max_gpus = std::stoi(next());
    } else if (a == "--stop-after") {
      o.stop_after_s = std::stod(next());
    } else {
      fmt::print(
          stderr,
          "usage: bench_timing [--preset P] [--model NAME|PROFILE] [--gpus N] [--iterations I] [--jitter CV] "
          "[--no-full]\n"
          "       bench_timing --scaling [--preset P] [--model NAME|PROFILE] [--iterations I] [--max-gpus N] "
          "[--stop-after S]\n");
      std::exit(2);
    }
  }
  if (o.preset.empty()) {
    o.preset = o.scaling ? "dgx-h100" : "frontier";
  }
  return o;
}

// The --set overrides every case shares: size, length, platform and timed model.
std::vector<std::string> common_sets(const Options& o, int gpus) {
  std::vector<std::string> args;
  for (const auto& s :
       {fmt::format("train.workers={}", gpus), fmt::format("train.iterations={}", o.iterations),
        fmt::format("platform.preset={}", o.preset), fmt::format("platform.timing_model={}", o.model),
        // The full-fidelity reference times the MLP profile without hidden layers; so does dbench simulate.
        std::string("train.mlp_hidden=[]"), fmt::format("platform.compute_jitter_cv={}", o.jitter)}) {
    args.push_back("--set");
    args.push_back(s);
  }
  return args;
}

// Wall time and peak memory from 16,384 GPUs up, each size against the one before it (half as many GPUs).
int scaling(const Options& o) {
  constexpr double kGrowthLimit = 2.3;
  constexpr double kLargestWallLimit_s = 600.0;
  constexpr double kLargestPeakLimit_MB = 8192.0;
  const std::vector<std::pair<std::string, std::vector<std::string>>> cases = {
      {"auto all-reduce", {"algorithm.kind=centralized", "platform.allreduce=auto"}},
      {"one-peer exponential", {"algorithm.graph=one-peer-exponential"}},
  };
  fmt::print("dbench simulate --timing-only from 16384 GPUs up on {}, {} at batch 32, {} iterations\n",
             o.preset, o.model, o.iterations);
  fmt::print(
      "reference: the same command at half as many GPUs; target <= {} x the time per doubling (cpu s: the "
      "wall time on an otherwise idle machine)\n\n",
      kGrowthLimit);
  fmt::print("{:<22} {:>7} {:>8} {:>8} {:>9} {:>10} | {:>11} {:>10} {:>11}\n", "communication", "GPUs",
             "wall s", "cpu s", "peak MB", "s/iter", "wall growth", "cpu growth", "peak growth");
  const fs::path out = fs::temp_directory_path() / fmt::format("dbench-bench-timing-{}", getpid());
  bool ok = true;
  std::vector<Measured> before(cases.size());
  int largest = 0;
  for (int gpus = 16384; gpus <= o.max_gpus && gpus <= (1 << 29); gpus *= 2) {
    double slowest_s = 0.0;
    for (std::size_t c = 0; c < cases.size(); ++c) {
      std::vector<std::string> args;
      for (const auto& s : cases[c].second) {
        args.push_back("--set");
        args.push_back(s);
      }
      const std::vector<std::string> common = common_sets(o, gpus);
      args.insert(args.end(), common.begin(), common.end());
      const Measured m = run_dbench(args, out);
      slowest_s = std::max(slowest_s, m.wall_s);
      if (m.status != 0) {
        fmt::print("{:<22} {:>7} dbench failed with status {}\n", cases[c].first, gpus, m.status);
        ok = false;
        before[c] = Measured{};
        continue;
      }
      std::string wall_growth = "-";
      std::string cpu_growth = "-";
      std::string peak_growth = "-";
      if (before[c].status == 0) {
        const double cpu_ratio = m.cpu_s / before[c].cpu_s;
        ok = ok && cpu_ratio <= kGrowthLimit;
        wall_growth = fmt::format("{:.2f}", m.wall_s / before[c].wall_s);
        cpu_growth = fmt::format("{:.2f}", cpu_ratio);
        peak_growth = fmt::format("{:.2f}", m.peak_MB / before[c].peak_MB);
      }
      fmt::print("{:<22} {:>7} {:>8.2f} {:>8.2f} {:>9.0f} {:>10.6f} | {:>11} {:>10} {:>11}\n", cases[c].first,
                 gpus, m.wall_s, m.cpu_s, m.peak_MB, m.seconds_per_iteration, wall_growth, cpu_growth,
                 peak_growth);
      std::fflush(stdout);
      before[c] = m;
    }
    largest = gpus;
    if (slowest_s > o.stop_after_s && gpus < o.max_gpus) {
      fmt::print("(larger sizes not run: a command at {} GPUs took over {:.0f} s)\n", gpus, o.stop_after_s);
      break;
    }
  }
  fs::remove_all(out);
  if (largest == o.max_gpus) {
    for (const Measured& m : before) {
      ok = ok && m.status == 0 && m.wall_s <= kLargestWallLimit_s && m.peak_MB <= kLargestPeakLimit_MB;
    }
  }
  fmt::print(
      "\nwall s, cpu s (user + system), peak MB: the whole dbench command\n"
      "wall, cpu and peak growth: over the same command at half as many GPUs\n");
  if (!ok) {
    fmt::print("SOME CASES MISS A TARGET\n");
  } else if (largest == o.max_gpus) {
    fmt::print("every doubling within {} x; {} GPUs within {:.0f} s and {:.0f} GB\n", kGrowthLimit, largest,
               kLargestWallLimit_s, kLargestPeakLimit_MB / 1024);
  } else {
    fmt::print("every doubling run within {} x (up to {} GPUs; larger not run)\n", kGrowthLimit, largest);
  }
  return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  if (o.scaling) {
    return scaling(o);
  }
  const std::vector<Case> cases = {
      {"ring all-reduce",
       {"algorithm.kind=centralized", "platform.allreduce=ring"},
       "allreduce",
       sim::AllReduceAlgorithm::ring},
      {"hierarchical all-reduce",
       {"algorithm.kind=centralized", "platform.allreduce=hierarchical"},
       "allreduce",
       sim::AllReduceAlgorithm::hierarchical},
      {"tree all-reduce",
       {"algorithm.kind=centralized", "platform.allreduce=tree"},
       "allreduce",
       sim::AllReduceAlgorithm::tree},
      {"auto all-reduce",
       {"algorithm.kind=centralized", "platform.allreduce=auto"},
       "allreduce",
       sim::AllReduceAlgorithm::automatic},
      {"static exponential", {"algorithm.graph=exponential"}, "exponential"},
      {"one-peer exponential", {"algorithm.graph=one-peer-exponential"}, "one-peer-exponential"},
      {"torus gossip", {"algorithm.graph=torus"}, "torus"},
      {"ring gossip", {"algorithm.graph=ring"}, "ring"},
  };
  const auto profile = dbench::models::names_file(o.model) ? dbench::models::read_profile_file(o.model)
                                                           : dbench::models::timing_profile(o.model);
  const sim::PlatformSpec platform = sim::platform_preset(o.preset);

  fmt::print(
      "dbench simulate --timing-only: {} GPUs on {}, {} at batch 32, {} iterations, compute jitter CV "
      "{}\n",
      o.gpus, o.preset, profile.name, o.iterations, o.jitter);
  const double wall_limit_s = o.gpus > 4096 ? 60.0 : 10.0;
  fmt::print(
      "reference: full fidelity (every message, one actor per GPU) over one period of the schedule\n\n");
  fmt::print("{:<24} {:>7} {:>7} {:>8} {:>10} | {:>11} {:>9} {:>9} | {:>9} {:>10}\n", "communication",
             "wall s", "cpu s", "peak MB", "s/iter", "full s/iter", "full wall", "messages", "fast/full",
             "wall ratio");
  const fs::path out = fs::temp_directory_path() / fmt::format("dbench-bench-timing-{}", getpid());
  bool ok = true;
  for (const auto& c : cases) {
    std::vector<std::string> args;
    for (const auto& s : c.sets) {
      args.push_back("--set");
      args.push_back(s);
    }
    const std::vector<std::string> common = common_sets(o, o.gpus);
    args.insert(args.end(), common.begin(), common.end());
    const Measured fast = run_dbench(args, out);
    if (fast.status != 0) {
      fmt::print("{:<24} dbench failed with status {}\n", c.label, fast.status);
      ok = false;
      continue;
    }
    ok = ok && fast.wall_s <= wall_limit_s && fast.peak_MB <= 1024.0;
    if (!o.full) {
      fmt::print("{:<24} {:>7.2f} {:>7.2f} {:>8.0f} {:>10.6f}\n", c.label, fast.wall_s, fast.cpu_s,
                 fast.peak_MB, fast.seconds_per_iteration);
      continue;
    }
    // The reference: one period of the same schedule, every message simulated.
    std::unique_ptr<topology::GraphPolicy> policy;
    if (c.kind == "allreduce") {
      policy = std::make_unique<topology::AllReducePolicy>();
    } else {
      topology::GraphSpec spec;
      spec.kind = topology::parse_graph_kind(c.kind);
      spec.nodes = o.gpus;
      policy = std::make_unique<topology::SequencePolicy>(topology::make_graph(spec));
    }
    const auto* sequence = dynamic_cast<const topology::SequencePolicy*>(policy.get());
    const int period = sequence == nullptr ? 1 : sequence->sequence().period();
    std::vector<topology::ScheduleStep> schedule;
    for (int t = 0; t < period; ++t) {
      schedule.push_back(policy->graph_for(t, nullptr));
    }
    sim::TimingSpec spec;
    spec.platform = platform;
    spec.gpus = o.gpus;
    spec.profile = profile;
    spec.batch_per_gpu = 32;
    spec.options.fidelity = sim::Fidelity::full;
    spec.options.allreduce = c.allreduce;
    spec.platform.compute_jitter_cv = o.jitter;
    const sim::TimingResult full = sim::time_schedule(spec, schedule);
    spec.options.fidelity = sim::Fidelity::fast;
    const sim::TimingResult same = sim::time_schedule(spec, schedule);
    const double full_wall_per_iteration = full.wall_seconds / period;
    const double agreement = same.seconds_per_iteration / full.seconds_per_iteration;
    ok = ok && (o.jitter > 0.0 || std::abs(agreement - 1.0) <= 0.01);
    fmt::print(
        "{:<24} {:>7.2f} {:>7.2f} {:>8.0f} {:>10.6f} | {:>11.6f} {:>9.2f} {:>9} | {:>9.5f} {:>10.1f}\n",
        c.label, fast.wall_s, fast.cpu_s, fast.peak_MB, fast.seconds_per_iteration,
        full.seconds_per_iteration, full_wall_per_iteration, full.simulated_messages / period, agreement,
        full_wall_per_iteration * o.iterations / fast.wall_s);
  }
  fs::remove_all(out);
  fmt::print(
      "\nwall s, cpu s (user + system), peak MB: the whole dbench command\n"
      "s/iter: simulated seconds per iteration (fast path)\n"
      "full s/iter, full wall: full fidelity's simulated seconds and wall seconds per iteration\n"
      "fast/full: the fast path's simulated time over full fidelity's on the same period\n"
      "wall ratio: full fidelity's wall time for all iterations (extrapolated) over the fast command's\n");
  fmt::print("{}\n", ok ? fmt::format("all within {:.0f} s, 1 GB{}", wall_limit_s,
                                      o.jitter > 0.0 ? "" : " and 1 % of full fidelity")
                        : std::string("SOME CASES MISS A TARGET"));
  return ok ? 0 : 1;
}
