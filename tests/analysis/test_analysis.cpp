// Statistics checked against closed forms and hand-computed values; the study's verdicts on synthetic sweeps
// whose answer is known by construction.
#include <doctest/doctest.h>
#include <fmt/core.h>

#include <cmath>
#include <numbers>
#include <string>
#include <vector>

#include "analysis/analysis.hpp"
#include "support/approx.hpp"

namespace {

using namespace dbench::analysis;
using namespace dbench::results;

std::string header() {
  std::string line;
  for (std::string_view column : required_summary_columns()) {
    line += line.empty() ? "" : ",";
    line += column;
  }
  return line + ",lr\n";
}

struct Row {
  std::string label;
  std::string algorithm = "dpsgd";
  std::string graph;
  int workers = 16;
  int seed = 1;
  double accuracy = 0.0;
  double edges = 0.0;
  double norm_variance = 0.0;
  double efficiency = 1.0;
  double iterations_to_target = 100.0;
  double bytes_per_gpu = 1e9;
  std::string status = "done";
  double iterations = 200;
  double spectral_gap = 0.5;
  std::string epochs;  ///< empty: a budget in iterations
};

std::string csv_row(const Row& r) {
  const std::string id = fmt::format("{}-w{}-s{}", r.label, r.workers, r.seed);
  const auto number = [](double v) { return std::isfinite(v) ? fmt::format("{}", v) : std::string(); };
  if (r.status != "done") {
    return fmt::format("{},{},{},{},{},{},{},,,,,,,,,,,,,,,,,,,,,,,,,,,,,,0.1\n", id, r.status, r.label,
                       r.algorithm, r.graph, r.workers, r.seed);
  }
  // run,status,label,algorithm,graph,workers,seed,final,best,loss,iterations,edges,mean_degree,spectral_gap,
  // nv_mean,nv_final,cd_mean,cd_final,target,it_to_target,time_to_target,s_per_it,samples_s,efficiency,
  // bytes_per_it,bytes,simulated_s,wall_s,timing_model,platform,parameters,epochs,global_batch,
  // train_samples,samples,peak_lr, lr
  return fmt::format(
      "{},done,\"{}\",{},{},{},{},{},{},0.5,{},{},{},{},{},{},0.1,0.1,0.8,{},{},0.01,{},{},{},{},2.0,1.0,"
      "mlp,frontier,1000,{},{},60000,{},0.1,0.1\n",
      id, r.label, r.algorithm, r.graph, r.workers, r.seed, r.accuracy, r.accuracy, r.iterations, r.edges,
      2.0 * r.edges / r.workers, r.spectral_gap, r.norm_variance, r.norm_variance,
      number(r.iterations_to_target), number(r.iterations_to_target * 0.01),
      1000.0 * r.workers * r.efficiency, r.efficiency, r.bytes_per_gpu / r.iterations, r.bytes_per_gpu,
      r.epochs, 16 * r.workers, r.iterations * 16 * r.workers);
}

// Four labels at two scales, three seeds each: accuracy rises with edges and falls with norm variance, the
// decentralized graphs lose accuracy at the larger scale and scaling efficiency falls.
std::string study_like_sweep() {
  std::string csv = header();
  struct Label {
    std::string name, algorithm, graph;
    double accuracy16, accuracy64, norm_variance, efficiency16, efficiency64, bytes;
  };
  const std::vector<Label> labels = {
      {"centralized", "centralized", "allreduce", 0.90, 0.88, 0.0, 0.95, 0.80, 4e9},
      {"ring", "dpsgd", "ring", 0.85, 0.78, 0.05, 0.97, 0.90, 1e9},
      {"exponential", "dpsgd", "exponential", 0.88, 0.84, 0.01, 0.96, 0.85, 2e9},
      {"ada", "dpsgd", "ada", 0.89, 0.875, 0.005, 0.96, 0.84, 2.5e9},
  };
  for (const int workers : {16, 64}) {
    const double n = workers;
    for (const auto& l : labels) {
      for (int seed = 1; seed <= 3; ++seed) {
        Row r;
        r.label = l.name;
        r.algorithm = l.algorithm;
        r.graph = l.graph;
        r.workers = workers;
        r.seed = seed;
        r.accuracy = (workers == 16 ? l.accuracy16 : l.accuracy64) + 0.001 * (seed - 2);
        r.edges = l.graph == "ring"          ? n
                  : l.graph == "exponential" ? n * std::log2(n)
                  : l.graph == "ada"         ? 2.0 * n * std::log2(n)
                                             : n * (n - 1) / 2;
        r.norm_variance = l.norm_variance * (1.0 + 0.01 * seed);
        r.efficiency = workers == 16 ? l.efficiency16 : l.efficiency64;
        r.iterations_to_target = l.graph == "ring" ? 150 : l.graph == "exponential" ? 120 : 100;
        r.bytes_per_gpu = l.bytes;
        csv += csv_row(r);
      }
    }
  }
  Row pending;
  pending.label = "torus";
  pending.graph = "torus";
  pending.status = "pending";
  csv += csv_row(pending);
  return csv;
}

}  // namespace

