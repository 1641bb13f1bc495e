// Correlations, their p-values and the study's verdicts. The p-values use Student's t distribution through
// the regularized incomplete beta function, evaluated as a continued fraction (modified Lentz method).
#include "experiments/analysis.hpp"

#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <map>
#include <numeric>
#include <set>

namespace dbench::experiments {
namespace {

constexpr double kSignificance = 0.05;   // p below this counts as a correlation
constexpr std::size_t kEnoughRuns = 20;  // with this many runs, p >= kSignificance counts as no correlation
constexpr double kMaterialPp = 1.0;      // accuracy differences of at least this many points count
constexpr double kMaterialEfficiency = 0.01;

struct Pairs {
  std::vector<double> x;
  std::vector<double> y;
};

Pairs finite_pairs(std::span<const double> x, std::span<const double> y) {
  if (x.size() != y.size()) {
    throw std::invalid_argument(
        fmt::format("paired samples differ in length ({} and {})", x.size(), y.size()));
  }
  Pairs pairs;
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (std::isfinite(x[i]) && std::isfinite(y[i])) {
      pairs.x.push_back(x[i]);
      pairs.y.push_back(y[i]);
    }
  }
  return pairs;
}

double mean_of(const std::vector<double>& v) {
  return std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
}

// Centred sums of squares and cross products, two-pass so that large offsets do not cancel digits.
struct Moments {
  double sxx = 0.0;
  double syy = 0.0;
  double sxy = 0.0;
  double mean_x = 0.0;
  double mean_y = 0.0;
};

Moments moments(const Pairs& p) {
  Moments m;
  m.mean_x = mean_of(p.x);
  m.mean_y = mean_of(p.y);
  for (std::size_t i = 0; i < p.x.size(); ++i) {
    const double dx = p.x[i] - m.mean_x;
    const double dy = p.y[i] - m.mean_y;
    m.sxx += dx * dx;
    m.syy += dy * dy;
    m.sxy += dx * dy;
  }
  return m;
}

// A variance this small relative to the values' magnitude is rounding, not spread.
bool constant(double sum_squares, double mean, std::size_t n) {
  return !(sum_squares > 1e-24 * std::max(1.0, mean * mean) * static_cast<double>(n));
}

Correlation correlation_of(const Pairs& p) {
  Correlation c;
  c.n = p.x.size();
  if (c.n < 3) {
    c.reason = fmt::format("{} pairs; at least 3 are needed", c.n);
    return c;
  }
  const Moments m = moments(p);
  if (constant(m.sxx, m.mean_x, c.n) || constant(m.syy, m.mean_y, c.n)) {
    c.reason =
        constant(m.sxx, m.mean_x, c.n) ? "the first variable is constant" : "the second variable is constant";
    return c;
  }
  c.coefficient = std::clamp(m.sxy / std::sqrt(m.sxx * m.syy), -1.0, 1.0);
  const double df = static_cast<double>(c.n - 2);
  const double one_minus_r2 = 1.0 - c.coefficient * c.coefficient;
  c.p_value =
      one_minus_r2 <= 0.0 ? 0.0 : student_t_two_sided_p(c.coefficient * std::sqrt(df / one_minus_r2), df);
  return c;
}

// Continued fraction of I_x(a, b) after its prefactor: 1 / (1 + d1 / (1 + d2 / (1 + ...))), with
// d_{2m+1} = -(a+m)(a+b+m) x / ((a+2m)(a+2m+1)) and d_{2m} = m (b-m) x / ((a+2m-1)(a+2m)); it converges fast
// for x < (a+1)/(a+b+2). Modified Lentz: f = product of C_j D_j, tiny values guard against division by 0.
double beta_continued_fraction(double a, double b, double x) {
  constexpr double kTiny = 1e-300;
  constexpr double kEpsilon = 1e-15;
  constexpr int kMaxTerms = 10000;
  double f = kTiny;
  double c = f;
  double d = 0.0;
  for (int j = 1; j <= kMaxTerms; ++j) {
    double numerator = 1.0;  // a_1 of the fraction; the later a_j are d_{j-1}
    if (j >= 2) {
      const int k = j - 1;
      const double m = static_cast<double>(k / 2);
      numerator = k % 2 == 1 ? -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))
                             : m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m));
    }
    d = 1.0 + numerator * d;
    d = std::abs(d) < kTiny ? kTiny : d;
    d = 1.0 / d;
    c = 1.0 + numerator / c;
    c = std::abs(c) < kTiny ? kTiny : c;
    const double delta = c * d;
    f *= delta;
    if (std::abs(delta - 1.0) < kEpsilon) {
      return f;
    }
  }
  return f;  // not converged to 1e-15 after kMaxTerms: still accurate far beyond what a p-value needs
}

}  // namespace

