// Reports as a user gets them: a small sweep and a single run, rendered by headless Chromium to check that
// every plot the report wrote is actually drawn; and the errors that must leave an existing report alone.
#include <doctest/doctest.h>
#include <fmt/core.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "experiments/analysis.hpp"
#include "experiments/report.hpp"
#include "support/run_dbench.hpp"
#include "support/temp_dir.hpp"
#include "topology/analysis.hpp"
#include "topology/generators.hpp"

namespace {

namespace fs = std::filesystem;
using dbench::testing::CommandResult;
using dbench::testing::run_dbench;
using dbench::testing::TempDir;

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

void write_file(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << text;
}

std::string quoted(const fs::path& path) {
  return fmt::format("\"{}\"", path.string());
}

/// Runs a shell command line; stdout and stderr together.
CommandResult run_shell(const std::string& command) {
  FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
  REQUIRE(pipe != nullptr);
  std::string output;
  std::array<char, 4096> buffer{};
  for (std::size_t n; (n = std::fread(buffer.data(), 1, buffer.size(), pipe)) > 0;) {
    output.append(buffer.data(), n);
  }
  const int status = ::pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, output};
}

/// One run of the fixture sweep: `label` is centralized or a graph (policy) name.
struct FixtureRun {
  std::string label;
  int workers = 0;
  int seed = 0;
  std::string id() const { return fmt::format("{}_w{}_s{}", label, workers, seed); }
};

/// A tiny, fast `dbench simulate` (synthetic data, 20 iterations, evaluations every 5).
std::string simulate_command(const fs::path& out, const FixtureRun& run) {
  const std::string algorithm = run.label == "centralized"
                                    ? "--set algorithm.kind=centralized"
                                    : fmt::format("--set algorithm.graph={}", run.label);
  return fmt::format(
      "\"{}\" simulate --set train.dataset=synthetic --set train.workers={} --set train.iterations=20 "
      "--set train.eval_every=5 --set train.eval_samples=500 --set seed={} {} --set platform.preset=dgx-h100 "
      "--set platform.timing_model=mlp -q --threads 1 --out {} > /dev/null",
      DBENCH_EXE, run.workers, run.seed, algorithm, quoted(out));
}

/// Runs the simulations in two parallel chains (the machine has two cores).
void simulate_all(const fs::path& dir, const std::vector<FixtureRun>& runs) {
  std::array<std::string, 2> chains = {"true", "true"};
  for (std::size_t i = 0; i < runs.size(); ++i) {
    chains[i % 2] += " && " + simulate_command(dir / "runs" / runs[i].id(), runs[i]);
  }
  const auto result = run_shell(fmt::format(
      "( {} ) & first=$!; ( {} ); second=$?; wait $first; exit $(( $? | second ))", chains[0], chains[1]));
  CAPTURE(result.output);
  REQUIRE(result.status == 0);
}

double number(const std::string& text) {
  return text.empty() ? NAN : std::stod(text);
}

std::string cell(double v) {
  return std::isfinite(v) ? fmt::format("{:.17g}", v) : std::string();
}

/// Mean undirected edges and spectral gap over the graphs schedule.csv lists (all-reduce and global averages
/// count as the complete graph).
std::pair<double, double> schedule_graph_stats(const fs::path& run_dir, int n) {
  namespace topo = dbench::topology;
  const auto schedule = dbench::experiments::parse_csv(read_file(run_dir / "schedule.csv"), "schedule.csv");
  std::map<std::string, std::pair<double, double>> cache;
  double edges = 0.0;
  double gap = 0.0;
  for (const auto& row : schedule.rows) {
    const std::string kind = row[1].substr(0, row[1].find('/'));
    if (!cache.contains(kind)) {
      if (kind == "allreduce" || kind == "global-average") {
        cache[kind] = {n * (n - 1) / 2.0, 1.0};
      } else {
        topo::GraphSpec spec;
        spec.kind = topo::parse_graph_kind(kind);
        spec.nodes = n;
        const auto stats = topo::analyze(topo::make_graph(spec));
        cache[kind] = {static_cast<double>(stats.undirected_edges), stats.spectral_gap};
      }
    }
    edges += cache[kind].first;
    gap += cache[kind].second;
  }
  const auto rounds = static_cast<double>(schedule.rows.size());
  return {edges / rounds, gap / rounds};
}