TEST_CASE("analysis::statistics: Student's t p-values match closed forms and a table value") {
  // df = 1 is the Cauchy distribution: P(|T| >= t) = 1 - 2 atan(t) / pi.
  for (const double t : {0.1, 1.0, 3.0, 12.7}) {
    CAPTURE(t);
    CHECK(student_t_two_sided_p(t, 1.0) ==
          dbench::testing::approx(1.0 - 2.0 * std::atan(t) / std::numbers::pi).epsilon(1e-10));
    CHECK(student_t_two_sided_p(-t, 1.0) ==
          dbench::testing::approx(student_t_two_sided_p(t, 1.0)).epsilon(1e-12));
  }
  // df = 2: P(|T| >= t) = 1 - t / sqrt(2 + t^2).
  for (const double t : {0.5, 2.0, 4.303, 40.0}) {
    CAPTURE(t);
    CHECK(student_t_two_sided_p(t, 2.0) ==
          dbench::testing::approx(1.0 - t / std::sqrt(2.0 + t * t)).epsilon(1e-10));
  }
  // Tables: t_{0.975, 10} = 2.228 and t_{0.995, 30} = 2.750.
  CHECK(student_t_two_sided_p(2.228, 10.0) == dbench::testing::approx(0.05).epsilon(0.002));
  CHECK(student_t_two_sided_p(2.750, 30.0) == dbench::testing::approx(0.01).epsilon(0.003));
  CHECK(student_t_two_sided_p(0.0, 7.0) == dbench::testing::approx(1.0));
  CHECK(student_t_two_sided_p(INFINITY, 7.0) == 0.0);
  CHECK(std::isnan(student_t_two_sided_p(1.0, 0.0)));
}

TEST_CASE("analysis::statistics: the regularized incomplete beta matches its closed forms") {
  for (const double x : {0.0, 0.05, 0.3, 0.5, 0.77, 0.999, 1.0}) {
    CAPTURE(x);
    CHECK(regularized_incomplete_beta(1.0, 1.0, x) == dbench::testing::approx(x));
    CHECK(regularized_incomplete_beta(3.0, 1.0, x) == dbench::testing::approx(std::pow(x, 3.0)));
    CHECK(regularized_incomplete_beta(1.0, 2.5, x) == dbench::testing::approx(1.0 - std::pow(1.0 - x, 2.5)));
    // I_x(a, b) = 1 - I_{1-x}(b, a).
    CHECK(regularized_incomplete_beta(2.5, 7.0, x) ==
          dbench::testing::approx(1.0 - regularized_incomplete_beta(7.0, 2.5, 1.0 - x)).epsilon(1e-12));
  }
  CHECK(std::isnan(regularized_incomplete_beta(0.0, 1.0, 0.5)));
  CHECK(std::isnan(regularized_incomplete_beta(1.0, 1.0, 1.5)));
}

