// The report's plots drawn by one gnuplot process from generated data files and a generated script, then
// made fit to inline in an HTML page.
#include "report/report_plots.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <system_error>

#include "analysis/statistics.hpp"
#include "report/gnuplot.hpp"
#include "report/report.hpp"
#include "report/report_document.hpp"

namespace dbench::report {
namespace fs = std::filesystem;
namespace {

// Values below this fraction of a plot's largest are rounding noise (e.g. the norm variance of replicas that
// stay identical under all-reduce), which would stretch a log axis over 30 decades.
constexpr double kLogFloor = 1e-12;

// A gnuplot SVG file as an element of an HTML page: no XML prologue, ids made unique per plot (every
// gnuplot SVG defines the same point symbols), class="plot" for the render check, the plot's title.
std::string inline_svg(const std::string& svg, std::size_t index, const std::string& title) {
  const auto start = svg.find("<svg");
  if (start == std::string::npos) {
    throw ReportError("gnuplot wrote an SVG file without an <svg> element");
  }
  std::string out = svg.substr(start);
  const std::string prefix = fmt::format("p{}-", index);
  for (const std::string_view pattern : {"id=\"", "id='", "href=\"#", "href='#", "url(#"}) {
    for (auto at = out.find(pattern); at != std::string::npos; at = out.find(pattern, at + pattern.size())) {
      out.insert(at + pattern.size(), prefix);
    }
  }
  out.replace(0, 4, fmt::format("<svg class=\"plot\" role=\"img\" aria-label=\"{}\"", html_escape(title)));
  if (const auto t = out.find("<title>Gnuplot</title>"); t != std::string::npos) {
    out.replace(t, 22, fmt::format("<title>{}</title>", html_escape(title)));
  }
  return out;
}

// The byte offset of each UTF-8 character of `text` (continuation bytes start none).
std::vector<std::size_t> character_starts(std::string_view text) {
  std::vector<std::size_t> starts;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if ((static_cast<unsigned char>(text[i]) & 0xC0) != 0x80) {
      starts.push_back(i);
    }
  }
  return starts;
}

// `title` in at most kMaxKeyChars characters: its start, "...", its end.
std::string shortened(const std::string& title) {
  const auto starts = character_starts(title);
  if (starts.size() <= kMaxKeyChars) {
    return title;
  }
  constexpr std::size_t kEnd = 24;  // a sweep's labels differ in their last axis values
  constexpr std::size_t kStart = kMaxKeyChars - kEnd - 3;
  return title.substr(0, starts[kStart]) + "..." + title.substr(starts[starts.size() - kEnd]);
}

}  // namespace

std::vector<std::pair<double, double>> zip(const std::vector<double>& x, const std::vector<double>& y,
                                           double y_scale) {
  std::vector<std::pair<double, double>> points;
  for (std::size_t i = 0; i < x.size() && i < y.size(); ++i) {
    points.emplace_back(x[i], y[i] * y_scale);
  }
  return points;
}

void drop_rounding_noise(std::vector<Series>& series) {
  double largest = 0.0;
  for (const auto& s : series) {
    for (const auto& p : s.points) {
      if (std::isfinite(p.second)) {
        largest = std::max(largest, p.second);
      }
    }
  }
  for (auto& s : series) {
    std::erase_if(s.points, [&](const auto& p) { return !(p.second > largest * kLogFloor); });
  }
}

std::vector<std::string> key_titles(const std::vector<Series>& series) {
  std::vector<std::string> titles;
  std::set<std::string> taken;
  for (const auto& s : series) {
    titles.push_back(shortened(s.title));
    taken.insert(s.title);  // titles that need no shortening are kept as they are, equal ones too
  }
  for (std::size_t i = 0; i < series.size(); ++i) {
    if (titles[i] == series[i].title) {
      continue;
    }
    std::string unique = titles[i];
    for (int n = 2; taken.contains(unique); ++n) {
      unique = fmt::format("{} #{}", titles[i], n);
    }
    taken.insert(unique);
    titles[i] = unique;
  }
  return titles;
}

bool Plots::add(PlotSpec spec) {
  for (auto& s : spec.series) {
    std::erase_if(s.points, [&](const auto& p) {
      return !std::isfinite(p.first) || !std::isfinite(p.second) || (spec.log_x && p.first <= 0.0) ||
             (spec.log_y && p.second <= 0.0);
    });
  }
  std::erase_if(spec.series, [](const Series& s) { return s.points.empty(); });
  if (spec.series.empty()) {
    return false;
  }
  specs_.push_back(std::move(spec));
  return true;
}

