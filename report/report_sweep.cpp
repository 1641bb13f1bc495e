// The report of a sweep: what summary.csv's analysis says, in tables and plots, with the mean curves over
// seeds of each label and scale read from runs/.
#include "report/report_sweep.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>

#include "analysis/analysis.hpp"
#include "report/report_curves.hpp"
#include "report/report_plots.hpp"
#include "report/report_timing.hpp"
#include "report/sweep_appendix.hpp"
#include "results/results_tree.hpp"
#include "results/run_csv.hpp"

namespace dbench::report {
namespace fs = std::filesystem;
using analysis::AccuracyCorrelation;
using analysis::Correlation;
using analysis::GroupStats;
using analysis::kUndefined;
using analysis::Observation;
using analysis::ScaleAnalysis;
using analysis::SweepAnalysis;
using results::ResultsTree;
using results::ResultsTreeError;
using results::SummaryRow;
namespace {

// The names (file stems under plots/) of the plots drawn for each scale.
struct SweepPlotNames {
  static std::string accuracy_iteration(int w) { return fmt::format("accuracy-iteration-w{}", w); }
  static std::string accuracy_time(int w) { return fmt::format("accuracy-time-w{}", w); }
  static std::string norm_variance(int w) { return fmt::format("norm-variance-w{}", w); }
  static std::string accuracy_edges(int w) { return fmt::format("accuracy-edges-w{}", w); }
  static std::string accuracy_norm_variance(int w) { return fmt::format("accuracy-norm-variance-w{}", w); }
  /// Ada's schedule and signal; `k` numbers the Ada comparisons (one per Ada label and scale).
  static std::string ada_schedule(std::size_t k, int w) { return fmt::format("ada-schedule-{}-w{}", k, w); }
};

// Builds the document and the plots from the analysis of summary.csv and the done runs' curves.
class SweepReport {
 public:
  SweepReport(const ResultsTree& tree, SweepAnalysis analysis)
      : tree_(tree),
        dir_(tree.root()),
        a_(std::move(analysis)),
        doc_(fmt::format("DBench sweep report: {}", dir_.filename().string())) {
    for (std::size_t i = 0; i < a_.labels.size(); ++i) {
      colors_[a_.labels[i]] = std::string(kPalette[i % kPalette.size()]);
    }
    read_curves();
    sweep_toml_ = read_sweep_toml(tree_, left_out_);
  }

  /// The done runs whose files were not read and the files left out, with the reasons.
  const std::vector<LeftOut>& left_out() const { return left_out_; }

  Document build(Plots& plots) {
    add_plots(plots);
    overview();
    regime_check();
    headline(plots);
    observations(plots);
    ada(plots);
    scaling(plots);
    for (auto it = a_.per_scale.rbegin(); it != a_.per_scale.rend(); ++it) {
      scale_section(*it, plots);
    }
    appendix();
    return std::move(doc_);
  }

 private:
  // A run whose files cannot be read, or must not be (its run cell or a symlink leads out of DIR), is left
  // out of the curves and named with the reason; its summary.csv numbers still count.
  void read_curves() {
    for (const auto& g : a_.groups) {
      std::vector<Curve> runs;
      for (const auto& run : a_.runs) {
        if (run.label != g.label || run.workers != g.workers) {
          continue;
        }
        try {
          runs.push_back(run_curve(run.run));
        } catch (const std::runtime_error& e) {
          left_out_.push_back({run.run, e.what()});
        }
      }
      if (!runs.empty()) {
        curves_[{g.label, g.workers}] = mean_curve(runs);
      }
    }
  }

  // The curve from runs/<id>/; throws ReportError, ResultsTreeError or results::CsvError saying why there is
  // none.
  Curve run_curve(const std::string& id) const {
    if (id.empty()) {
      throw ReportError("its run cell in summary.csv is empty");
    }
    const fs::path run_dir = fs::path("runs") / id;  // an absolute id replaces runs/, and resolve refuses it
    if (!tree_.is_directory(run_dir)) {
      throw ReportError(fmt::format("no directory {}", tree_.shown(run_dir).string()));
    }
    if (!tree_.exists(run_dir / "metrics.csv")) {
      throw ReportError(fmt::format("no metrics.csv in {}", tree_.shown(run_dir).string()));
    }
    return read_curve(tree_, run_dir);
  }