double regularized_incomplete_beta(double a, double b, double x) {
  if (!(a > 0.0) || !(b > 0.0) || !(x >= 0.0 && x <= 1.0)) {
    return kUndefined;
  }
  if (x == 0.0 || x == 1.0) {
    return x;
  }
  // The continued fraction converges quickly only below the mean; above it use I_x(a,b) = 1 - I_{1-x}(b,a).
  if (x > (a + 1.0) / (a + b + 2.0)) {
    return 1.0 - regularized_incomplete_beta(b, a, 1.0 - x);
  }
  const double log_prefactor =
      a * std::log(x) + b * std::log1p(-x) - (std::lgamma(a) + std::lgamma(b) - std::lgamma(a + b));
  return std::exp(log_prefactor) * beta_continued_fraction(a, b, x) / a;
}

double student_t_two_sided_p(double t, double degrees_of_freedom) {
  if (!(degrees_of_freedom > 0.0) || std::isnan(t)) {
    return kUndefined;
  }
  if (std::isinf(t)) {
    return 0.0;
  }
  // P(|T| >= |t|) = I_{df/(df+t^2)}(df/2, 1/2).
  return regularized_incomplete_beta(degrees_of_freedom / 2.0, 0.5,
                                     degrees_of_freedom / (degrees_of_freedom + t * t));
}

std::vector<double> average_ranks(std::span<const double> values) {
  std::vector<std::size_t> order(values.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t i, std::size_t j) { return values[i] < values[j]; });
  std::vector<double> ranks(values.size());
  for (std::size_t first = 0; first < order.size();) {
    std::size_t last = first + 1;
    while (last < order.size() && values[order[last]] == values[order[first]]) {
      ++last;
    }
    // Positions first..last-1 hold ranks first+1..last; each tied value gets their mean.
    const double rank = (static_cast<double>(first + 1) + static_cast<double>(last)) / 2.0;
    for (std::size_t k = first; k < last; ++k) {
      ranks[order[k]] = rank;
    }
    first = last;
  }
  return ranks;
}

Correlation pearson(std::span<const double> x, std::span<const double> y) {
  return correlation_of(finite_pairs(x, y));
}

Correlation spearman(std::span<const double> x, std::span<const double> y) {
  Pairs p = finite_pairs(x, y);
  p.x = average_ranks(p.x);
  p.y = average_ranks(p.y);
  return correlation_of(p);
}

LineFit fit_line(std::span<const double> x, std::span<const double> y) {
  const Pairs p = finite_pairs(x, y);
  LineFit fit;
  fit.n = p.x.size();
  if (fit.n < 3) {
    fit.reason = fmt::format("{} points; at least 3 are needed", fit.n);
    return fit;
  }
  const Moments m = moments(p);
  if (constant(m.sxx, m.mean_x, fit.n)) {
    fit.reason = "x is constant";
    return fit;
  }
  fit.slope = m.sxy / m.sxx;
  fit.intercept = m.mean_y - fit.slope * m.mean_x;
  if (!constant(m.syy, m.mean_y, fit.n)) {
    fit.r_squared = std::clamp(m.sxy * m.sxy / (m.sxx * m.syy), 0.0, 1.0);
  }
  return fit;
}

Spread spread(std::span<const double> values) {
  std::vector<double> finite;
  std::copy_if(values.begin(), values.end(), std::back_inserter(finite),
               [](double v) { return std::isfinite(v); });
  Spread s;
  s.n = finite.size();
  if (s.n == 0) {
    return s;
  }
  s.mean = mean_of(finite);
  if (s.n >= 2) {
    double sum = 0.0;
    for (double v : finite) {
      sum += (v - s.mean) * (v - s.mean);
    }
    s.stddev = std::sqrt(sum / static_cast<double>(s.n - 1));
  }
  return s;
}