bool Plots::has(std::string_view name) const {
  return std::any_of(specs_.begin(), specs_.end(), [&](const PlotSpec& s) { return s.name == name; });
}

std::map<std::string, std::string> Plots::render(const fs::path& work, const fs::path& plots_dir) const {
  std::map<std::string, std::string> svgs;
  if (specs_.empty()) {
    return svgs;
  }
  std::string script;
  for (const auto& spec : specs_) {
    const fs::path data = work / (spec.name + ".dat");
    std::string rows;
    for (const auto& s : spec.series) {
      for (const auto& [x, y] : s.points) {
        rows += fmt::format("{:.17g} {:.17g}\n", x, y);
      }
      rows += "\n\n";  // two blank lines end a gnuplot data block (`index`)
    }
    write_text(data, rows);
    script += fmt::format(
        "reset\nset terminal svg size 760,460 dynamic font 'sans,11' background rgb 'white'\n"
        "set termoption noenhanced\nset output {}\nset title {}\nset xlabel {}\nset ylabel {}\n"
        "set grid\nset key below\nset offsets 0, 0, graph 0.05, graph 0.05\n",
        gnuplot_string((plots_dir / (spec.name + ".svg")).string()), gnuplot_label(spec.title),
        gnuplot_label(spec.xlabel), gnuplot_label(spec.ylabel));
    if (spec.log_x) {
      script += "set logscale x\n";
    }
    if (spec.log_y) {
      script += "set logscale y\nset format y '%.0e'\n";
    }
    if (spec.xrange.first < spec.xrange.second) {
      script += fmt::format("set xrange [{:.17g}:{:.17g}]\n", spec.xrange.first, spec.xrange.second);
    }
    if (!spec.xtics.empty()) {
      script += fmt::format("set xtics ({})\n", fmt::join(spec.xtics, ", "));
    }
    std::vector<std::string> parts;
    const std::vector<std::string> titles = key_titles(spec.series);
    for (std::size_t i = 0; i < spec.series.size(); ++i) {
      const Series& s = spec.series[i];
      std::string style = fmt::format("with {} lw 2", s.style);
      if (s.style != "lines") {
        style += " pt 7 ps 0.7";
      }
      if (s.dashed) {
        style += " dt 2";
      }
      parts.push_back(fmt::format("{} index {} using 1:2 {} lc rgb {} title {}",
                                  gnuplot_string(data.string()), i, style, gnuplot_string(s.color),
                                  gnuplot_label(titles[i])));
    }
    script += fmt::format("plot {}\nunset output\n", fmt::join(parts, ", \\\n     "));
  }
  const fs::path script_path = work / "plots.gp";
  write_text(script_path, script);
  try {
    run_gnuplot(script_path, work / "gnuplot.log");
  } catch (const GnuplotError& e) {
    throw ReportError(e.what());
  }
  for (std::size_t i = 0; i < specs_.size(); ++i) {
    const fs::path svg = plots_dir / (specs_[i].name + ".svg");
    std::error_code ec;
    if (!fs::exists(svg, ec) || fs::file_size(svg, ec) == 0) {
      throw ReportError(
          fmt::format("gnuplot did not write {} (script {})", svg.string(), script_path.string()));
    }
    svgs[specs_[i].name] = inline_svg(read_text(svg), i, specs_[i].title);
  }
  return svgs;
}

void add_fit_line(PlotSpec& spec, const analysis::LineFit& fit, bool log10_x) {
  if (!fit.defined()) {
    return;
  }
  double lo = INFINITY;
  double hi = -INFINITY;
  for (const auto& s : spec.series) {
    for (const auto& p : s.points) {
      if (std::isfinite(p.first) && std::isfinite(p.second) && (!log10_x || p.first > 0.0)) {
        lo = std::min(lo, p.first);
        hi = std::max(hi, p.first);
      }
    }
  }
  if (!(lo < hi)) {
    return;
  }
  Series line;
  line.title = fmt::format("least-squares fit{}, r² = {}", log10_x ? " on log10(edges)" : "",
                           number(fit.r_squared, 3));
  line.style = "lines";
  line.color = "#666666";
  line.dashed = true;
  constexpr int kSamples = 48;
  for (int i = 0; i <= kSamples; ++i) {
    const double f = static_cast<double>(i) / kSamples;
    const double x =
        log10_x ? std::pow(10.0, std::log10(lo) + f * (std::log10(hi) - std::log10(lo))) : lo + f * (hi - lo);
    const double y = fit.intercept + fit.slope * (log10_x ? std::log10(x) : x);
    line.points.emplace_back(x, 100.0 * y);
  }
  spec.series.push_back(std::move(line));
}

}  // namespace dbench::report