std::string summary_header() {
  std::string header;
  for (std::string_view column : dbench::experiments::required_summary_columns()) {
    header += header.empty() ? "" : ",";
    header += column;
  }
  return header + ",train.workers\n";
}

/// summary.csv's row for a finished run, computed from its files as the sweep does.
std::string summary_row(const fs::path& dir, const FixtureRun& run, double target) {
  using dbench::experiments::parse_csv;
  const fs::path run_dir = dir / "runs" / run.id();
  const auto summary = nlohmann::json::parse(read_file(run_dir / "summary.json"));
  const auto metrics = parse_csv(read_file(run_dir / "metrics.csv"), "metrics.csv");
  const auto times = parse_csv(read_file(run_dir / "accuracy_time.csv"), "accuracy_time.csv");
  const auto trace = parse_csv(read_file(run_dir / "trace.csv"), "trace.csv");
  const auto column = [](const dbench::experiments::CsvTable& t, const char* name) {
    return static_cast<std::size_t>(t.column(name));
  };
  double variance_sum = 0.0, consensus_sum = 0.0, variance_final = NAN, consensus_final = NAN;
  double to_target = NAN, time_to_target = NAN;
  int evaluations = 0;
  for (std::size_t r = 0; r < metrics.rows.size(); ++r) {
    const auto& row = metrics.rows[r];
    if (number(row[column(metrics, "iteration")]) > 0) {
      variance_final = number(row[column(metrics, "norm_variance")]);
      consensus_final = number(row[column(metrics, "consensus_distance")]);
      variance_sum += variance_final;
      consensus_sum += consensus_final;
      ++evaluations;
    }
    if (std::isnan(to_target) && number(row[column(metrics, "test_accuracy")]) >= target) {
      to_target = number(row[column(metrics, "iteration")]);
      time_to_target = number(times.rows[r][column(times, "simulated_time_s")]);
    }
  }
  double bytes = 0.0;
  for (const auto& row : trace.rows) {
    bytes += number(row[column(trace, "bytes_sent")]);
  }
  const auto [edges, gap] = schedule_graph_stats(run_dir, run.workers);
  const auto get = [&](const char* key) { return summary.at(key).get<double>(); };
  return fmt::format(
      "{},done,{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n", run.id(),
      run.label, summary.at("algorithm").get<std::string>(), summary.at("graph").get<std::string>(),
      run.workers, run.seed, cell(get("final_test_accuracy")), cell(get("best_test_accuracy")),
      cell(get("final_test_loss")), cell(get("iterations")), cell(edges), cell(2.0 * edges / run.workers),
      cell(gap), cell(variance_sum / evaluations), cell(variance_final), cell(consensus_sum / evaluations),
      cell(consensus_final), cell(target), cell(to_target), cell(time_to_target),
      cell(get("seconds_per_iteration")), cell(get("samples_per_second")), cell(get("scaling_efficiency")),
      cell(get("bytes_per_gpu_per_iteration")), cell(bytes), cell(get("simulated_seconds")),
      cell(get("wall_seconds")), run.workers);
}

/// A sweep directory laid out as `dbench sweep` writes it: runs/<id>/ from dbench simulate, summary.csv with
/// the contract's columns (plus one grid axis), sweep.toml, logs/. Three labels at 4 workers, four at 8 with
/// a second seed for two of them, and one pending run: nine simulations, each mostly process start-up.
void make_sweep(const fs::path& dir) {
  const std::vector<FixtureRun> runs = {
      {"centralized", 4, 1}, {"ring", 4, 1}, {"ada", 4, 1},  {"centralized", 8, 1}, {"ring", 8, 1},
      {"exponential", 8, 1}, {"ada", 8, 1},  {"ring", 8, 2}, {"ada", 8, 2},
  };
  simulate_all(dir, runs);
  std::string csv = summary_header();
  for (const auto& run : runs) {
    csv += summary_row(dir, run, 0.3);
  }
  csv += "torus_w8_s1,pending,torus,dpsgd,torus,8,1,,,,,,,,,,,,,,,,,,,,,,8\n";
  write_file(dir / "summary.csv", csv);
  write_file(dir / "sweep.toml", "name = \"report-fixture\"\n");
  fs::create_directories(dir / "logs");
}