  std::vector<const GroupStats*> groups_at(int workers) const {
    std::vector<const GroupStats*> out;
    for (const auto& g : a_.groups) {
      if (g.workers == workers) {
        out.push_back(&g);
      }
    }
    return out;
  }

  const GroupStats* group(const std::string& label, int workers) const {
    for (const auto& g : a_.groups) {
      if (g.label == label && g.workers == workers) {
        return &g;
      }
    }
    return nullptr;
  }

  Series label_series(const std::string& label, std::string style = "linespoints") const {
    Series s;
    s.title = label;
    s.color = colors_.at(label);
    s.style = std::move(style);
    return s;
  }

  void add_plots(Plots& plots) {
    for (int w : a_.scales) {
      PlotSpec by_iteration{
          SweepPlotNames::accuracy_iteration(w),
          fmt::format("Test accuracy of the averaged model, {} workers (mean over seeds)", w), "iteration",
          "test accuracy (%)"};
      PlotSpec by_time{SweepPlotNames::accuracy_time(w),
                       fmt::format("Test accuracy against simulated time, {} workers (mean over seeds)", w),
                       "simulated time (s)", "test accuracy (%)"};
      PlotSpec variance{SweepPlotNames::norm_variance(w),
                        fmt::format("Cross-replica variance of parameter-tensor norms, {} workers", w),
                        "iteration", "norm variance (sum over tensors)"};
      variance.log_y = true;
      for (const GroupStats* g : groups_at(w)) {
        const auto curve = curves_.find({g->label, w});
        if (curve == curves_.end()) {
          continue;
        }
        const Curve& c = curve->second;
        by_iteration.series.push_back(label_series(g->label));
        by_iteration.series.back().points = zip(c.iteration, c.accuracy, 100.0);
        by_time.series.push_back(label_series(g->label));
        by_time.series.back().points = zip(c.time_s, c.accuracy, 100.0);
        variance.series.push_back(label_series(g->label));
        variance.series.back().points = zip(c.iteration, c.norm_variance);
      }
      drop_rounding_noise(variance.series);
      plots.add(std::move(by_iteration));
      plots.add(std::move(by_time));
      plots.add(std::move(variance));

      const ScaleAnalysis& scale = *std::find_if(a_.per_scale.begin(), a_.per_scale.end(),
                                                 [&](const ScaleAnalysis& s) { return s.workers == w; });
      PlotSpec edges{SweepPlotNames::accuracy_edges(w),
                     fmt::format("Final accuracy against graph edges, {} workers (one point per run)", w),
                     "undirected edges (centralized: complete graph)", "final test accuracy (%)"};
      edges.log_x = true;
      PlotSpec variance_scatter{
          SweepPlotNames::accuracy_norm_variance(w),
          fmt::format("Final accuracy against mean norm variance, {} workers (one point per run)", w),
          "norm variance, mean over evaluations", "final test accuracy (%)"};
      for (const GroupStats* g : groups_at(w)) {
        Series e = label_series(g->label, "points");
        Series v = label_series(g->label, "points");
        for (const SummaryRow* run : analysis::runs_at(a_.runs, w)) {
          if (run->label == g->label) {
            e.points.emplace_back(run->edges, 100.0 * run->final_test_accuracy);
            v.points.emplace_back(run->norm_variance_mean, 100.0 * run->final_test_accuracy);
          }
        }
        edges.series.push_back(std::move(e));
        variance_scatter.series.push_back(std::move(v));
      }
      add_fit_line(edges, scale.accuracy_vs_log10_edges, true);
      add_fit_line(variance_scatter, scale.accuracy_vs_norm_variance_mean, false);
      plots.add(std::move(edges));
      plots.add(std::move(variance_scatter));
    }

    PlotSpec accuracy{"accuracy-workers", "Final test accuracy against workers (mean over seeds)", "workers",
                      "final test accuracy (%)"};
    PlotSpec throughput{"throughput-workers", "Simulated throughput against workers", "workers",
                        "samples per second"};
    PlotSpec efficiency{"efficiency-workers", "Scaling efficiency against workers (1 = linear from one GPU)",
                        "workers", "scaling efficiency"};
    accuracy.log_x = throughput.log_x = throughput.log_y = efficiency.log_x = true;
    for (auto* spec : {&accuracy, &throughput, &efficiency}) {
      spec->xtics.assign(a_.scales.begin(), a_.scales.end());
      // Autoscale would stretch a log axis to the next power of ten; leave a margin around the scales
      // instead.
      spec->xrange = {a_.scales.front() / 1.4, a_.scales.back() * 1.4};
    }
    for (const auto& label : a_.labels) {
      Series acc = label_series(label);
      Series rate = label_series(label);
      Series eff = label_series(label);
      for (int w : a_.scales) {
        if (const GroupStats* g = group(label, w)) {
          acc.points.emplace_back(w, 100.0 * g->final_accuracy.mean);
          rate.points.emplace_back(w, g->samples_per_second.mean);
          eff.points.emplace_back(w, g->scaling_efficiency.mean);
        }
      }
      accuracy.series.push_back(std::move(acc));
      throughput.series.push_back(std::move(rate));
      efficiency.series.push_back(std::move(eff));
    }
    PlotSpec to_target{"time-to-target-workers", "Simulated time to the target accuracy against workers",
                       "workers", "simulated time to target (s)"};
    to_target.log_x = to_target.log_y = true;
    to_target.xtics.assign(a_.scales.begin(), a_.scales.end());
    to_target.xrange = {a_.scales.front() / 1.4, a_.scales.back() * 1.4};
    for (const auto& label : a_.labels) {
      Series time = label_series(label);
      for (int w : a_.scales) {
        const GroupStats* g = group(label, w);
        if (g != nullptr && g->simulated_time_to_target_s.mean > 0.0) {
          time.points.emplace_back(w, g->simulated_time_to_target_s.mean);
        }
      }
      if (!time.points.empty()) {
        to_target.series.push_back(std::move(time));
      }
    }
    plots.add(std::move(accuracy));
    plots.add(std::move(throughput));
    plots.add(std::move(efficiency));
    if (!to_target.series.empty()) {
      plots.add(std::move(to_target));
    }
    for (std::size_t k = 0; k < a_.ada.size(); ++k) {
      add_ada_schedule(plots, k);
    }
  }