int CsvTable::column(std::string_view name) const {
  const auto it = std::find(header.begin(), header.end(), name);
  return it == header.end() ? -1 : static_cast<int>(it - header.begin());
}

CsvTable parse_csv(std::string_view text, std::string_view source) {
  std::vector<std::vector<std::string>> records;
  std::vector<std::string> record;
  std::string field;
  bool quoted = false;
  bool any = false;  // whether the current record has begun
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char ch = text[i];
    if (quoted) {
      if (ch == '"' && i + 1 < text.size() && text[i + 1] == '"') {
        field.push_back('"');
        ++i;
      } else if (ch == '"') {
        quoted = false;
      } else {
        field.push_back(ch);
      }
      continue;
    }
    if (ch == '"') {
      quoted = true;
      any = true;
    } else if (ch == ',') {
      record.push_back(std::move(field));
      field.clear();
      any = true;
    } else if (ch == '\n' || ch == '\r') {
      if (ch == '\r' && i + 1 < text.size() && text[i + 1] == '\n') {
        ++i;
      }
      if (any || !field.empty()) {
        record.push_back(std::move(field));
        records.push_back(std::move(record));
      }
      field.clear();
      record.clear();
      any = false;
    } else {
      field.push_back(ch);
      any = true;
    }
  }
  if (quoted) {
    throw AnalysisError(fmt::format("{}: a quoted field is not closed", source));
  }
  if (any || !field.empty()) {
    record.push_back(std::move(field));
    records.push_back(std::move(record));
  }
  if (records.empty()) {
    throw AnalysisError(fmt::format("{} is empty (no header line)", source));
  }
  CsvTable table;
  table.header = std::move(records.front());
  for (std::size_t r = 1; r < records.size(); ++r) {
    if (records[r].size() > table.header.size()) {
      throw AnalysisError(fmt::format("{}: line {} has {} fields, the header {}", source, r + 1,
                                      records[r].size(), table.header.size()));
    }
    records[r].resize(table.header.size());
    table.rows.push_back(std::move(records[r]));
  }
  return table;
}

std::span<const std::string_view> required_summary_columns() {
  static constexpr std::array<std::string_view, 28> kColumns = {
      "run",
      "status",
      "label",
      "algorithm",
      "graph",
      "workers",
      "seed",
      "final_test_accuracy",
      "best_test_accuracy",
      "final_test_loss",
      "iterations",
      "edges",
      "mean_degree",
      "spectral_gap",
      "norm_variance_mean",
      "norm_variance_final",
      "consensus_distance_mean",
      "consensus_distance_final",
      "target_accuracy",
      "iterations_to_target",
      "simulated_time_to_target_s",
      "seconds_per_iteration",
      "samples_per_second",
      "scaling_efficiency",
      "bytes_per_gpu_per_iteration",
      "bytes_per_gpu",
      "simulated_seconds",
      "wall_seconds",
  };
  return kColumns;
}