TEST_CASE("analysis::statistics: Pearson, Spearman and the line fit on hand-computed data") {
  const std::vector<double> x = {1, 2, 3, 4, 5};
  const std::vector<double> y = {2, 4, 5, 4, 5};
  // sxy = 6, sxx = 10, syy = 6: r = 6 / sqrt(60), slope 0.6, intercept 4 - 0.6 * 3.
  const Correlation r = pearson(x, y);
  CHECK(r.coefficient == dbench::testing::approx(std::sqrt(0.6)));
  CHECK(r.n == 5);
  const double t = std::sqrt(0.6) * std::sqrt(3.0 / 0.4);
  CHECK(r.p_value == dbench::testing::approx(student_t_two_sided_p(t, 3.0)));
  const LineFit fit = fit_line(x, y);
  CHECK(fit.slope == dbench::testing::approx(0.6));
  CHECK(fit.intercept == dbench::testing::approx(2.2));
  CHECK(fit.r_squared == dbench::testing::approx(0.6));

  // Perfectly monotone but not linear: rho = 1 and p = 0, r below 1.
  const std::vector<double> cubes = {1, 8, 27, 64, 125};
  CHECK(spearman(x, cubes).coefficient == dbench::testing::approx(1.0));
  CHECK(spearman(x, cubes).p_value == 0.0);
  CHECK(pearson(x, cubes).coefficient < 0.99);
  const std::vector<double> falling = {10, 9, 8, 7, 6};
  CHECK(pearson(x, falling).coefficient == dbench::testing::approx(-1.0));
  CHECK(pearson(x, falling).p_value == 0.0);

  // Ties: x ranks 1, 2.5, 2.5, 4 and y ranks 1, 3, 2, 4 give rho = 4.5 / sqrt(4.5 * 5) = 3 / sqrt(10);
  // t = sqrt(18) with 2 degrees of freedom, so p = 1 - sqrt(18) / sqrt(20).
  const std::vector<double> tied_x = {1, 2, 2, 3};
  const std::vector<double> tied_y = {10, 30, 20, 40};
  CHECK(average_ranks(tied_x) == std::vector<double>{1.0, 2.5, 2.5, 4.0});
  const Correlation rho = spearman(tied_x, tied_y);
  CHECK(rho.coefficient == dbench::testing::approx(3.0 / std::sqrt(10.0)));
  CHECK(rho.p_value == dbench::testing::approx(1.0 - std::sqrt(18.0 / 20.0)));
  CHECK(average_ranks(std::vector<double>{5, 5, 5}) == std::vector<double>{2.0, 2.0, 2.0});
}

TEST_CASE("analysis::statistics: degenerate inputs give NaN and a reason, never a crash") {
  const std::vector<double> two = {1, 2};
  const Correlation short_pair = pearson(two, two);
  CHECK(std::isnan(short_pair.coefficient));
  CHECK(std::isnan(short_pair.p_value));
  CHECK(short_pair.reason.find("at least 3") != std::string::npos);
  const std::vector<double> flat = {3, 3, 3, 3};
  const std::vector<double> rising = {1, 2, 3, 4};
  CHECK(pearson(flat, rising).reason.find("constant") != std::string::npos);
  CHECK(!spearman(rising, flat).defined());
  CHECK(!fit_line(flat, rising).defined());
  CHECK(!pearson(std::vector<double>{}, std::vector<double>{}).defined());
  // Non-finite pairs are left out: three finite pairs remain.
  const std::vector<double> x = {1, NAN, 2, 3, INFINITY};
  const std::vector<double> y = {1, 5, 2, 3, 4};
  CHECK(pearson(x, y).n == 3);
  CHECK(pearson(x, y).coefficient == dbench::testing::approx(1.0));
  const Spread s = spread(std::vector<double>{1, 2, 3, NAN});
  CHECK(s.n == 3);
  CHECK(s.mean == dbench::testing::approx(2.0));
  CHECK(s.stddev == dbench::testing::approx(1.0));
  CHECK(std::isnan(spread(std::vector<double>{4}).stddev));
}