  // The first done run of an Ada group: the rung it used over time (iterations between global averages) and
  // the spread ratio it measured, from its schedule.csv.
  void add_ada_schedule(Plots& plots, std::size_t k) {
    const analysis::AdaComparison& c = a_.ada[k];
    const auto run = std::find_if(a_.runs.begin(), a_.runs.end(), [&](const SummaryRow& r) {
      return r.label == c.label && r.workers == c.workers;
    });
    if (run == a_.runs.end()) {
      return;
    }
    Series period{"iterations between global averages (the rung's H)", {}, "lines", "#0072B2"};
    Series signal{"spread ratio D_H / D_1 Ada measured", {}, "points", "#D55E00"};
    try {
      const fs::path file = fs::path("runs") / run->run / "schedule.csv";
      double last_average = -1.0;
      for (const auto& row : results::read_schedule_csv(tree_.read(file), tree_.shown(file).string())) {
        const auto iteration = static_cast<double>(row.iteration);
        if (row.graph == "global-average") {
          period.points.emplace_back(iteration, iteration - last_average);
          last_average = iteration;
        }
        signal.points.emplace_back(iteration, row.signal);
      }
    } catch (const std::runtime_error& e) {
      left_out_.push_back({run->run, e.what()});
      return;
    }
    PlotSpec spec{SweepPlotNames::ada_schedule(k, c.workers),
                  fmt::format("{}, {} workers (run {}): its rung and its signal over the run", c.label,
                              c.workers, run->run),
                  "iteration", "iterations between averages; spread ratio"};
    spec.log_y = true;
    spec.series.push_back(std::move(period));
    spec.series.push_back(std::move(signal));
    plots.add(std::move(spec));
  }

  // The plots in `names` that exist.
  static std::vector<std::string> existing(const Plots& plots, std::vector<std::string> names) {
    std::erase_if(names, [&](const std::string& n) { return !plots.has(n); });
    return names;
  }