namespace {

// The numeric columns of the contract and where each lands in a SummaryRow.
struct NumberColumn {
  std::string_view name;
  double SummaryRow::*member;
};

constexpr std::array<NumberColumn, 21> kNumberColumns = {{
    {"seed", &SummaryRow::seed},
    {"final_test_accuracy", &SummaryRow::final_test_accuracy},
    {"best_test_accuracy", &SummaryRow::best_test_accuracy},
    {"final_test_loss", &SummaryRow::final_test_loss},
    {"iterations", &SummaryRow::iterations},
    {"edges", &SummaryRow::edges},
    {"mean_degree", &SummaryRow::mean_degree},
    {"spectral_gap", &SummaryRow::spectral_gap},
    {"norm_variance_mean", &SummaryRow::norm_variance_mean},
    {"norm_variance_final", &SummaryRow::norm_variance_final},
    {"consensus_distance_mean", &SummaryRow::consensus_distance_mean},
    {"consensus_distance_final", &SummaryRow::consensus_distance_final},
    {"target_accuracy", &SummaryRow::target_accuracy},
    {"iterations_to_target", &SummaryRow::iterations_to_target},
    {"simulated_time_to_target_s", &SummaryRow::simulated_time_to_target_s},
    {"seconds_per_iteration", &SummaryRow::seconds_per_iteration},
    {"samples_per_second", &SummaryRow::samples_per_second},
    {"scaling_efficiency", &SummaryRow::scaling_efficiency},
    {"bytes_per_gpu_per_iteration", &SummaryRow::bytes_per_gpu_per_iteration},
    {"bytes_per_gpu", &SummaryRow::bytes_per_gpu},
    {"simulated_seconds", &SummaryRow::simulated_seconds},
}};

double parse_number(const std::string& field, std::string_view source, std::size_t line,
                    std::string_view column) {
  std::string_view text(field);
  while (!text.empty() && text.front() == ' ') {
    text.remove_prefix(1);
  }
  while (!text.empty() && text.back() == ' ') {
    text.remove_suffix(1);
  }
  if (text.empty() || text == "nan" || text == "NaN") {
    return kUndefined;
  }
  double value = 0.0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size()) {
    throw AnalysisError(fmt::format("{}: line {}: column '{}' holds '{}', which is not a number", source,
                                    line, column, field));
  }
  return value;
}

}  // namespace

std::vector<SummaryRow> parse_summary_csv(std::string_view text, std::string_view source) {
  const CsvTable table = parse_csv(text, source);
  for (std::string_view name : required_summary_columns()) {
    if (table.column(name) < 0) {
      throw AnalysisError(fmt::format("{} lacks the column '{}'", source, name));
    }
  }
  const auto text_column = [&](std::string_view name) {
    return static_cast<std::size_t>(table.column(name));
  };
  std::set<std::string_view> contract(required_summary_columns().begin(), required_summary_columns().end());
  std::vector<SummaryRow> runs;
  for (std::size_t r = 0; r < table.rows.size(); ++r) {
    const auto& row = table.rows[r];
    const std::size_t line = r + 2;
    SummaryRow run;
    run.run = row[text_column("run")];
    run.status = row[text_column("status")];
    run.label = row[text_column("label")];
    run.algorithm = row[text_column("algorithm")];
    run.graph = row[text_column("graph")];
    if (run.status != "done" && run.status != "failed" && run.status != "pending") {
      throw AnalysisError(
          fmt::format("{}: line {}: status '{}' is not done, failed or pending", source, line, run.status));
    }
    const double workers = parse_number(row[text_column("workers")], source, line, "workers");
    if (run.done() && !(workers >= 1.0 && workers == std::floor(workers))) {
      throw AnalysisError(
          fmt::format("{}: line {}: a done run needs a positive whole number of workers, not '{}'", source,
                      line, row[text_column("workers")]));
    }
    run.workers = std::isfinite(workers) ? static_cast<int>(workers) : 0;
    for (const auto& column : kNumberColumns) {
      run.*column.member = parse_number(row[text_column(column.name)], source, line, column.name);
    }
    run.wall_seconds = parse_number(row[text_column("wall_seconds")], source, line, "wall_seconds");
    for (std::size_t c = 0; c < table.header.size(); ++c) {
      if (!contract.contains(table.header[c])) {
        run.axes.emplace_back(table.header[c], row[c]);
      }
    }
    runs.push_back(std::move(run));
  }
  return runs;
}

std::string_view verdict_name(Verdict verdict) {
  switch (verdict) {
    case Verdict::holds:
      return "holds";
    case Verdict::does_not_hold:
      return "does not hold";
    case Verdict::inconclusive:
      break;
  }
  return "inconclusive here";
}

std::vector<const SummaryRow*> runs_at(const std::vector<SummaryRow>& runs, int workers) {
  std::vector<const SummaryRow*> selected;
  for (const auto& run : runs) {
    if (run.done() && (workers == 0 || run.workers == workers)) {
      selected.push_back(&run);
    }
  }
  return selected;
}

