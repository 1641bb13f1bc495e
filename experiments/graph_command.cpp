// `dbench graph`: builds one graph (or time-varying family), prints its statistics, exports DOT / GraphML.
#include <fmt/core.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>
#include <string>

#include "experiments/commands.hpp"
#include "experiments/config_checks.hpp"
#include "results/atomic_file.hpp"
#include "topology/export.hpp"
#include "topology/generators.hpp"
#include "topology/graph_analysis.hpp"

namespace dbench::experiments {
namespace {

namespace topo = dbench::topology;

// Numbers stay text until run(): CLI11 would wrap -1 into a huge unsigned seed and report a bad number in two
// lines; here every bad value ends in one "--option: ..." line.
struct GraphOptions {
  std::string kind;
  std::string nodes;
  std::string shape;
  std::string degree = "0";
  std::string probability = "0";
  std::string seed = "1";
  std::string weights = "automatic";
  bool json = false;
  std::string dot;
  std::string graphml;
};

// The whole of `text` as a T, or an error naming the option.
template <typename T>
T parse_number(std::string_view option, const std::string& text, std::string_view expected) {
  T value{};
  const auto* end = text.data() + text.size();
  const auto [stop, error] = std::from_chars(text.data(), end, value);
  if (text.empty() || error != std::errc() || stop != end) {
    throw std::invalid_argument(
        fmt::format("{}: expected {}, got '{}'{}", option, expected, text,
                    error == std::errc::result_out_of_range ? " (out of range)" : ""));
  }
  return value;
}

topo::GraphSpec to_spec(const GraphOptions& o) {
  topo::GraphSpec spec;
  spec.kind = topo::parse_graph_kind(o.kind);
  spec.nodes = parse_number<int>("--nodes", o.nodes, "an integer");
  if (!o.shape.empty()) {
    std::tie(spec.torus_rows, spec.torus_cols) = topo::parse_torus_shape(o.shape);
  }
  spec.degree = parse_number<int>("--degree", o.degree, "an integer");
  spec.probability = parse_number<double>("--probability", o.probability, "a number");
  if (!std::isfinite(spec.probability)) {
    throw std::invalid_argument(
        fmt::format("--probability: must be a finite number, got '{}'", o.probability));
  }
  spec.seed = parse_number<std::uint64_t>("--seed", o.seed, "a non-negative integer");
  spec.weights = topo::parse_weight_scheme(o.weights);
  return spec;
}

// The file `option` names, written as a user-named file (results::write_user_file); errors name the option.
void write_atomically(const std::string& option, const std::filesystem::path& path,
                      const std::function<void(std::ostream&)>& write) {
  std::ostringstream text;
  write(text);
  try {
    results::write_user_file(path, text.str());
  } catch (const std::runtime_error& e) {
    throw std::runtime_error(fmt::format("{}: {}", option, e.what()));
  }
}

std::string yes_no(bool value) {
  return value ? "yes" : "no";
}

std::string degree_text(const topo::DegreeRange& d) {
  return fmt::format("min {}, mean {:.4g}, max {}", d.min, d.mean, d.max);
}

void print_text(const topo::GraphSpec& spec, const topo::GraphStats& s) {
  const auto line = [](std::string_view key, const std::string& value) {
    fmt::print("{:<20}{}\n", key, value);
  };
  const auto kind = topo::graph_kind_name(spec.kind);
  line("kind", kind == s.name ? s.name : fmt::format("{} ({})", kind, s.name));
  line("nodes", fmt::format("{}", s.nodes));
  if (spec.kind == topo::GraphKind::torus) {
    const auto [rows, cols] = spec.torus_rows == 0 ? topo::most_square_shape(spec.nodes)
                                                   : std::pair(spec.torus_rows, spec.torus_cols);
    line("shape", fmt::format("{}x{}", rows, cols));
  }
  if (s.period > 1) {
    line("period", fmt::format("{} rounds (iteration t uses round t mod {})", s.period, s.period));
  }
  const auto per_round = s.period > 1 ? " per round (max)" : "";
  line("edges", fmt::format("{} directed, {} undirected{}", s.directed_edges, s.undirected_edges, per_round));
  line("directed", yes_no(s.directed));
  line("in-degree", degree_text(s.in_degree));
  line("out-degree", degree_text(s.out_degree));
  const auto of_union = s.period > 1 ? " (union of the rounds)" : "";
  line("diameter",
       s.diameter ? fmt::format("{}{}{}", *s.diameter, s.diameter_exact ? "" : " (lower bound)", of_union)
                  : std::string("infinite (not strongly connected)"));
  line("row-stochastic",
       fmt::format("{} (max error {:.2g})", yes_no(s.checks.row_stochastic), s.checks.max_row_error));
  line("column-stochastic",
       fmt::format("{} (max error {:.2g})", yes_no(s.checks.column_stochastic), s.checks.max_column_error));
  line("symmetric", yes_no(s.checks.symmetric));
  line("connected", s.period > 1 ? fmt::format("{} (the product of one period mixes)", yes_no(s.connected))
                                 : yes_no(s.connected));
  if (s.second_eigenvalue_modulus) {
    line("|lambda_2|", fmt::format("{:.10g}", *s.second_eigenvalue_modulus));
  }
  if (s.contraction) {
    line("contraction", fmt::format("{:.10g}{}", *s.contraction,
                                    s.exact_consensus ? " (exact consensus after one period)" : ""));
  }
  line("spectral gap", fmt::format("{:.10g}{}", s.spectral_gap,
                                   s.period > 1 ? " (per iteration: 1 - contraction^(1/period))" : ""));
  line("spectral method", s.spectral_method);
}

void print_json(const topo::GraphSpec& spec, const topo::GraphStats& s) {
  const auto degree = [](const topo::DegreeRange& d) {
    return nlohmann::ordered_json{{"min", d.min}, {"mean", d.mean}, {"max", d.max}};
  };
  nlohmann::ordered_json j = {
      {"kind", topo::graph_kind_name(spec.kind)},
      {"name", s.name},
      {"nodes", s.nodes},
      {"period", s.period},
      {"edges", s.directed_edges},
      {"undirected_edges", s.undirected_edges},
      {"directed", s.directed},
      {"in_degree", degree(s.in_degree)},
      {"out_degree", degree(s.out_degree)},
      {"diameter", s.diameter ? nlohmann::ordered_json(*s.diameter) : nlohmann::ordered_json(nullptr)},
      {"diameter_exact", s.diameter_exact},
      {"nonnegative", s.checks.nonnegative},
      {"row_stochastic", s.checks.row_stochastic},
      {"column_stochastic", s.checks.column_stochastic},
      {"max_row_error", s.checks.max_row_error},
      {"max_column_error", s.checks.max_column_error},
      {"symmetric", s.checks.symmetric},
      {"connected", s.connected},
      {"second_eigenvalue_modulus", s.second_eigenvalue_modulus
                                        ? nlohmann::ordered_json(*s.second_eigenvalue_modulus)
                                        : nlohmann::ordered_json(nullptr)},
      {"contraction",
       s.contraction ? nlohmann::ordered_json(*s.contraction) : nlohmann::ordered_json(nullptr)},
      {"exact_consensus", s.exact_consensus},
      {"spectral_gap", s.spectral_gap},
      {"spectral_method", s.spectral_method},
      {"seed", spec.seed},
  };
  if (spec.kind == topo::GraphKind::torus) {
    const auto [rows, cols] = spec.torus_rows == 0 ? topo::most_square_shape(spec.nodes)
                                                   : std::pair(spec.torus_rows, spec.torus_cols);
    j["shape"] = fmt::format("{}x{}", rows, cols);
  }
  if (spec.degree != 0) {
    j["degree"] = spec.degree;
  }
  if (spec.probability != 0.0) {
    j["probability"] = spec.probability;
  }
  fmt::print("{}\n", j.dump(2));
}

// The graph `spec` describes, a GraphError reported under the command line's option (--nodes, --shape, ...).
topo::GraphSequence build(const GraphOptions& options, topo::GraphSpec& spec) {
  try {
    spec = to_spec(options);
    return topo::make_graph(spec);
  } catch (const topo::GraphError& e) {
    throw std::invalid_argument(fmt::format("--{}: {}", topo::graph_input_name(e.input()), e.reason()));
  }
}

void run(const GraphOptions& options) {
  topo::GraphSpec spec;
  const auto sequence = build(options, spec);
  // Exports first: a file asked for is written even when the spectrum later turns out too costly.
  if (!options.dot.empty()) {
    write_atomically("--dot", options.dot, [&](std::ostream& out) { topo::write_dot(out, sequence); });
  }
  if (!options.graphml.empty()) {
    write_atomically("--graphml", options.graphml,
                     [&](std::ostream& out) { topo::write_graphml(out, sequence); });
  }
  const auto stats = topo::analyze(sequence);
  if (options.json) {
    print_json(spec, stats);
  } else {
    print_text(spec, stats);
  }
}

}  // namespace

void add_graph_command(CLI::App& app) {
  auto options = std::make_shared<GraphOptions>();
  auto* cmd = app.add_subcommand(
      "graph",
      "Build one communication graph and print its statistics: edges, degrees, diameter, mixing checks and "
      "the "
      "spectral gap 1 - |lambda_2(W)|. For a time-varying family (one-peer-exponential, hyper-hypercube, "
      "simple-base, base) the gap is the per-iteration effective gap 1 - c^(1/period), with c = "
      "||W_{period-1}...W_0 - J||_2 the contraction of one period (c = 0: exact consensus).");
  cmd->add_option("--kind", options->kind, "graph kind: " + join(topo::known_graph_kinds()))->required();
  cmd->add_option("--nodes", options->nodes, "number of nodes n (at least 2)")->required()->type_name("INT");
  cmd->add_option("--shape", options->shape,
                  "torus shape ROWSxCOLS (default: the most square factorisation of n)");
  cmd->add_option(
         "--degree", options->degree,
         "random-regular: the degree d; hyper-hypercube, simple-base, base: the maximum degree k per round "
         "(default 1)")
      ->type_name("INT");
  cmd->add_option("--probability", options->probability, "erdos-renyi: the edge probability p in (0, 1]")
      ->type_name("FLOAT");
  cmd->add_option("--seed", options->seed, "seed of the random kinds (random-regular, erdos-renyi)")
      ->capture_default_str()
      ->type_name("UINT");
  cmd->add_option(
         "--weights", options->weights,
         "star, erdos-renyi: automatic (Metropolis-Hastings), metropolis-hastings or uniform (1/(d_i+1))")
      ->capture_default_str();
  cmd->add_flag("--json", options->json, "print the statistics as JSON instead of text");
  cmd->add_option(
         "--dot", options->dot,
         "write the graph as Graphviz DOT to FILE (time-varying families: every round's edges, tagged "
         "with their round)")
      ->type_name("FILE");
  cmd->add_option(
         "--graphml", options->graphml,
         "write the graph as GraphML to FILE (time-varying families: every round's edges, with a round "
         "attribute)")
      ->type_name("FILE");
  cmd->callback([options] { run(*options); });
}

}  // namespace dbench::experiments