  void overview() {
    const double target = a_.groups.empty() ? kUndefined : a_.groups.front().target_accuracy;
    doc_.paragraph(fmt::format(
        "{} runs in {}: {} done, {} failed, {} pending. Scales: {} workers. Labels: {}. Target accuracy for "
        "iterations and time to target: {}. Accuracy is the test accuracy of the averaged model at the last "
        "evaluation, averaged over seeds for each label and scale; correlations use every done run of a "
        "scale "
        "as one point.",
        a_.done + a_.failed + a_.pending, dir_.string(), a_.done, a_.failed, a_.pending,
        fmt::join(a_.scales, ", "), fmt::join(a_.labels, ", "), percent(target)));
    for (const auto& d : a_.designs) {
      doc_.paragraph(fmt::format("Design{}: {}, {} done runs: {}. Per scale: {}.",
                                 a_.designs.size() > 1 ? fmt::format(" [{}]", d.name) : std::string(), d.name,
                                 d.runs, d.description, d.per_scale()));
    }
    if (!left_out_.empty()) {
      doc_.heading("Left out");
      doc_.paragraph(
          "These done runs (by their run cell in summary.csv) and files were not read: their curves are "
          "missing from the plots below, while a run's summary.csv numbers still count in the tables.");
      Table t{{"run or file", "why it was not read"}, {}};
      for (const auto& [what, reason] : left_out_) {
        t.rows.push_back({what, reason});
      }
      doc_.table(std::move(t));
    }
  }

  void observations(const Plots& plots) {
    doc_.heading("The study's observations");
    doc_.paragraph(
        "Each verdict follows from the stated rule applied to this sweep's numbers; 'inconclusive here' "
        "means "
        "this sweep cannot decide it (too few scales, runs or distinct graphs), not that it is false.");
    const int large = a_.scales.back();
    const std::array<std::vector<std::string>, 3> support = {
        existing(plots,
                 {"accuracy-workers", "efficiency-workers", SweepPlotNames::accuracy_iteration(large)}),
        existing(plots, {SweepPlotNames::accuracy_edges(large)}),
        existing(plots,
                 {SweepPlotNames::accuracy_norm_variance(large), SweepPlotNames::norm_variance(large)}),
    };
    if (a_.designs.size() > 1) {
      doc_.paragraph(fmt::format(
          "This sweep holds {} training designs; each observation is decided under each of them, on its runs "
          "alone (a label's plots carry its design in brackets).",
          a_.designs.size()));
    }
    for (const auto& d : a_.designs) {
      if (a_.designs.size() > 1) {
        doc_.subheading(fmt::format("Under the design {}", d.name));
      }
      const std::string design = fmt::format("{}. {}.", d.name, d.per_scale());
      Table t{{"#", "observation", "verdict", "regime", "design", "evidence", "rule", "plots"}, {}};
      for (std::size_t i = 0; i < d.observations.size(); ++i) {
        const Observation& o = d.observations[i];
        t.rows.push_back({fmt::format("{}", i + 1), o.claim, verdict_text(o.verdict, o.regime),
                          o.regime.empty() ? std::string("sound") : "in doubt: " + o.regime, design,
                          o.evidence, o.rule, Cell("", support[i])});
      }
      doc_.table(std::move(t));
      starved(d);
    }
  }

  // A verdict that rests on starved runs is never shown bare.
  static std::string verdict_text(analysis::Verdict verdict, const std::string& regime) {
    const std::string name(analysis::verdict_name(verdict));
    return regime.empty() ? name : fmt::format("{} (in doubt: see the regime check)", name);
  }

  // Per design and scale, what each replica had to learn from and whether centralized training still
  // trained there: first, so that no verdict below is read without it.
  void regime_check() {
    doc_.heading("Regime check");
    bool sound = true;
    for (const auto& d : a_.designs) {
      if (const std::string warning = d.regime_warning(); !warning.empty()) {
        doc_.paragraph(warning);
        sound = false;
      }
    }
    if (sound) {
      doc_.paragraph(fmt::format(
          "Every scale trained: centralized training at each scale is within {:g} pp of its accuracy at the "
          "smallest scale (where this sweep has centralized runs), and every static graph had the iterations "
          "it needs to mix.",
          analysis::kRegimeDropPp));
    }
    for (const auto& d : a_.designs) {
      if (a_.designs.size() > 1) {
        doc_.subheading(fmt::format("Design {}", d.name));
      }
      Table t{{"workers", "samples per replica", "iterations", "global batch", "peak lr",
               "centralized accuracy", "vs smallest scale", "regime"},
              {}};
      for (const auto& s : d.scales) {
        std::vector<std::string> lrs;
        for (const double lr : s.peak_lrs) {
          lrs.push_back(fmt::format("{:.4g}", lr));
        }
        std::vector<std::string> doubts;
        if (s.collapsed()) {
          doubts.emplace_back("collapsed");
        }
        if (!s.starved_labels.empty()) {
          doubts.push_back(fmt::format("too few iterations to mix: {}", fmt::join(s.starved_labels, ", ")));
        }
        t.rows.push_back(
            {fmt::format("{}", s.workers), number(std::round(s.samples_per_replica), 6),
             number(std::round(s.iterations), 7), number(s.global_batch, 7),
             lrs.empty() ? std::string(kNone) : fmt::format("{}", fmt::join(lrs, " / ")),
             std::isfinite(s.centralized_accuracy) ? percent(s.centralized_accuracy) : std::string(kNone),
             &s == &d.scales.front()                ? std::string("reference")
             : std::isfinite(s.centralized_drop_pp) ? signed_pp(-s.centralized_drop_pp)
                                                    : std::string(kNone),
             doubts.empty() ? std::string("trained") : fmt::format("{}", fmt::join(doubts, "; "))});
      }
      doc_.table(std::move(t));
    }
  }