TEST_CASE("analysis::analysis: summary.csv rows, their grid axes and the errors that name a column") {
  const auto runs = parse_summary_csv(study_like_sweep(), "summary.csv");
  REQUIRE(runs.size() == 25);
  CHECK(runs.front().label == "centralized");
  CHECK(runs.front().workers == 16);
  CHECK(runs.front().final_test_accuracy == dbench::testing::approx(0.899));
  REQUIRE(runs.front().axes.size() == 1);
  CHECK(runs.front().axes[0] == std::pair<std::string, std::string>{"lr", "0.1"});
  CHECK(!runs.back().done());
  CHECK(std::isnan(runs.back().final_test_accuracy));

  std::string missing = study_like_sweep();
  missing.replace(missing.find(",edges,"), 7, ",edgez,");
  CHECK_THROWS_WITH_AS(parse_summary_csv(missing, "summary.csv"), doctest::Contains("'edges'"), CsvError);
  std::string garbled = study_like_sweep();
  garbled.replace(garbled.find("0.899"), 5, "0.8x9");
  CHECK_THROWS_WITH_AS(parse_summary_csv(garbled, "summary.csv"), doctest::Contains("final_test_accuracy"),
                       CsvError);
  CHECK_THROWS_WITH_AS(analyze_sweep(parse_summary_csv(header(), "summary.csv")),
                       doctest::Contains("no run is done"), AnalysisError);
}

TEST_CASE("analysis::analysis: a sweep built to agree with the study gets three 'holds' and Ada's numbers") {
  const SweepAnalysis a = analyze_sweep(parse_summary_csv(study_like_sweep(), "summary.csv"));
  CHECK(a.done == 24);
  CHECK(a.pending == 1);
  CHECK(a.scales == std::vector<int>{16, 64});
  CHECK(a.labels == std::vector<std::string>{"centralized", "ring", "exponential", "ada"});
  REQUIRE(a.groups.size() == 8);
  const GroupStats& ring16 = a.groups[1];
  CHECK(ring16.label == "ring");
  CHECK(ring16.runs == 3);
  CHECK(ring16.final_accuracy.mean == dbench::testing::approx(0.85));
  CHECK(ring16.final_accuracy.stddev == dbench::testing::approx(0.001));
  CHECK(ring16.reached_target == 3);

  REQUIRE(a.per_scale.size() == 2);
  const ScaleAnalysis& large = a.per_scale.back();
  CHECK(large.runs == 12);
  CHECK(large.edges.pearson_on == "log10(edges)");
  CHECK(large.edges.spearman.coefficient > 0.8);
  CHECK(large.edges.spearman.p_value < 0.01);
  CHECK(large.norm_variance_mean.spearman.coefficient < -0.8);
  CHECK(large.accuracy_vs_log10_edges.slope > 0.0);

  for (const auto& o : a.observations) {
    CAPTURE(o.claim);
    CAPTURE(o.evidence);
    CHECK(o.verdict == Verdict::holds);
    CHECK(!o.rule.empty());
  }
  REQUIRE(a.ada.size() == 2);
  const AdaComparison& ada = a.ada.back();
  CHECK(ada.workers == 64);
  CHECK(ada.vs_centralized_pp == dbench::testing::approx(-0.5));
  CHECK_FALSE(ada.matches_centralized());  // more than 0.3 pp below
  // Ada and centralized training reach the target in the same time; the tie goes to the alternative.
  CHECK(ada.fastest_label == "centralized");
  CHECK(ada.time_vs_fastest == dbench::testing::approx(1.0));
  CHECK(ada.best_static_label == "exponential");
  CHECK(ada.vs_best_static_pp == dbench::testing::approx(3.5));
  CHECK(ada.iterations_to_target == dbench::testing::approx(100.0));
  CHECK(ada.best_static_iterations_to_target == dbench::testing::approx(120.0));
  CHECK(ada.bytes_per_gpu_vs_centralized == dbench::testing::approx(2.5 / 4.0));
}

