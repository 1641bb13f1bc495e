// `dbench graphs`: the standard communication graphs side by side at one scale, the first look a user takes
// before choosing a graph for a sweep.
#include <fmt/core.h>
#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "experiments/commands.hpp"
#include "experiments/signal_cleanup.hpp"
#include "results/graphs_csv.hpp"
#include "results/results_dir.hpp"
#include "topology/generators.hpp"
#include "topology/graph_analysis.hpp"

namespace dbench::experiments {
namespace {

namespace topo = dbench::topology;

struct GraphsOptions {
  int nodes = 1008;
  std::uint64_t seed = 1;
  std::string out;
};

/// The graphs a user compares at n nodes: every family that exists at n, random ones with the exponential
/// graph's degree so that they cost the same number of messages per round.
std::vector<topo::GraphSpec> standard_specs(int n, std::uint64_t seed) {
  const int tau = static_cast<int>(std::ceil(std::log2(static_cast<double>(n))));
  std::vector<topo::GraphSpec> specs;
  auto add = [&](topo::GraphKind kind) {
    topo::GraphSpec spec;
    spec.kind = kind;
    spec.nodes = n;
    spec.seed = seed;
    specs.push_back(spec);
    return &specs.back();
  };
  add(topo::GraphKind::ring);
  add(topo::GraphKind::torus);
  if ((n & (n - 1)) == 0) {
    add(topo::GraphKind::hypercube);
  }
  add(topo::GraphKind::exponential);
  add(topo::GraphKind::one_peer_exponential);
  add(topo::GraphKind::base)->degree = 1;
  if (n > 3) {
    add(topo::GraphKind::base)->degree = 3;  // k peers per round need k < n
  }
  if (tau < n - 1 && (n * tau) % 2 == 0) {
    add(topo::GraphKind::random_regular)->degree = tau;
  }
  // Expected degree 2 ln n: above the connectivity threshold ln n / n, so draws are rarely rejected.
  add(topo::GraphKind::erdos_renyi)->probability = std::min(1.0, 2.0 * std::log(n) / n);
  add(topo::GraphKind::star);
  add(topo::GraphKind::complete);
  return specs;
}

// One standard graph; a family that cannot exist at n was left out by standard_specs, so an error here is a
// bug of ours, reported under the only option that shapes it.
topo::GraphSequence build(const topo::GraphSpec& spec) {
  try {
    return topo::make_graph(spec);
  } catch (const topo::GraphError& e) {
    throw std::logic_error(fmt::format("--nodes {}: {} could not be built: {}", spec.nodes,
                                       topo::graph_kind_name(spec.kind), e.reason()));
  }
}

std::string label(const topo::GraphSpec& spec) {
  std::string name(topo::graph_kind_name(spec.kind));
  if (spec.kind == topo::GraphKind::base || spec.kind == topo::GraphKind::random_regular) {
    name += fmt::format(" (k={})", spec.degree);
  }
  return name;
}

nlohmann::json to_json(const std::string& name, const topo::GraphStats& s) {
  nlohmann::json j;
  j["kind"] = name;
  j["nodes"] = s.nodes;
  j["period"] = s.period;
  j["edges"] = s.directed_edges;
  j["undirected_edges"] = s.undirected_edges;
  j["max_degree"] = s.out_degree.max;
  j["mean_degree"] = s.out_degree.mean;
  j["diameter"] = s.diameter ? nlohmann::json(*s.diameter) : nlohmann::json(nullptr);
  j["spectral_gap"] = s.spectral_gap;
  j["exact_consensus"] = s.exact_consensus;
  j["doubly_stochastic"] = s.checks.row_stochastic && s.checks.column_stochastic;
  return j;
}

void run_graphs(const GraphsOptions& options) {
  if (options.nodes < 2) {
    throw std::invalid_argument(
        fmt::format("--nodes: must be at least 2 (a graph of one node has no edges), got {}", options.nodes));
  }
  if (options.nodes > topo::kMaxGraphNodes) {
    throw std::invalid_argument(
        fmt::format("--nodes: must be at most {} (the largest graph DBench builds), got {}",
                    topo::kMaxGraphNodes, options.nodes));
  }
  const auto specs = standard_specs(options.nodes, options.seed);
  fmt::print("{:<26} {:>6} {:>10} {:>8} {:>9} {:>13} {:>9}\n", "graph", "period", "messages", "max deg",
             "diameter", "spectral gap", "exact avg");
  std::vector<results::GraphsRow> rows;
  std::string md = fmt::format(
      "# Communication graphs at {} nodes\n\nMessages are per round (directed edges); a time-varying "
      "family's "
      "spectral gap is the per-iteration effective gap 1 - c^(1/period) of its period's contraction c.\n\n"
      "| graph | period | messages per round | max degree | diameter | spectral gap | exact average |\n"
      "|---|---:|---:|---:|---:|---:|---|\n",
      options.nodes);
  nlohmann::json all = nlohmann::json::array();
  for (const auto& spec : specs) {
    const std::string name = label(spec);
    const auto stats = topo::analyze(build(spec));
    const std::string diameter = stats.diameter ? std::to_string(*stats.diameter) : "inf";
    const char* exact = stats.period > 1 ? (stats.exact_consensus ? "yes" : "no") : "-";
    fmt::print("{:<26} {:>6} {:>10} {:>8} {:>9} {:>13.6g} {:>9}\n", name, stats.period, stats.directed_edges,
               stats.out_degree.max, diameter, stats.spectral_gap, exact);
    std::fflush(stdout);
    rows.push_back({name, stats.nodes, stats.period, stats.directed_edges, stats.undirected_edges,
                    stats.out_degree.max,
                    stats.diameter ? std::optional<std::int64_t>(*stats.diameter) : std::nullopt,
                    stats.spectral_gap, stats.exact_consensus});
    md += fmt::format("| {} | {} | {} | {} | {} | {:.6g} | {} |\n", name, stats.period, stats.directed_edges,
                      stats.out_degree.max, diameter, stats.spectral_gap, exact);
    all.push_back(to_json(name, stats));
  }
  if (!options.out.empty()) {
    SignalCleanup cleanup;
    results::ResultsDir dir(options.out, &cleanup);
    dir.write_text("graphs.csv", results::graphs_csv(rows));
    dir.write_text("graphs.md", md);
    dir.write_text("graphs.json", all.dump(2) + "\n");
    dir.commit();
    fmt::print("wrote {}/graphs.md, graphs.csv, graphs.json\n", dir.target().string());
  }
}

}  // namespace

void add_graphs_command(CLI::App& app) {
  auto options = std::make_shared<GraphsOptions>();
  auto* cmd = app.add_subcommand("graphs", "Statistics of the standard communication graphs at one scale");
  cmd->add_option("--nodes,-n", options->nodes, "Number of nodes (GPUs)")->capture_default_str();
  cmd->add_option("--seed", options->seed, "Seed of the random graphs")->capture_default_str();
  cmd->add_option("--out", options->out, "Results directory for graphs.md, graphs.csv and graphs.json")
      ->check(non_empty_path());
  cmd->callback([options] { run_graphs(*options); });
}

}  // namespace dbench::experiments