  // The answer at a glance: accuracy against workers per label, beside the simulated time to the target.
  void headline(const Plots& plots) {
    doc_.heading("At a glance");
    figure(plots, "accuracy-workers", "Final accuracy per label against workers (mean over seeds).");
    figure(plots, "time-to-target-workers",
           "Simulated time to the target accuracy per label against workers (mean over the runs that reached "
           "it; a label is missing at a scale where none did).");
  }

  // The static graphs the design's budget gave too few iterations to mix, and what would give them more.
  void starved(const analysis::Design& d) {
    if (d.starved.empty()) {
      return;
    }
    std::vector<std::string> parts;
    for (const auto& s : d.starved) {
      parts.push_back(
          fmt::format("{} at {} workers: {:.0f} iterations, about {:.0f} needed (spectral gap {})", s.label,
                      s.workers, s.iterations, s.mixing_iterations, number(s.spectral_gap, 3)));
    }
    doc_.paragraph(fmt::format(
        "Too few iterations to mix under {}: a graph needs about ln(workers) / spectral gap iterations for "
        "gossip to shrink the replicas' disagreement by a factor of the number of replicas, and these runs "
        "had "
        "fewer: {}. Their accuracy says as much about the budget as about the graph.{}",
        d.name, fmt::join(parts, "; "),
        d.name.ends_with("epochs")
            ? " A larger training set gives a scale more iterations per epoch: the synthetic teacher task "
              "(train.dataset = \"synthetic\") is as large as train.synthetic_samples asks, and "
              "train.synthetic_seed fixes it across the runs' seeds."
            : ""));
  }