namespace {

template <typename Value>
std::vector<double> column_of(const std::vector<const SummaryRow*>& runs, Value value) {
  std::vector<double> out;
  out.reserve(runs.size());
  for (const SummaryRow* run : runs) {
    out.push_back(value(*run));
  }
  return out;
}

std::vector<double> member_of(const std::vector<const SummaryRow*>& runs, double SummaryRow::*member) {
  return column_of(runs, [member](const SummaryRow& r) { return r.*member; });
}

GroupStats group_stats(const std::vector<const SummaryRow*>& runs) {
  GroupStats g;
  const SummaryRow& first = *runs.front();
  g.label = first.label;
  g.algorithm = first.algorithm;
  g.graph = first.graph;
  g.workers = first.workers;
  g.runs = runs.size();
  g.target_accuracy = spread(member_of(runs, &SummaryRow::target_accuracy)).mean;
  g.final_accuracy = spread(member_of(runs, &SummaryRow::final_test_accuracy));
  g.best_accuracy = spread(member_of(runs, &SummaryRow::best_test_accuracy));
  g.iterations_to_target = spread(member_of(runs, &SummaryRow::iterations_to_target));
  g.reached_target = g.iterations_to_target.n;
  g.simulated_time_to_target_s = spread(member_of(runs, &SummaryRow::simulated_time_to_target_s));
  g.bytes_per_gpu = spread(member_of(runs, &SummaryRow::bytes_per_gpu));
  g.bytes_per_gpu_per_iteration = spread(member_of(runs, &SummaryRow::bytes_per_gpu_per_iteration));
  g.edges = spread(member_of(runs, &SummaryRow::edges));
  g.spectral_gap = spread(member_of(runs, &SummaryRow::spectral_gap));
  g.norm_variance_mean = spread(member_of(runs, &SummaryRow::norm_variance_mean));
  g.norm_variance_final = spread(member_of(runs, &SummaryRow::norm_variance_final));
  g.consensus_distance_mean = spread(member_of(runs, &SummaryRow::consensus_distance_mean));
  g.samples_per_second = spread(member_of(runs, &SummaryRow::samples_per_second));
  g.scaling_efficiency = spread(member_of(runs, &SummaryRow::scaling_efficiency));
  g.seconds_per_iteration = spread(member_of(runs, &SummaryRow::seconds_per_iteration));
  return g;
}

AccuracyCorrelation correlate(const std::vector<const SummaryRow*>& runs, std::string quantity,
                              double SummaryRow::*member, bool log_for_pearson) {
  AccuracyCorrelation c;
  const std::vector<double> accuracy = member_of(runs, &SummaryRow::final_test_accuracy);
  const std::vector<double> values = member_of(runs, member);
  std::vector<double> pearson_values = values;
  if (log_for_pearson) {
    for (double& v : pearson_values) {
      v = v > 0.0 ? std::log10(v) : kUndefined;
    }
  }
  c.pearson_on = log_for_pearson ? fmt::format("log10({})", quantity) : quantity;
  c.quantity = std::move(quantity);
  c.pearson = pearson(pearson_values, accuracy);
  c.spearman = spearman(values, accuracy);
  return c;
}

ScaleAnalysis analyze_scale(const std::vector<SummaryRow>& runs, int workers) {
  const auto at = runs_at(runs, workers);
  ScaleAnalysis s;
  s.workers = workers;
  s.runs = at.size();
  s.edges = correlate(at, "edges", &SummaryRow::edges, true);
  s.norm_variance_mean = correlate(at, "norm_variance_mean", &SummaryRow::norm_variance_mean, false);
  s.norm_variance_final = correlate(at, "norm_variance_final", &SummaryRow::norm_variance_final, false);
  s.spectral_gap = correlate(at, "spectral_gap", &SummaryRow::spectral_gap, false);
  const std::vector<double> accuracy = member_of(at, &SummaryRow::final_test_accuracy);
  const std::vector<double> log_edges =
      column_of(at, [](const SummaryRow& r) { return r.edges > 0.0 ? std::log10(r.edges) : kUndefined; });
  s.accuracy_vs_log10_edges = fit_line(log_edges, accuracy);
  s.accuracy_vs_norm_variance_mean = fit_line(member_of(at, &SummaryRow::norm_variance_mean), accuracy);
  return s;
}

std::string format_correlation(const Correlation& c, std::string_view symbol) {
  if (!c.defined()) {
    return fmt::format("{} undefined ({})", symbol, c.reason);
  }
  return fmt::format("{} = {:.3f} (p = {:.3g}, n = {})", symbol, c.coefficient, c.p_value, c.n);
}

// Rule shared by observations 2 and 3: the sign of Spearman's rho at the largest scale, significant at 5 %.
Verdict correlation_verdict(const Correlation& c, bool expect_positive) {
  if (!c.defined()) {
    return Verdict::inconclusive;
  }
  const bool expected_sign = expect_positive ? c.coefficient > 0.0 : c.coefficient < 0.0;
  if (c.p_value < kSignificance) {
    return expected_sign ? Verdict::holds : Verdict::does_not_hold;
  }
  return c.n >= kEnoughRuns ? Verdict::does_not_hold : Verdict::inconclusive;
}

const GroupStats* find_group(const std::vector<GroupStats>& groups, const std::string& label, int workers) {
  for (const auto& g : groups) {
    if (g.label == label && g.workers == workers) {
      return &g;
    }
  }
  return nullptr;
}

bool static_decentralized(const GroupStats& g) {
  return !g.centralized() && !g.adaptive();
}

Observation scalability_observation(const SweepAnalysis& a) {
  Observation o;
  o.claim =
      "Decentralized training shows the same scalability and generality problems as centralized training as "
      "the scale grows";
  o.rule = fmt::format(
      "From the smallest to the largest scale, over the static decentralized labels present at both: holds "
      "if "
      "their mean final accuracy falls, or their gap to centralized training widens, by more than the "
      "threshold max({0:g} pp, twice the largest seed standard deviation among the groups compared), and the "
      "mean scaling efficiency falls by at least {1:g}; does not hold if none of the three happens and the "
      "threshold is {0:g} pp (seeds agree well enough for a {0:g} pp change to show); otherwise, or with one "
      "scale, inconclusive",
      kMaterialPp, kMaterialEfficiency);
  if (a.scales.size() < 2) {
    o.evidence = fmt::format("one scale only ({} workers)", a.scales.empty() ? 0 : a.scales.front());
    return o;
  }
  const int small = a.scales.front();
  const int large = a.scales.back();
  std::vector<double> small_accuracy, large_accuracy, small_efficiency, large_efficiency;
  std::vector<std::string> labels;
  double seed_spread_pp = 0.0;  // largest seed standard deviation among the groups compared
  const auto note_spread = [&](const GroupStats& g) {
    if (std::isfinite(g.final_accuracy.stddev)) {
      seed_spread_pp = std::max(seed_spread_pp, 100.0 * g.final_accuracy.stddev);
    }
  };
  for (const auto& label : a.labels) {
    const GroupStats* s = find_group(a.groups, label, small);
    const GroupStats* l = find_group(a.groups, label, large);
    if (s == nullptr || l == nullptr) {
      continue;
    }
    small_efficiency.push_back(s->scaling_efficiency.mean);
    large_efficiency.push_back(l->scaling_efficiency.mean);
    if (static_decentralized(*s)) {
      small_accuracy.push_back(s->final_accuracy.mean);
      large_accuracy.push_back(l->final_accuracy.mean);
      labels.push_back(label);
      note_spread(*s);
      note_spread(*l);
    }
  }
  if (labels.empty()) {
    o.evidence = fmt::format("no static decentralized label ran at both {} and {} workers", small, large);
    return o;
  }
  const auto centralized = std::find_if(a.labels.begin(), a.labels.end(), [&](const std::string& label) {
    const GroupStats* s = find_group(a.groups, label, small);
    const GroupStats* l = find_group(a.groups, label, large);
    return s != nullptr && l != nullptr && s->centralized();
  });
  if (centralized != a.labels.end()) {
    note_spread(*find_group(a.groups, *centralized, small));
    note_spread(*find_group(a.groups, *centralized, large));
  }
  const double threshold_pp = std::max(kMaterialPp, 2.0 * seed_spread_pp);
  const double accuracy_change_pp = 100.0 * (spread(large_accuracy).mean - spread(small_accuracy).mean);
  const double efficiency_change = spread(large_efficiency).mean - spread(small_efficiency).mean;
  const bool accuracy_falls = accuracy_change_pp < -threshold_pp;
  const bool efficiency_falls = efficiency_change <= -kMaterialEfficiency;
  o.evidence =
      fmt::format("{} -> {} workers, labels {}: decentralized accuracy {:.2f}% -> {:.2f}% ({:+.2f} pp)",
                  small, large, fmt::join(labels, ", "), 100.0 * spread(small_accuracy).mean,
                  100.0 * spread(large_accuracy).mean, accuracy_change_pp);
  bool gap_widens = false;
  if (centralized != a.labels.end()) {
    const double small_gap_pp = 100.0 * (find_group(a.groups, *centralized, small)->final_accuracy.mean -
                                         spread(small_accuracy).mean);
    const double large_gap_pp = 100.0 * (find_group(a.groups, *centralized, large)->final_accuracy.mean -
                                         spread(large_accuracy).mean);
    gap_widens = large_gap_pp - small_gap_pp > threshold_pp;
    o.evidence += fmt::format("; gap to {} {:.2f} pp -> {:.2f} pp", *centralized, small_gap_pp, large_gap_pp);
  } else {
    o.evidence += "; no centralized label at both scales (gap not measured)";
  }
  o.evidence += fmt::format("; threshold {:.2f} pp (largest seed standard deviation {:.2f} pp)", threshold_pp,
                            seed_spread_pp);
  o.evidence += fmt::format("; mean scaling efficiency {:.3f} -> {:.3f}", spread(small_efficiency).mean,
                            spread(large_efficiency).mean);
  const std::vector<const SummaryRow*> decentralized = [&] {
    std::vector<const SummaryRow*> out;
    for (const auto& run : a.runs) {
      if (!run.centralized() && !run.adaptive()) {
        out.push_back(&run);
      }
    }
    return out;
  }();
  const Correlation trend =
      spearman(column_of(decentralized, [](const SummaryRow& r) { return static_cast<double>(r.workers); }),
               member_of(decentralized, &SummaryRow::final_test_accuracy));
  o.evidence += fmt::format("; decentralized accuracy against workers: {}", format_correlation(trend, "rho"));
  if ((accuracy_falls || gap_widens) && efficiency_falls) {
    o.verdict = Verdict::holds;
  } else if (!accuracy_falls && !gap_widens && !efficiency_falls && threshold_pp == kMaterialPp) {
    o.verdict = Verdict::does_not_hold;
  }
  return o;
}

Observation correlation_observation(const SweepAnalysis& a, std::string claim, std::string_view quantity,
                                    bool expect_positive, AccuracyCorrelation ScaleAnalysis::*member) {
  Observation o;
  o.claim = std::move(claim);
  o.rule = fmt::format(
      "At the largest scale: holds if Spearman's rho between final accuracy and {0} is {1} with p < {2:g}; "
      "does "
      "not hold if rho has the other sign with p < {2:g}, or if p >= {2:g} with at least {3} runs; otherwise "
      "inconclusive",
      quantity, expect_positive ? "positive" : "negative", kSignificance, kEnoughRuns);
  std::vector<std::string> parts;
  for (auto it = a.per_scale.rbegin(); it != a.per_scale.rend(); ++it) {
    const AccuracyCorrelation& c = (*it).*member;
    parts.push_back(fmt::format("{} workers: {}, Pearson on {} {}", it->workers,
                                format_correlation(c.spearman, "rho"), c.pearson_on,
                                format_correlation(c.pearson, "r")));
  }
  o.evidence = fmt::format("{}", fmt::join(parts, "; "));
  if (!a.per_scale.empty()) {
    o.verdict = correlation_verdict((a.per_scale.back().*member).spearman, expect_positive);
  }
  return o;
}

AdaComparison compare_ada(const SweepAnalysis& a, const GroupStats& ada) {
  AdaComparison c;
  c.label = ada.label;
  c.workers = ada.workers;
  c.accuracy = ada.final_accuracy.mean;
  c.iterations_to_target = ada.iterations_to_target.mean;
  c.simulated_time_to_target_s = ada.simulated_time_to_target_s.mean;
  const GroupStats* centralized = nullptr;
  const GroupStats* best_static = nullptr;
  const GroupStats* fastest_static = nullptr;
  for (const auto& g : a.groups) {
    if (g.workers != ada.workers) {
      continue;
    }
    if (g.centralized() && centralized == nullptr) {
      centralized = &g;
    }
    if (static_decentralized(g)) {
      if (best_static == nullptr || g.final_accuracy.mean > best_static->final_accuracy.mean) {
        best_static = &g;
      }
      if (std::isfinite(g.iterations_to_target.mean) &&
          (fastest_static == nullptr ||
           g.iterations_to_target.mean < fastest_static->iterations_to_target.mean)) {
        fastest_static = &g;
      }
    }
  }
  if (centralized != nullptr) {
    c.vs_centralized_pp = 100.0 * (ada.final_accuracy.mean - centralized->final_accuracy.mean);
    c.centralized_iterations_to_target = centralized->iterations_to_target.mean;
    c.centralized_simulated_time_to_target_s = centralized->simulated_time_to_target_s.mean;
    if (centralized->bytes_per_gpu.mean > 0.0) {
      c.bytes_per_gpu_vs_centralized = ada.bytes_per_gpu.mean / centralized->bytes_per_gpu.mean;
    }
  }
  if (best_static != nullptr) {
    c.best_static_label = best_static->label;
    c.vs_best_static_pp = 100.0 * (ada.final_accuracy.mean - best_static->final_accuracy.mean);
  }
  if (fastest_static != nullptr) {
    c.fastest_static_label = fastest_static->label;
    c.best_static_iterations_to_target = fastest_static->iterations_to_target.mean;
  }
  return c;
}

}  // namespace

