// The report of a timing-only sweep: scaling efficiency against model size, one plot per platform and scale
// with one series per communication, and the numbers behind each plot.
#include "report/report_timing.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <iterator>
#include <map>
#include <string_view>
#include <utility>

#include "report/report_plots.hpp"
#include "report/sweep_appendix.hpp"

namespace dbench::report {
namespace {

using results::SummaryRow;

// Axes that place a run in a plot (platform, scale, model) or name its communication; any other axis (e.g.
// platform.allreduce or train.batch_per_worker) splits a communication into one series per value.
constexpr std::array<std::string_view, 8> kPlacingAxes = {
    "algorithm",     "algorithm.kind", "algorithm.graph", "platform.preset", "platform.timing_model",
    "train.workers", "seed",           "train.model"};

// "all-reduce" or the graph (policy) name, with `key=value` of each further axis.
std::string communication(const SummaryRow& row) {
  std::string name = row.centralized() ? std::string("all-reduce") : row.graph;
  for (const auto& [key, value] : row.axes) {
    if (std::find(kPlacingAxes.begin(), kPlacingAxes.end(), key) == kPlacingAxes.end()) {
      const auto dot = key.rfind('.');
      name += fmt::format(" {}={}", dot == std::string::npos ? key : key.substr(dot + 1), value);
    }
  }
  return name;
}

// Keeps the order in which values first appear.
void add_once(std::vector<std::string>& list, const std::string& value) {
  if (std::find(list.begin(), list.end(), value) == list.end()) {
    list.push_back(value);
  }
}

// The done runs of one platform at one scale.
struct Panel {
  std::string platform;
  int workers = 0;
  std::vector<const SummaryRow*> runs;
};

// A model of a panel: its size and name, the x of every series.
struct Model {
  double parameters = 0.0;
  std::string name;
  auto operator<=>(const Model&) const = default;
};

// Mean over seeds of one communication on one model.
struct Cellwise {
  double efficiency_sum = 0.0;
  double seconds_sum = 0.0;
  int runs = 0;
};

}  // namespace

bool timing_only_sweep(const std::vector<SummaryRow>& rows) {
  bool any = false;
  for (const auto& row : rows) {
    if (row.done()) {
      if (!row.timing_only()) {
        return false;
      }
      any = true;
    }
  }
  return any;
}

Document timing_sweep_report(const std::string& name, const std::vector<SummaryRow>& rows,
                             const std::optional<std::string>& sweep_toml, Plots& plots) {
  Document doc(fmt::format("DBench sweep report: {} (timing only)", name));
  std::size_t done = 0;
  std::size_t failed = 0;
  std::vector<Panel> panels;
  std::vector<std::string> communications;
  for (const auto& row : rows) {
    if (row.status == "failed") {
      ++failed;
    }
    if (!row.done()) {
      continue;
    }
    ++done;
    add_once(communications, communication(row));
    auto panel = std::find_if(panels.begin(), panels.end(), [&](const Panel& p) {
      return p.platform == row.platform && p.workers == row.workers;
    });
    if (panel == panels.end()) {
      panels.push_back({row.platform, row.workers, {}});
      panel = std::prev(panels.end());
    }
    panel->runs.push_back(&row);
  }
  std::map<std::string, std::string> colors;
  for (std::size_t i = 0; i < communications.size(); ++i) {
    colors[communications[i]] = std::string(kPalette[i % kPalette.size()]);
  }

  doc.paragraph(fmt::format(
      "{} runs: {} done, {} failed, {} pending. Every run was timed only (dbench simulate --timing-only): "
      "nothing was trained, so there is no accuracy, replica variance or verdict of the study here. Scaling "
      "efficiency is the simulated throughput on N GPUs over N times one GPU's (1 = linear scaling; one GPU "
      "needs no communication). Model size is the timing model's parameter count, from its profile. "
      "Communications: {}.",
      rows.size(), done, failed, rows.size() - done - failed, fmt::join(communications, ", ")));

  for (std::size_t p = 0; p < panels.size(); ++p) {
    const Panel& panel = panels[p];
    const std::string platform = panel.platform.empty() ? std::string(kNone) : panel.platform;
    std::map<std::pair<std::string, Model>, Cellwise> cells;
    std::vector<Model> models;
    for (const SummaryRow* run : panel.runs) {
      const Model model{std::isfinite(run->parameters) ? run->parameters : 0.0, run->timing_model};
      if (std::find(models.begin(), models.end(), model) == models.end()) {
        models.push_back(model);
      }
      Cellwise& cell = cells[{communication(*run), model}];
      cell.efficiency_sum += run->scaling_efficiency;
      cell.seconds_sum += run->seconds_per_iteration;
      ++cell.runs;
    }
    std::sort(models.begin(), models.end());

    const std::string plot = fmt::format("efficiency-size-{}", p + 1);
    PlotSpec spec{plot,
                  fmt::format("Scaling efficiency against model size, {}, {} GPUs", platform, panel.workers),
                  "parameters of the timed model", "scaling efficiency"};
    spec.log_x = true;
    Table table{{"model", "parameters"}, {}};
    for (const auto& c : communications) {
      table.header.push_back(c);
    }
    for (const auto& c : communications) {
      Series series;
      series.title = c;
      series.color = colors.at(c);
      for (const Model& model : models) {
        if (const auto it = cells.find({c, model}); it != cells.end()) {
          series.points.emplace_back(model.parameters, it->second.efficiency_sum / it->second.runs);
        }
      }
      if (!series.points.empty()) {
        spec.series.push_back(std::move(series));
      }
    }
    for (const Model& model : models) {
      std::vector<Cell> row = {
          model.name, model.parameters > 0.0 ? fmt::format("{:.0f}", model.parameters) : std::string(kNone)};
      for (const auto& c : communications) {
        const auto it = cells.find({c, model});
        row.emplace_back(it == cells.end()
                             ? std::string(kNone)
                             : fmt::format("{} ({} s/iteration)",
                                           number(it->second.efficiency_sum / it->second.runs, 3),
                                           number(it->second.seconds_sum / it->second.runs, 3)));
      }
      table.rows.push_back(std::move(row));
    }

    doc.heading(fmt::format("{}, {} GPUs", platform, panel.workers));
    if (plots.add(std::move(spec))) {
      doc.figure(plot,
                 fmt::format("Scaling efficiency against the timed model's parameters (log scale) on {} "
                             "at {} GPUs, one line per communication.",
                             platform, panel.workers));
    } else {
      doc.paragraph(fmt::format("(No plot {}: no drawable values.)", plot));
    }
    doc.paragraph(
        "Scaling efficiency (mean over seeds) and simulated seconds per iteration, by model from the "
        "smallest:");
    doc.table(std::move(table));
  }

  sweep_appendix(doc, failed, "logs/", sweep_toml);
  return doc;
}

}  // namespace dbench::report