TEST_CASE(
    "analysis::analysis: Ada is compared within its context, and only with runs that reached the target") {
  std::string csv = header();
  // Two presets as a second axis: each Ada group is compared with the groups of its own preset.
  for (const std::string preset : {"a", "b"}) {
    for (int seed = 1; seed <= 2; ++seed) {
      Row central;
      central.label = "centralized preset=" + preset;
      central.algorithm = "centralized";
      central.graph = "allreduce";
      central.seed = seed;
      central.accuracy = 0.880;
      central.iterations_to_target = preset == "a" ? 200 : 50;
      central.bytes_per_gpu = 4e9;
      csv += csv_row(central);
      Row ring = central;
      ring.label = "ring preset=" + preset;
      ring.algorithm = "dpsgd";
      ring.graph = "ring";
      ring.accuracy = 0.85;
      // One seed never reaches the target: the ring cannot be the fastest, however quick its other seed.
      ring.iterations_to_target = seed == 1 ? 10 : NAN;
      csv += csv_row(ring);
      Row ada = central;
      ada.label = "ada preset=" + preset;
      ada.algorithm = "dpsgd";
      ada.graph = "ada";
      ada.accuracy = 0.878;
      ada.iterations_to_target = 100;
      ada.bytes_per_gpu = 2e9;
      csv += csv_row(ada);
    }
  }
  const SweepAnalysis a = analyze_sweep(parse_summary_csv(csv, "summary.csv"));
  CHECK(label_context("ada preset=a") == " preset=a");
  CHECK(label_context("ada").empty());
  REQUIRE(a.ada.size() == 2);
  for (const AdaComparison& c : a.ada) {
    CAPTURE(c.label);
    const bool first = c.label == "ada preset=a";
    CHECK(c.vs_centralized_pp == dbench::testing::approx(-0.2));
    CHECK(c.matches_centralized());
    CHECK(c.bytes_per_gpu_vs_centralized == dbench::testing::approx(0.5));
    CHECK(c.fastest_label == (first ? "centralized preset=a" : "centralized preset=b"));
    CHECK(c.time_vs_fastest == dbench::testing::approx(first ? 0.5 : 2.0));
  }
}

TEST_CASE("analysis::analysis: contrary and thin evidence give 'does not hold' and 'inconclusive here'") {
  // One scale, accuracy falling with edges and rising with variance, 24 runs.
  std::string csv = header();
  for (int k = 0; k < 24; ++k) {
    Row r;
    r.label = fmt::format("g{}", k % 4);
    r.graph = "ring";
    r.seed = k / 4;
    r.edges = 16.0 * (1 + k % 4);
    r.accuracy = 0.9 - 0.01 * (k % 4) + 0.0001 * k;
    r.norm_variance = 0.01 * (4 - k % 4);  // falls as accuracy falls
    csv += csv_row(r);
  }
  const SweepAnalysis a = analyze_sweep(parse_summary_csv(csv, "summary.csv"));
  CHECK(a.observations[0].verdict == Verdict::inconclusive);
  CHECK(a.observations[0].evidence.find("one scale") != std::string::npos);
  CHECK(a.observations[1].verdict == Verdict::does_not_hold);
  CHECK(a.observations[2].verdict == Verdict::does_not_hold);
  CHECK(a.ada.empty());
  CHECK(verdict_name(Verdict::inconclusive) == "inconclusive here");

  // Three runs with the same graph: correlations are undefined, so nothing can be decided.
  std::string flat = header();
  for (int seed = 1; seed <= 3; ++seed) {
    Row r;
    r.label = "ring";
    r.graph = "ring";
    r.seed = seed;
    r.edges = 16;
    r.accuracy = 0.8 + 0.01 * seed;
    flat += csv_row(r);
  }

  // Two scales where nothing changes: with seeds that agree, observation 1 does not hold; with seeds 6 pp
  // apart, a 1 pp change could not show, so it is inconclusive.
  const auto unchanged = [](double seed_offset) {
    std::string rows = header();
    for (const int workers : {16, 64}) {
      for (const char* label : {"centralized", "ring"}) {
        for (int seed = 1; seed <= 2; ++seed) {
          Row r;
          r.label = label;
          r.algorithm = r.label == "centralized" ? "centralized" : "dpsgd";
          r.graph = r.label == "centralized" ? "allreduce" : "ring";
          r.workers = workers;
          r.seed = seed;
          r.edges = r.label == "centralized" ? workers * (workers - 1) / 2.0 : workers;
          r.accuracy = 0.8 + (seed == 1 ? -seed_offset : seed_offset);
          r.efficiency = 0.95;
          rows += csv_row(r);
        }
      }
    }
    return analyze_sweep(parse_summary_csv(rows, "summary.csv")).observations[0];
  };
  const Observation steady = unchanged(0.001);
  CAPTURE(steady.evidence);
  CHECK(steady.verdict == Verdict::does_not_hold);
  const Observation noisy = unchanged(0.03);
  CAPTURE(noisy.evidence);
  CHECK(noisy.verdict == Verdict::inconclusive);
  CHECK(noisy.evidence.find("threshold 8.49 pp") != std::string::npos);

  const SweepAnalysis thin = analyze_sweep(parse_summary_csv(flat, "summary.csv"));
  CHECK(thin.observations[1].verdict == Verdict::inconclusive);
  CHECK(thin.observations[1].evidence.find("constant") != std::string::npos);
  CHECK(!thin.per_scale[0].accuracy_vs_log10_edges.defined());
}