SweepAnalysis analyze_sweep(const std::vector<SummaryRow>& rows) {
  SweepAnalysis a;
  for (const auto& run : rows) {
    if (run.done()) {
      ++a.done;
      a.runs.push_back(run);
    } else if (run.status == "failed") {
      ++a.failed;
    } else {
      ++a.pending;
    }
  }
  if (a.runs.empty()) {
    throw AnalysisError(
        fmt::format("no run is done yet ({} pending, {} failed): nothing to analyze", a.pending, a.failed));
  }
  std::set<int> scales;
  std::vector<std::string> centralized, middle, adaptive;
  for (const auto& run : a.runs) {
    scales.insert(run.workers);
    auto& bucket = run.centralized() ? centralized : run.adaptive() ? adaptive : middle;
    if (std::find(bucket.begin(), bucket.end(), run.label) == bucket.end()) {
      bucket.push_back(run.label);
    }
  }
  a.scales.assign(scales.begin(), scales.end());
  for (auto* bucket : {&centralized, &middle, &adaptive}) {
    for (const auto& label : *bucket) {
      if (std::find(a.labels.begin(), a.labels.end(), label) == a.labels.end()) {
        a.labels.push_back(label);
      }
    }
  }
  for (int workers : a.scales) {
    for (const auto& label : a.labels) {
      std::vector<const SummaryRow*> members;
      for (const auto& run : a.runs) {
        if (run.workers == workers && run.label == label) {
          members.push_back(&run);
        }
      }
      if (!members.empty()) {
        a.groups.push_back(group_stats(members));
      }
    }
    a.per_scale.push_back(analyze_scale(a.runs, workers));
  }
  a.observations[0] = scalability_observation(a);
  a.observations[1] = correlation_observation(
      a, "Accuracy is correlated with the number of connections in the communication graph", "edges", true,
      &ScaleAnalysis::edges);
  a.observations[2] = correlation_observation(
      a, "Accuracy is very sensitive to the variance of parameter tensors across replicas",
      "norm_variance_mean (higher variance, lower accuracy)", false, &ScaleAnalysis::norm_variance_mean);
  for (const auto& g : a.groups) {
    if (g.adaptive()) {
      a.ada.push_back(compare_ada(a, g));
    }
  }
  return a;
}

}  // namespace dbench::experiments
