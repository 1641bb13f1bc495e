// Scaling study: simulated training throughput (samples/s, ResNet-50 at batch 32 per GPU) from one node to
// 1008 GPUs, all-reduce against each gossip graph, on each preset; printed with the scaling efficiency (the
// ratio to perfect linear scaling from one GPU) and written as scaling.csv and, where gnuplot is installed,
// scaling.svg.
//
//   bench_scaling [--out DIR] [--max-gpus N]
#include <fmt/core.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "models/model_profile.hpp"
#include "sim/platform.hpp"
#include "sim/timing.hpp"
#include "topology/generators.hpp"
#include "topology/graph_policy.hpp"

namespace {

namespace fs = std::filesystem;
namespace sim = dbench::sim;
namespace topology = dbench::topology;

struct Series {
  std::string label;
  std::string graph;  // empty: all-reduce
  sim::AllReduceAlgorithm allreduce = sim::AllReduceAlgorithm::ring;
};

// 8, 16, 32, ... up to max, then max itself, in whole nodes (Summit's 6 GPUs per node start at 12).
std::vector<int> gpu_counts(int gpus_per_node, int max_gpus) {
  std::vector<int> counts;
  for (int n = 8; n < max_gpus / gpus_per_node * gpus_per_node; n *= 2) {
    const int whole = (n + gpus_per_node - 1) / gpus_per_node * gpus_per_node;
    if (counts.empty() || whole > counts.back()) {
      counts.push_back(whole);
    }
  }
  const int largest = max_gpus / gpus_per_node * gpus_per_node;
  if (counts.empty() || largest > counts.back()) {
    counts.push_back(largest);
  }
  return counts;
}

// One gnuplot panel per preset: samples/s against GPUs on log-log axes, one line per communication.
std::string gnuplot_script(const fs::path& csv, const fs::path& svg, const std::vector<std::string>& presets,
                           const std::vector<Series>& series) {
  std::string script = fmt::format(
      "set terminal svg size 1500,480 dynamic font 'Helvetica,12'\n"
      "set output '{}'\n"
      "set datafile separator ','\n"
      "set logscale xy 2\n"
      "set key bottom right font ',10'\n"
      "set format y '%.0s%c'\n"
      "set grid\n"
      "set xlabel 'GPUs'\n"
      "set ylabel 'samples/s (ResNet-50, batch 32 per GPU)'\n"
      "set multiplot layout 1,{}\n",
      svg.string(), presets.size());
  for (const auto& preset : presets) {
    script += fmt::format("set title '{}'\nplot ", preset);
    for (std::size_t s = 0; s < series.size(); ++s) {
      script += fmt::format(
          "'{}' using (strcol(1) eq '{}' && strcol(2) eq '{}' ? $3 : 1/0):4 with linespoints title '{}'{}",
          csv.string(), preset, series[s].label, series[s].label, s + 1 < series.size() ? ", \\\n  " : "\n");
    }
  }
  return script + "unset multiplot\n";
}

}  // namespace

int main(int argc, char** argv) {
  fs::path out = "results/scaling";
  int max_gpus = 1008;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--out" && i + 1 < argc) {
      out = argv[++i];
    } else if (a == "--max-gpus" && i + 1 < argc) {
      max_gpus = std::atoi(argv[++i]);
    } else {
      fmt::print(stderr, "usage: bench_scaling [--out DIR] [--max-gpus N]\n");
      return 2;
    }
  }
  const auto profile = dbench::models::model_profile(dbench::models::timing_spec("resnet50"));
  const std::vector<std::string> presets = {"frontier", "summit", "dgx-h100"};
  const std::vector<Series> series = {
      {"ring all-reduce", "", sim::AllReduceAlgorithm::ring},
      {"hierarchical all-reduce", "", sim::AllReduceAlgorithm::hierarchical},
      {"exponential", "exponential"},
      {"one-peer exponential", "one-peer-exponential"},
      {"torus", "torus"},
      {"ring", "ring"},
  };

  fs::create_directories(out);
  const fs::path csv = out / "scaling.csv";
  std::ofstream table(csv);
  table << "preset,communication,gpus,samples_per_second,seconds_per_iteration,scaling_efficiency\n";
  fmt::print("{:<10} {:<24} {:>6} {:>14} {:>12} {:>11}\n", "preset", "communication", "GPUs", "samples/s",
             "s/iter", "efficiency");
  for (const auto& preset : presets) {
    const sim::PlatformSpec platform = sim::platform_preset(preset);
    for (const auto& s : series) {
      for (const int n : gpu_counts(platform.gpus_per_node, max_gpus)) {
        std::unique_ptr<topology::GraphPolicy> policy;
        int period = 1;
        if (s.graph.empty()) {
          policy = std::make_unique<topology::AllReducePolicy>();
        } else {
          topology::GraphSpec spec;
          spec.kind = topology::parse_graph_kind(s.graph);
          spec.nodes = n;
          auto sequence = std::make_unique<topology::SequencePolicy>(topology::make_graph(spec));
          period = sequence->sequence().period();
          policy = std::move(sequence);
        }
        // One period of the schedule is every distinct pattern; its mean is the long-run mean.
        std::vector<topology::ScheduleStep> schedule;
        for (int t = 0; t < period; ++t) {
          schedule.push_back(policy->graph_for(t, nullptr));
        }
        sim::TimingSpec spec;
        spec.platform = platform;
        spec.gpus = n;
        spec.profile = profile;
        spec.batch_per_gpu = 32;
        spec.options.allreduce = s.allreduce;
        const sim::TimingResult r = sim::time_schedule(spec, schedule);
        table << fmt::format("{},{},{},{},{},{}\n", preset, s.label, n, r.samples_per_second,
                             r.seconds_per_iteration, r.scaling_efficiency);
        fmt::print("{:<10} {:<24} {:>6} {:>14.0f} {:>12.6f} {:>11.3f}\n", preset, s.label, n,
                   r.samples_per_second, r.seconds_per_iteration, r.scaling_efficiency);
      }
    }
  }
  table.close();
  fmt::print("\nefficiency: samples/s over GPUs x one GPU's samples/s (1 = linear scaling)\n{}\n",
             csv.string());

  const fs::path svg = out / "scaling.svg";
  const fs::path script_path = out / "scaling.gp";
  std::ofstream(script_path) << gnuplot_script(csv, svg, presets, series);
  if (std::system("command -v gnuplot > /dev/null 2>&1") != 0) {
    fmt::print("gnuplot not found: {} holds the plot script\n", script_path.string());
    return 0;
  }
  if (std::system(fmt::format("gnuplot '{}'", script_path.string()).c_str()) != 0) {
    fmt::print(stderr, "bench_scaling: gnuplot failed on {}\n", script_path.string());
    return 1;
  }
  fmt::print("{}\n", svg.string());
  return 0;
}