  void ada(const Plots& plots) {
    if (a_.ada.empty()) {
      return;
    }
    doc_.heading("Ada against centralized training and the static graphs");
    doc_.paragraph(
        "Per Ada label and scale, against the groups that differ from it only in their algorithm: its final "
        "accuracy against centralized training's (within 0.3 pp is the bar), the bytes each GPU sent over "
        "the "
        "run against the all-reduce's, and its simulated time to the target accuracy against the fastest "
        "alternative whose every run reached the target. Times to the target are means over the runs; "
        "iterations are counted at the evaluations.");
    Table t{{"workers", "Ada label", "accuracy", "vs centralized", "bytes per GPU vs centralized",
             "time to target", "fastest alternative", "Ada / fastest", "regime"},
            {}};
    for (std::size_t k = 0; k < a_.ada.size(); ++k) {
      const analysis::AdaComparison& c = a_.ada[k];
      const GroupStats* g = group(c.label, c.workers);
      t.rows.push_back(
          {fmt::format("{}", c.workers), c.label, percent_spread(g->final_accuracy),
           std::isfinite(c.vs_centralized_pp)
               ? fmt::format("{} ({})", signed_pp(c.vs_centralized_pp),
                             c.matches_centralized() ? "within 0.3 pp" : "more than 0.3 pp below")
               : std::string(kNone),
           std::isfinite(c.bytes_per_gpu_vs_centralized)
               ? fmt::format("{:.3g}x", c.bytes_per_gpu_vs_centralized)
               : std::string(kNone),
           std::isfinite(c.simulated_time_to_target_s)
               ? fmt::format("{} s ({}/{} runs)", number(c.simulated_time_to_target_s), g->reached_target,
                             g->runs)
               : fmt::format("{} (0/{} runs)", kNone, g->runs),
           c.fastest_label.empty()
               ? std::string(kNone)
               : fmt::format("{}: {} s", c.fastest_label, number(c.fastest_time_to_target_s)),
           std::isfinite(c.time_vs_fastest)
               ? fmt::format("{:.3g}x ({})", c.time_vs_fastest,
                             c.time_vs_fastest < 1.0 ? "Ada lowest" : "not lowest")
               : std::string(kNone),
           c.regime.empty() ? std::string("sound") : "in doubt: " + c.regime});
    }
    doc_.table(std::move(t));
    for (std::size_t k = 0; k < a_.ada.size(); ++k) {
      const analysis::AdaComparison& c = a_.ada[k];
      doc_.paragraph(fmt::format("{} workers, {}: every alternative.", c.workers, c.label));
      Table all{{"label", "final accuracy", "bytes per GPU", "vs centralized",
                 "iterations to target (reached)", "simulated time to target"},
                {}};
      const std::string context = analysis::label_context(c.label);
      const GroupStats* central = nullptr;
      for (const GroupStats* g : groups_at(c.workers)) {
        if (g->centralized() && analysis::label_context(g->label) == context) {
          central = g;
          break;
        }
      }
      for (const GroupStats* g : groups_at(c.workers)) {
        if (analysis::label_context(g->label) != context) {
          continue;
        }
        all.rows.push_back(
            {g->label, percent_spread(g->final_accuracy), bytes(g->bytes_per_gpu.mean),
             central != nullptr && central->bytes_per_gpu.mean > 0.0
                 ? fmt::format("{:.3g}x", g->bytes_per_gpu.mean / central->bytes_per_gpu.mean)
                 : std::string(kNone),
             fmt::format("{} ({}/{})", number(g->iterations_to_target.mean), g->reached_target, g->runs),
             std::isfinite(g->simulated_time_to_target_s.mean)
                 ? fmt::format("{} s", number(g->simulated_time_to_target_s.mean))
                 : std::string(kNone)});
      }
      doc_.table(std::move(all));
      figure(
          plots, SweepPlotNames::ada_schedule(k, c.workers),
          fmt::format("{}, {} workers: the iterations between its global averages (its rung; 1 is the global "
                      "average every iteration) and the spread ratio it measured at them, D_H / D_1: the "
                      "consensus distance after H local steps over the one after a single step.",
                      c.label, c.workers));
    }
  }

  void scaling(const Plots& plots) {
    doc_.heading("Scaling with workers");
    std::vector<std::string> header = {"label"};
    for (int w : a_.scales) {
      header.push_back(fmt::format("{} workers", w));
    }
    Table accuracy{header, {}};
    Table throughput{header, {}};
    for (const auto& label : a_.labels) {
      std::vector<Cell> acc = {label};
      std::vector<Cell> rate = {label};
      for (int w : a_.scales) {
        const GroupStats* g = group(label, w);
        acc.emplace_back(g == nullptr ? std::string(kNone) : percent_spread(g->final_accuracy));
        rate.emplace_back(g == nullptr ? std::string(kNone)
                                       : fmt::format("{} samples/s, efficiency {}",
                                                     number(g->samples_per_second.mean, 4),
                                                     number(g->scaling_efficiency.mean, 3)));
      }
      accuracy.rows.push_back(std::move(acc));
      throughput.rows.push_back(std::move(rate));
    }
    doc_.paragraph("Final test accuracy (mean ± standard deviation over seeds):");
    doc_.table(std::move(accuracy));
    doc_.paragraph(
        "Simulated throughput and scaling efficiency (against one GPU, which needs no communication):");
    doc_.table(std::move(throughput));
    doc_.paragraph("Final accuracy against workers is drawn at the top, under \"At a glance\".");
    figure(plots, "throughput-workers", "Samples per second per label against workers (log-log).");
    figure(plots, "efficiency-workers", "Scaling efficiency per label against workers.");
  }

  void figure(const Plots& plots, const std::string& name, std::string caption) {
    if (plots.has(name)) {
      doc_.figure(name, std::move(caption));
    } else {
      doc_.paragraph(fmt::format("(No plot {}: no drawable values.)", name));
    }
  }