/// Path of headless Chromium, or empty.
std::string chromium() {
  const auto found = run_shell("command -v chromium");
  if (found.status != 0) {
    return {};
  }
  return found.output.substr(0, found.output.find('\n'));
}

/// How many plots headless Chromium drew in `html` (the report's own count, written after load), or -1.
int rendered_plots(const fs::path& html, const fs::path& scratch) {
  const std::string browser = chromium();
  if (browser.empty()) {
    FAIL("chromium is not installed: run ./setup.sh (it installs Debian's chromium for this test)");
  }
  const auto result =
      run_shell(fmt::format("\"{}\" --headless --no-sandbox --disable-gpu --virtual-time-budget=10000 "
                            "--user-data-dir={} --dump-dom "
                            "\"file://{}\" 2>/dev/null",
                            browser, quoted(scratch / "chromium-profile"), fs::absolute(html).string()));
  REQUIRE(result.status == 0);
  std::smatch match;
  if (!std::regex_search(result.output, match, std::regex("data-rendered-plots=\"([0-9]+)\""))) {
    return -1;
  }
  return std::stoi(match[1]);
}

/// The files of a directory with their contents, hidden ones included.
std::map<std::string, std::string> snapshot(const fs::path& dir) {
  std::map<std::string, std::string> files;
  for (const auto& entry : fs::recursive_directory_iterator(dir)) {
    files[fs::relative(entry.path(), dir).string()] = entry.is_regular_file() ? read_file(entry.path()) : "";
  }
  return files;
}

}  // namespace

TEST_CASE("experiments::report: a sweep's report draws every plot in headless Chromium") {
  const TempDir temp;
  const fs::path dir = temp.path() / "sweep";
  make_sweep(dir);

  const auto result = dbench::experiments::write_report(dir);
  CHECK(result.sweep);
  CHECK(result.plots > 0);
  CHECK(result.plots == static_cast<int>(result.plot_names.size()));
  CHECK(rendered_plots(result.html, temp.path()) == result.plots);

  const std::string html = read_file(result.html);
  const std::string markdown = read_file(result.markdown);
  // Self-contained: no external scripts, styles or images.
  for (const char* external : {"src=", "<link", "@import", "href=\"http"}) {
    CAPTURE(external);
    CHECK(html.find(external) == std::string::npos);
  }
  for (const auto& name : result.plot_names) {
    CAPTURE(name);
    CHECK(fs::file_size(dir / "plots" / (name + ".svg")) > 0);
    CHECK(markdown.find(fmt::format("(plots/{}.svg)", name)) != std::string::npos);
    CHECK(html.find(fmt::format("id=\"plot-{}\"", name)) != std::string::npos);
  }
  for (const char* expected : {"accuracy-iteration-w8", "accuracy-iteration-w4", "accuracy-time-w8",
                               "norm-variance-w8", "accuracy-edges-w8", "accuracy-norm-variance-w8",
                               "throughput-workers", "efficiency-workers", "accuracy-workers"}) {
    CAPTURE(expected);
    CHECK(std::find(result.plot_names.begin(), result.plot_names.end(), expected) != result.plot_names.end());
  }
  for (const char* section : {"The study's observations", "Ada against centralized training", "## 8 workers",
                              "## 4 workers", "Spearman rho", "9 done, 0 failed, 1 pending"}) {
    CAPTURE(section);
    CHECK(markdown.find(section) != std::string::npos);
  }
  // Every observation gets one of the three verdicts.
  const std::regex verdict(R"(\| [123] \| [^|]+\| (holds|does not hold|inconclusive here) \|)");
  CHECK(std::distance(std::sregex_iterator(markdown.begin(), markdown.end(), verdict),
                      std::sregex_iterator()) == 3);
  for (const auto& entry : fs::directory_iterator(dir)) {
    CHECK(!entry.path().filename().string().starts_with(".report"));
  }
}