TEST_CASE("analysis::analysis: each training design gets its own verdicts and its starved graphs") {
  // Under 10 epochs the larger scale trains fewer iterations and loses accuracy (and the ring cannot mix);
  // under 400 iterations it trains as long and keeps it, at the same efficiency.
  std::string csv = header();
  for (const bool by_epochs : {true, false}) {
    for (const int workers : {16, 64}) {
      for (const std::string label : {"centralized", "ring"}) {
        for (int seed = 1; seed <= 3; ++seed) {
          Row r;
          r.label = label;
          r.algorithm = label == "ring" ? "dpsgd" : "centralized";
          r.graph = label == "ring" ? "ring" : "allreduce";
          r.workers = workers;
          r.seed = seed + (by_epochs ? 0 : 10);
          r.edges = label == "ring" ? workers : workers * (workers - 1) / 2.0;
          r.epochs = by_epochs ? "10" : "";
          r.iterations = by_epochs ? 60000.0 * 10 / (16.0 * workers) : 400;
          r.spectral_gap = label == "ring" ? (by_epochs ? 0.01 : 0.5) : 1.0;
          const double base = label == "ring" ? 0.84 : 0.90;
          r.accuracy =
              (by_epochs ? base - (workers == 64 ? 0.10 : 0.0) : base + (workers == 64 ? 0.01 : 0.0)) +
              0.001 * (seed - 2);
          r.efficiency = by_epochs && workers == 64 ? 0.8 : 0.95;
          csv += csv_row(r);
        }
      }
    }
  }
  const SweepAnalysis a = analyze_sweep(parse_summary_csv(csv, "summary.csv"));
  REQUIRE(a.designs.size() == 2);
  CHECK(a.labels == std::vector<std::string>{"centralized [10 epochs]", "centralized [400 iterations]",
                                             "ring [10 epochs]", "ring [400 iterations]"});
  const Design& epochs = a.designs[0];
  const Design& iterations = a.designs[1];
  CHECK(epochs.name == "10 epochs");
  CHECK(iterations.name == "400 iterations");
  CHECK(epochs.runs == 12);
  CHECK(epochs.description.find("fixed sample budget") != std::string::npos);
  CHECK(iterations.description.find("fixed iterations") != std::string::npos);
  CAPTURE(epochs.observations[0].evidence);
  CHECK(epochs.observations[0].verdict == Verdict::holds);
  CAPTURE(iterations.observations[0].evidence);
  CHECK(iterations.observations[0].verdict == Verdict::does_not_hold);
  CHECK(a.observations[0].verdict == Verdict::holds);  // the first design's
  // The design beside the verdict: global batch, iterations and lr at each scale.
  REQUIRE(epochs.scales.size() == 2);
  CHECK(epochs.scales[1].global_batch == 1024);
  CHECK(epochs.scales[1].iterations == dbench::testing::approx(585.9375));
  CHECK(epochs.per_scale().find("64 workers: global batch 1024, 586 iterations") != std::string::npos);
  // ln(64) / 0.01 = 416 iterations to mix: the ring at 64 workers had 586 under 10 epochs... and at 16,
  // ln(16) / 0.01 = 277 against 2344: neither is starved; with 400 iterations and gap 0.5 neither either.
  CHECK(epochs.starved.empty());
  CHECK(iterations.starved.empty());
}