  void scale_section(const ScaleAnalysis& scale, const Plots& plots) {
    const int w = scale.workers;
    doc_.heading(fmt::format("{} workers", w));
    Table t{{"label", "runs", "final accuracy", "iterations to target (reached)", "simulated time to target",
             "bytes per GPU", "bytes per GPU per iteration", "edges", "spectral gap", "norm variance (mean)"},
            {}};
    for (const GroupStats* g : groups_at(w)) {
      t.rows.push_back(
          {g->label, fmt::format("{}", g->runs), percent_spread(g->final_accuracy),
           fmt::format("{} ({}/{})", number(g->iterations_to_target.mean), g->reached_target, g->runs),
           std::isfinite(g->simulated_time_to_target_s.mean)
               ? fmt::format("{} s", number(g->simulated_time_to_target_s.mean))
               : std::string(kNone),
           bytes(g->bytes_per_gpu.mean), bytes(g->bytes_per_gpu_per_iteration.mean), number(g->edges.mean, 6),
           number(g->spectral_gap.mean), number(g->norm_variance_mean.mean)});
    }
    doc_.table(std::move(t));
    doc_.paragraph(
        fmt::format("Correlation of final accuracy with each quantity over the {} done runs at {} workers: "
                    "Pearson's r (on "
                    "the stated transform), Spearman's rho (ranks, ties averaged), two-sided p-values from "
                    "Student's t with "
                    "n - 2 degrees of freedom.",
                    scale.runs, w));
    Table c{{"quantity", "Pearson on", "r", "p (r)", "Spearman rho", "p (rho)", "n"}, {}};
    for (const AccuracyCorrelation* ac :
         {&scale.edges, &scale.norm_variance_mean, &scale.norm_variance_final, &scale.spectral_gap}) {
      c.rows.push_back({ac->quantity, ac->pearson_on, coefficient(ac->pearson), p_value(ac->pearson.p_value),
                        coefficient(ac->spearman), p_value(ac->spearman.p_value),
                        fmt::format("{}", ac->spearman.n)});
    }
    doc_.table(std::move(c));
    figure(plots, SweepPlotNames::accuracy_iteration(w),
           fmt::format("Accuracy against iteration, {} workers.", w));
    figure(plots, SweepPlotNames::accuracy_time(w),
           fmt::format("Accuracy against simulated wall-clock time, {} workers.", w));
    figure(plots, SweepPlotNames::norm_variance(w),
           fmt::format(
               "Norm variance against iteration, {} workers (log scale; values below 1e-12 of the largest, "
               "such as centralized replicas that stay identical, are rounding noise and not drawn).",
               w));
    figure(plots, SweepPlotNames::accuracy_edges(w),
           fmt::format("Final accuracy against edges, {} workers, with the line fitted to log10(edges).", w));
    figure(plots, SweepPlotNames::accuracy_norm_variance(w),
           fmt::format("Final accuracy against mean norm variance, {} workers, with the fitted line.", w));
  }

  void appendix() { sweep_appendix(doc_, a_.failed, (dir_ / "logs").string(), sweep_toml_); }

  ResultsTree tree_;
  fs::path dir_;
  SweepAnalysis a_;
  Document doc_;
  std::map<std::string, std::string> colors_;
  std::map<std::pair<std::string, int>, Curve> curves_;
  std::vector<LeftOut> left_out_;
  std::optional<std::string> sweep_toml_;
};

}  // namespace

SweepDocument sweep_report(const ResultsTree& tree, Plots& plots) {
  const fs::path summary = tree.shown("summary.csv");
  const auto rows = results::parse_summary_csv(tree.read("summary.csv"), summary.string());
  if (timing_only_sweep(rows)) {
    std::vector<LeftOut> left_out;
    const std::optional<std::string> sweep_toml = read_sweep_toml(tree, left_out);
    return {timing_sweep_report(tree.root().filename().string(), rows, sweep_toml, plots),
            std::move(left_out)};
  }
  SweepAnalysis analyzed;
  try {
    analyzed = analysis::analyze_sweep(rows);
  } catch (const analysis::AnalysisError& e) {
    throw ReportError(fmt::format("{}: {}", summary.string(), e.what()));
  }
  SweepReport report(tree, std::move(analyzed));
  std::vector<LeftOut> left_out = report.left_out();
  return {report.build(plots), std::move(left_out)};
}

}  // namespace dbench::report