TEST_CASE("experiments::report: a run's results directory gets the smaller report, replacing an older one") {
  const TempDir temp;
  const fs::path dir = temp.path() / "run";
  const auto simulated = run_shell(simulate_command(dir, {"exponential", 8, 1}));
  REQUIRE(simulated.status == 0);
  write_file(dir / "plots" / "stale.svg", "<svg/>");

  const auto command = run_dbench(fmt::format("report {}", quoted(dir)));
  CAPTURE(command.output);
  REQUIRE(command.status == 0);
  CHECK(command.output.find("report.html (4 plots)") != std::string::npos);
  CHECK(!fs::exists(dir / "plots" / "stale.svg"));
  for (const char* name : {"accuracy-iteration", "accuracy-time", "norm-variance", "consensus-distance"}) {
    CAPTURE(name);
    CHECK(fs::exists(dir / "plots" / (std::string(name) + ".svg")));
  }
  const std::string markdown = read_file(dir / "report.md");
  CHECK(markdown.find("final\\_test\\_accuracy") != std::string::npos);
  CHECK(markdown.find("on 8 workers") != std::string::npos);
  CHECK(rendered_plots(dir / "report.html", temp.path()) == 4);
}

TEST_CASE(
    "experiments::report: bad input ends with one error line and leaves the existing report untouched") {
  const TempDir temp;
  const fs::path dir = temp.path() / "sweep";
  write_file(dir / "report.html", "<p>the previous report</p>");
  write_file(dir / "report.md", "previous");
  write_file(dir / "plots" / "old.svg", "<svg/>");

  const auto fails_with = [&](const std::string& command_line, const std::string& expected) {
    CAPTURE(command_line);
    const auto before = snapshot(dir);
    const auto result = run_shell(command_line);
    CAPTURE(result.output);
    CHECK(result.status != 0);
    CHECK(std::count(result.output.begin(), result.output.end(), '\n') == 1);
    CHECK(result.output.starts_with("dbench: error: "));
    CHECK(result.output.find(expected) != std::string::npos);
    CHECK(snapshot(dir) == before);
  };
  const std::string report = fmt::format("\"{}\" report {}", DBENCH_EXE, quoted(dir));

  // Neither a sweep nor a run.
  fails_with(report, "neither a sweep directory");
  fails_with(fmt::format("\"{}\" report {}", DBENCH_EXE, quoted(temp.path() / "missing")), "not a directory");

  // A summary.csv without a required column.
  std::string header = summary_header();
  write_file(dir / "summary.csv", std::regex_replace(header, std::regex(",spectral_gap,"), ",gap,"));
  fails_with(report, "lacks the column 'spectral_gap'");

  // No done runs.
  write_file(dir / "summary.csv", header + "ring_w8_s1,pending,ring,dpsgd,ring,8,1,,,,,,,,,,,,,,,,,,,,,,8\n" +
                                      "ring_w8_s2,failed,ring,dpsgd,ring,8,2,,,,,,,,,,,,,,,,,,,,,,8\n");
  fails_with(report, "no run is done yet (1 pending, 1 failed)");

  // Done runs, but gnuplot cannot be found.
  std::string done = header;
  for (int k = 0; k < 4; ++k) {
    done += fmt::format(
        "r{0},done,g{0},dpsgd,ring,8,1,0.{1},0.{1},1,20,{2},2,0.5,0.01,0.01,0.1,0.1,0.3,10,1,0.01,"
        "100,0.9,1000,20000,0.2,1,8\n",
        k, 50 + k, 8 * (k + 1));
  }
  write_file(dir / "summary.csv", done);
  fails_with("PATH=/nonexistent " + report, "gnuplot is not installed");

  // The same directory with gnuplot on PATH reports fine (the runs' curves are simply absent).
  const auto ok = run_shell(report);
  CAPTURE(ok.output);
  CHECK(ok.status == 0);
  CHECK(read_file(dir / "report.md").find("No metrics.csv for 4 done runs") != std::string::npos);
}