TEST_CASE("analysis::analysis: a graph with fewer iterations than it needs to mix is named starved") {
  std::string csv = header();
  for (const int workers : {16, 1008}) {
    for (int seed = 1; seed <= 2; ++seed) {
      Row r;
      r.label = "ring";
      r.graph = "ring";
      r.workers = workers;
      r.seed = seed;
      r.accuracy = 0.8;
      r.edges = workers;
      r.epochs = "10";
      r.iterations = std::ceil(600000.0 / (16.0 * workers));  // 2344 and 38
      r.spectral_gap = workers == 16 ? 0.076 : 1.9e-5;
      csv += csv_row(r);
    }
  }
  const SweepAnalysis a = analyze_sweep(parse_summary_csv(csv, "summary.csv"));
  REQUIRE(a.designs.size() == 1);
  REQUIRE(a.designs[0].starved.size() == 1);
  const StarvedGroup& s = a.designs[0].starved[0];
  CHECK(s.label == "ring");
  CHECK(s.workers == 1008);
  CHECK(s.iterations == 38);
  CHECK(s.mixing_iterations == dbench::testing::approx(std::log(1008.0) / 1.9e-5));
}

namespace {

// Centralized training and the exponential graph at 16 and 1008 workers, 10 epochs of 60,000 samples, with
// centralized accuracy `central1008` at 1008 workers (0.858 at 16).
std::string regime_sweep(double central1008) {
  std::string csv = header();
  for (const int workers : {16, 1008}) {
    for (const std::string label : {"centralized", "exponential", "ada"}) {
      for (int seed = 1; seed <= 2; ++seed) {
        Row r;
        r.label = label;
        r.algorithm = label == "centralized" ? "centralized" : "dpsgd";
        r.graph = label == "centralized" ? "allreduce" : label;
        r.workers = workers;
        r.seed = seed;
        r.accuracy = (workers == 16            ? 0.858
                      : label == "centralized" ? central1008
                                               : central1008 - 0.01) +
                     0.001 * (seed - 1);
        r.edges = workers * 5.0;
        r.epochs = "10";
        r.iterations = std::ceil(600000.0 / (16.0 * workers));  // 2344 and 38
        r.spectral_gap = 0.5;  // mixes in ln(1008) / 0.5 = 14 iterations: never starved here
        csv += csv_row(r);
      }
    }
  }
  return csv;
}

}  // namespace

TEST_CASE("analysis::analysis: the regime check fires where centralized training collapsed, and only there") {
  const SweepAnalysis starved = analyze_sweep(parse_summary_csv(regime_sweep(0.296), "summary.csv"));
  REQUIRE(starved.designs.size() == 1);
  const Design& d = starved.designs[0];
  REQUIRE(d.scales.size() == 2);
  CHECK(d.scales[0].samples_per_replica == dbench::testing::approx(60000.0 / 16));
  CHECK(d.scales[1].samples_per_replica == dbench::testing::approx(60000.0 / 1008));
  CHECK_FALSE(d.scales[0].collapsed());
  CHECK(d.scales[1].collapsed());
  CHECK(d.scales[1].centralized_drop_pp == dbench::testing::approx(100.0 * (0.8585 - 0.2965)));
  CHECK(d.collapsed_scales() == std::vector<int>{1008});
  CHECK(d.regime_unsound());
  const std::string warning = d.regime_warning();
  CAPTURE(warning);
  CHECK(warning.find("at 1008 workers centralized training reached 29.") != std::string::npos);
  CHECK(warning.find("56.2 pp below its accuracy at the smallest scale") != std::string::npos);
  CHECK(warning.find("60 samples per replica, 38 iterations") != std::string::npos);
  // Every verdict rests on the largest scale, and so does the Ada comparison there; not the one at 16.
  for (const Observation& o : starved.observations) {
    CHECK(o.regime.find("1008 workers: centralized training collapsed") != std::string::npos);
  }
  REQUIRE(starved.ada.size() == 2);
  for (const AdaComparison& c : starved.ada) {
    CHECK(c.regime.empty() == (c.workers == 16));
  }

  // 1 pp below the smallest scale: within the 3 pp a working large-batch recipe keeps, so nothing fires.
  const SweepAnalysis healthy = analyze_sweep(parse_summary_csv(regime_sweep(0.848), "summary.csv"));
  CHECK_FALSE(healthy.designs[0].regime_unsound());
  CHECK(healthy.designs[0].regime_warning().empty());
  CHECK(healthy.designs[0].scales[1].centralized_drop_pp == dbench::testing::approx(1.0));
  for (const Observation& o : healthy.observations) {
    CHECK(o.regime.empty());
  }
  for (const AdaComparison& c : healthy.ada) {
    CHECK(c.regime.empty());
  }
}
