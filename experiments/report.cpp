// Reports of a sweep or of one run: a document (headings, paragraphs, tables, figures) rendered both as a
// self-contained report.html (figures inline as SVG) and as report.md (figures under plots/), with plots
// drawn by one gnuplot process from generated data files. Everything is staged in a hidden directory inside
// DIR and renamed into place at the end.
#include "experiments/report.hpp"

#include <fcntl.h>
#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <system_error>
#include <utility>

#include "experiments/analysis.hpp"
#include "experiments/gnuplot.hpp"
#include "experiments/results_dir.hpp"
#include "experiments/results_tree.hpp"
#include "experiments/signal_cleanup.hpp"
#include "experiments/summary_json.hpp"

namespace dbench::experiments {
namespace fs = std::filesystem;
namespace {

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw ReportError(fmt::format("cannot read {}", path.string()));
  }
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

void write_text(const fs::path& path, std::string_view text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  out.close();
  if (!out) {
    throw ReportError(fmt::format("cannot write {}", path.string()));
  }
}

// Numbers as the tables show them; "–" where a value is undefined.

constexpr std::string_view kNone = "–";

std::string number(double v, int digits = 4) {
  return std::isfinite(v) ? fmt::format("{:.{}g}", v, digits) : std::string(kNone);
}

std::string percent(double fraction) {
  return std::isfinite(fraction) ? fmt::format("{:.2f}%", 100.0 * fraction) : std::string(kNone);
}

std::string percent_spread(const Spread& s) {
  if (s.n == 0) {
    return std::string(kNone);
  }
  if (!std::isfinite(s.stddev)) {
    return percent(s.mean);
  }
  return fmt::format("{:.2f} ± {:.2f}%", 100.0 * s.mean, 100.0 * s.stddev);
}

std::string signed_pp(double pp) {
  return std::isfinite(pp) ? fmt::format("{:+.2f} pp", pp) : std::string(kNone);
}

std::string bytes(double b) {
  if (!std::isfinite(b)) {
    return std::string(kNone);
  }
  constexpr std::array<std::string_view, 6> kUnits = {"B", "kB", "MB", "GB", "TB", "PB"};
  std::size_t unit = 0;
  while (std::abs(b) >= 1000.0 && unit + 1 < kUnits.size()) {
    b /= 1000.0;
    ++unit;
  }
  return fmt::format("{:.3g} {}", b, kUnits[unit]);
}

std::string p_value(double p) {
  if (!std::isfinite(p)) {
    return std::string(kNone);
  }
  return p < 1e-4 ? fmt::format("{:.1e}", p) : fmt::format("{:.4f}", p);
}

std::string coefficient(const Correlation& c) {
  return c.defined() ? fmt::format("{:+.3f}", c.coefficient) : fmt::format("– ({})", c.reason);
}

// The document: what the report says, independent of HTML or Markdown.

/// A table cell: text, and the plots it points to (links in both renderings).
struct Cell {
  std::string text;
  std::vector<std::string> plots;
  Cell(std::string t) : text(std::move(t)) {}  // NOLINT: cells are written as plain strings
  Cell(const char* t) : text(t) {}             // NOLINT
  Cell(std::string t, std::vector<std::string> p) : text(std::move(t)), plots(std::move(p)) {}
};

struct Table {
  std::vector<std::string> header;
  std::vector<std::vector<Cell>> rows;
};

struct Block {
  enum class Kind { heading, subheading, paragraph, table, figure, preformatted };
  Kind kind;
  std::string text;  // heading text, paragraph, figure caption, preformatted text
  Table table;
  std::string plot;  // figure: the plot's name
};

std::string html_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char ch : text) {
    switch (ch) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out.push_back(ch);
    }
  }
  return out;
}

std::string markdown_escape(std::string_view text) {
  std::string out;
  for (char ch : text) {
    if (ch == '|' || ch == '*' || ch == '_' || ch == '\\' || ch == '<' || ch == '`' || ch == '[' ||
        ch == ']') {
      out.push_back('\\');
    }
    out.push_back(ch == '\n' ? ' ' : ch);
  }
  return out;
}

// Counts, once the page has loaded, the plots that a browser actually drew: an <svg class="plot"> with a
// non-empty box holding a drawn mark (path, polyline or point) with a non-empty box inside one of gnuplot's
// data groups (g id="..gnuplot_plot_N"), so that axes alone do not count.
constexpr std::string_view kRenderCheckScript = R"(<script>
window.addEventListener('load', function () {
  var plots = document.querySelectorAll('svg.plot');
  var rendered = 0;
  plots.forEach(function (svg) {
    var box = svg.getBoundingClientRect();
    if (!(box.width > 0 && box.height > 0)) return;
    var marks = svg.querySelectorAll('g[id*="gnuplot_plot_"] path, g[id*="gnuplot_plot_"] polyline, ' +
                                     'g[id*="gnuplot_plot_"] use');
    for (var i = 0; i < marks.length; ++i) {
      var b = marks[i].getBBox();
      if (b.width > 0 || b.height > 0) { rendered += 1; return; }
    }
  });
  document.body.setAttribute('data-rendered-plots', String(rendered));
  document.getElementById('rendered-plots').textContent =
      rendered + ' of ' + plots.length + ' plots rendered in this browser.';
});
</script>
)";

constexpr std::string_view kStyle = R"(<style>
body { font-family: sans-serif; max-width: 1100px; margin: 2em auto; padding: 0 1em; color: #222; }
table { border-collapse: collapse; margin: 1em 0; font-size: 0.9em; }
th, td { border: 1px solid #ccc; padding: 0.3em 0.6em; text-align: left; vertical-align: top; }
th { background: #f3f3f3; }
figure { max-width: 760px; margin: 1.5em 0; }
figure svg { width: 100%; height: auto; display: block; }
figcaption { font-size: 0.9em; color: #555; }
pre { background: #f6f6f6; padding: 0.8em; overflow-x: auto; }
#rendered-plots { color: #555; font-size: 0.9em; }
</style>
)";

class Document {
 public:
  explicit Document(std::string title) : title_(std::move(title)) {}

  void heading(std::string text) { blocks_.push_back({Block::Kind::heading, std::move(text), {}, {}}); }
  void subheading(std::string text) { blocks_.push_back({Block::Kind::subheading, std::move(text), {}, {}}); }
  void paragraph(std::string text) { blocks_.push_back({Block::Kind::paragraph, std::move(text), {}, {}}); }
  void table(Table t) { blocks_.push_back({Block::Kind::table, {}, std::move(t), {}}); }
  void figure(std::string plot, std::string caption) {
    blocks_.push_back({Block::Kind::figure, std::move(caption), {}, std::move(plot)});
  }
  void preformatted(std::string text) {
    blocks_.push_back({Block::Kind::preformatted, std::move(text), {}, {}});
  }

  /// report.html: `svgs` maps a plot's name to its SVG element, ready to inline.
  std::string html(const std::map<std::string, std::string>& svgs) const {
    std::string out = fmt::format(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta "
        "charset=\"utf-8\">\n<title>{}</title>\n{}</head>\n"
        "<body>\n<h1>{}</h1>\n<p id=\"rendered-plots\">{} plots (the count of rendered plots needs "
        "JavaScript).</p>\n",
        html_escape(title_), kStyle, html_escape(title_), svgs.size());
    for (const auto& block : blocks_) {
      switch (block.kind) {
        case Block::Kind::heading:
          out += fmt::format("<h2>{}</h2>\n", html_escape(block.text));
          break;
        case Block::Kind::subheading:
          out += fmt::format("<h3>{}</h3>\n", html_escape(block.text));
          break;
        case Block::Kind::paragraph:
          out += fmt::format("<p>{}</p>\n", html_escape(block.text));
          break;
        case Block::Kind::preformatted:
          out += fmt::format("<pre>{}</pre>\n", html_escape(block.text));
          break;
        case Block::Kind::table:
          out += html_table(block.table);
          break;
        case Block::Kind::figure:
          out += fmt::format("<figure id=\"plot-{}\">\n{}<figcaption>{}</figcaption>\n</figure>\n",
                             block.plot, svgs.at(block.plot), html_escape(block.text));
          break;
      }
    }
    out += kRenderCheckScript;
    out += "</body>\n</html>\n";
    return out;
  }

  /// report.md, figures referenced as plots/<name>.svg.
  std::string markdown() const {
    std::string out = fmt::format("# {}\n", markdown_escape(title_));
    for (const auto& block : blocks_) {
      switch (block.kind) {
        case Block::Kind::heading:
          out += fmt::format("\n## {}\n", markdown_escape(block.text));
          break;
        case Block::Kind::subheading:
          out += fmt::format("\n### {}\n", markdown_escape(block.text));
          break;
        case Block::Kind::paragraph:
          out += fmt::format("\n{}\n", markdown_escape(block.text));
          break;
        case Block::Kind::preformatted:
          out += fmt::format("\n```\n{}\n```\n", block.text);
          break;
        case Block::Kind::table:
          out += markdown_table(block.table);
          break;
        case Block::Kind::figure:
          out += fmt::format("\n![{0}](plots/{1}.svg)\n\n*{0}*\n", markdown_escape(block.text), block.plot);
          break;
      }
    }
    return out;
  }

 private:
  static std::string html_table(const Table& t) {
    std::string out = "<table>\n<tr>";
    for (const auto& h : t.header) {
      out += fmt::format("<th>{}</th>", html_escape(h));
    }
    out += "</tr>\n";
    for (const auto& row : t.rows) {
      out += "<tr>";
      for (const auto& cell : row) {
        std::string content = html_escape(cell.text);
        for (const auto& plot : cell.plots) {
          content += fmt::format("{}<a href=\"#plot-{}\">{}</a>", content.empty() ? "" : "<br>", plot, plot);
        }
        out += fmt::format("<td>{}</td>", content);
      }
      out += "</tr>\n";
    }
    return out + "</table>\n";
  }

  static std::string markdown_table(const Table& t) {
    std::string out = "\n|";
    for (const auto& h : t.header) {
      out += fmt::format(" {} |", markdown_escape(h));
    }
    out += "\n|";
    for (std::size_t i = 0; i < t.header.size(); ++i) {
      out += " --- |";
    }
    out += "\n";
    for (const auto& row : t.rows) {
      out += "|";
      for (const auto& cell : row) {
        std::string content = markdown_escape(cell.text);
        for (const auto& plot : cell.plots) {
          content += fmt::format("{}[{}](plots/{}.svg)", content.empty() ? "" : " ", plot, plot);
        }
        out += fmt::format(" {} |", content);
      }
      out += "\n";
    }
    return out;
  }

  std::string title_;
  std::vector<Block> blocks_;
};

// Plots: specs collected while the document is built, drawn at the end by one gnuplot process.

struct Series {
  std::string title;
  std::vector<std::pair<double, double>> points;
  std::string style = "linespoints";  // gnuplot's `with`
  std::string color;                  // "#rrggbb"
  bool dashed = false;
};

struct PlotSpec {
  std::string name;  // file stem under plots/
  std::string title;
  std::string xlabel;
  std::string ylabel;
  bool log_x = false;
  bool log_y = false;
  std::vector<Series> series{};
  std::vector<double> xtics{};                 // where x tics go; empty: gnuplot's choice
  std::pair<double, double> xrange{0.0, 0.0};  // empty (lo >= hi): gnuplot's autoscale
};

// Colour-blind-safe colours (Okabe-Ito first), one per label in the order the report lists labels.
constexpr std::array<std::string_view, 12> kPalette = {"#000000", "#E69F00", "#56B4E9", "#009E73",
                                                       "#D55E00", "#0072B2", "#CC79A7", "#999999",
                                                       "#882255", "#44AA99", "#117733", "#AA4499"};

class Plots {
 public:
  /// Adds a plot after dropping the points it cannot draw (non-finite, or not positive on a log axis) and the
  /// series left empty; returns false (and adds nothing) when no point is left.
  bool add(PlotSpec spec) {
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

  bool has(std::string_view name) const {
    return std::any_of(specs_.begin(), specs_.end(), [&](const PlotSpec& s) { return s.name == name; });
  }

  const std::vector<PlotSpec>& specs() const { return specs_; }

  /// Draws every plot into `plots_dir` with gnuplot (data and script in `work`); returns each plot's SVG
  /// text.
  std::map<std::string, std::string> render(const fs::path& work, const fs::path& plots_dir) const {
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
                                    gnuplot_label(s.title)));
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

 private:
  // A gnuplot SVG file as an element of an HTML page: no XML prologue, ids made unique per plot (every
  // gnuplot SVG defines the same point symbols), class="plot" for the render check, the plot's title.
  static std::string inline_svg(const std::string& svg, std::size_t index, const std::string& title) {
    const auto start = svg.find("<svg");
    if (start == std::string::npos) {
      throw ReportError("gnuplot wrote an SVG file without an <svg> element");
    }
    std::string out = svg.substr(start);
    const std::string prefix = fmt::format("p{}-", index);
    for (const std::string_view pattern : {"id=\"", "id='", "href=\"#", "href='#", "url(#"}) {
      for (auto at = out.find(pattern); at != std::string::npos;
           at = out.find(pattern, at + pattern.size())) {
        out.insert(at + pattern.size(), prefix);
      }
    }
    out.replace(0, 4, fmt::format("<svg class=\"plot\" role=\"img\" aria-label=\"{}\"", html_escape(title)));
    if (const auto t = out.find("<title>Gnuplot</title>"); t != std::string::npos) {
      out.replace(t, 22, fmt::format("<title>{}</title>", html_escape(title)));
    }
    return out;
  }

  std::vector<PlotSpec> specs_;
};

// Curves of one run, and their mean over seeds.

/// A run's evaluations: iteration, test accuracy of the averaged model, norm variance, consensus distance,
/// and the clock (simulated, or measured for dbench train) at each evaluation; NaN where unknown.
struct Curve {
  std::vector<double> iteration;
  std::vector<double> accuracy;
  std::vector<double> norm_variance;
  std::vector<double> consensus_distance;
  std::vector<double> time_s;
};

// A CSV file of a run, read through the results tree: columns by name and number cells, with errors that
// name the file, the line and the column.
class RunTable {
 public:
  RunTable(const ResultsTree& tree, const fs::path& relative)
      : file_(tree.shown(relative)), table_(parse_csv(tree.read(relative), file_.string())) {}

  std::size_t rows() const { return table_.rows.size(); }

  /// The column `name`; throws ReportError naming the file and the column when it is missing.
  std::size_t column(std::string_view name) const {
    const int c = table_.column(name);
    if (c < 0) {
      throw ReportError(fmt::format("{} lacks the column '{}'", file_.string(), name));
    }
    return static_cast<std::size_t>(c);
  }

  /// The column `name`, or nullopt when the file has none.
  std::optional<std::size_t> optional_column(std::string_view name) const {
    const int c = table_.column(name);
    return c < 0 ? std::nullopt : std::optional<std::size_t>(static_cast<std::size_t>(c));
  }

  /// The number in a cell (NaN when empty); throws ReportError naming the cell when it is not a number.
  double number(std::size_t row, std::size_t column) const {
    const std::string& text = table_.rows[row][column];
    if (text.empty()) {
      return kUndefined;
    }
    char* end = nullptr;
    const double value = std::strtod(text.c_str(), &end);
    if (end != text.c_str() + text.size()) {
      throw ReportError(fmt::format("{}: line {}: column '{}' holds '{}', which is not a number",
                                    file_.string(), row + 2, table_.header[column], text));
    }
    return value;
  }

 private:
  fs::path file_;
  CsvTable table_;
};

// Clock at each evaluation: accuracy_time.csv where the simulator wrote it, otherwise trace.csv, whose row i
// ends iteration i (so an evaluation after k iterations reads row k - 1).
std::map<double, double> evaluation_times(const ResultsTree& tree, const fs::path& run_dir) {
  std::map<double, double> times;
  if (const fs::path file = run_dir / "accuracy_time.csv"; tree.exists(file)) {
    const RunTable t(tree, file);
    const std::size_t it = t.column("iteration");
    const std::size_t time = t.column("simulated_time_s");
    for (std::size_t r = 0; r < t.rows(); ++r) {
      times[t.number(r, it)] = t.number(r, time);
    }
  } else if (const fs::path trace = run_dir / "trace.csv"; tree.exists(trace)) {
    const RunTable t(tree, trace);
    const std::size_t it = t.column("iteration");
    const std::size_t elapsed = t.column("elapsed_s");
    times[0.0] = 0.0;
    for (std::size_t r = 0; r < t.rows(); ++r) {
      times[t.number(r, it) + 1.0] = t.number(r, elapsed);
    }
  }
  return times;
}

// The curve of the run whose files are under `run_dir` (relative to the tree's root; empty for the root).
Curve read_curve(const ResultsTree& tree, const fs::path& run_dir) {
  const RunTable t(tree, run_dir / "metrics.csv");
  const std::size_t it = t.column("iteration");
  const std::size_t accuracy = t.column("test_accuracy");
  const std::size_t variance = t.column("norm_variance");
  const std::size_t consensus = t.column("consensus_distance");
  const auto times = evaluation_times(tree, run_dir);
  Curve c;
  for (std::size_t r = 0; r < t.rows(); ++r) {
    const double iteration = t.number(r, it);
    c.iteration.push_back(iteration);
    c.accuracy.push_back(t.number(r, accuracy));
    c.norm_variance.push_back(t.number(r, variance));
    c.consensus_distance.push_back(t.number(r, consensus));
    const auto time = times.find(iteration);
    c.time_s.push_back(time == times.end() ? kUndefined : time->second);
  }
  return c;
}

// Mean over runs at each iteration that some run evaluated (seeds of one label share the evaluation grid).
Curve mean_curve(const std::vector<Curve>& curves) {
  struct Sums {
    std::vector<double> accuracy, norm_variance, consensus_distance, time_s;
  };
  std::map<double, Sums> by_iteration;
  for (const auto& c : curves) {
    for (std::size_t i = 0; i < c.iteration.size(); ++i) {
      Sums& s = by_iteration[c.iteration[i]];
      s.accuracy.push_back(c.accuracy[i]);
      s.norm_variance.push_back(c.norm_variance[i]);
      s.consensus_distance.push_back(c.consensus_distance[i]);
      s.time_s.push_back(c.time_s[i]);
    }
  }
  Curve mean;
  for (const auto& [iteration, s] : by_iteration) {
    mean.iteration.push_back(iteration);
    mean.accuracy.push_back(spread(s.accuracy).mean);
    mean.norm_variance.push_back(spread(s.norm_variance).mean);
    mean.consensus_distance.push_back(spread(s.consensus_distance).mean);
    mean.time_s.push_back(spread(s.time_s).mean);
  }
  return mean;
}

std::vector<std::pair<double, double>> zip(const std::vector<double>& x, const std::vector<double>& y,
                                           double y_scale = 1.0) {
  std::vector<std::pair<double, double>> points;
  for (std::size_t i = 0; i < x.size() && i < y.size(); ++i) {
    points.emplace_back(x[i], y[i] * y_scale);
  }
  return points;
}

// Values below this fraction of a plot's largest are rounding noise (e.g. the norm variance of replicas that
// stay identical under all-reduce), which would stretch a log axis over 30 decades.
constexpr double kLogFloor = 1e-12;

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

// The sweep report.

struct SweepPlotNames {
  static std::string accuracy_iteration(int w) { return fmt::format("accuracy-iteration-w{}", w); }
  static std::string accuracy_time(int w) { return fmt::format("accuracy-time-w{}", w); }
  static std::string norm_variance(int w) { return fmt::format("norm-variance-w{}", w); }
  static std::string accuracy_edges(int w) { return fmt::format("accuracy-edges-w{}", w); }
  static std::string accuracy_norm_variance(int w) { return fmt::format("accuracy-norm-variance-w{}", w); }
};

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
    try {
      if (tree_.exists("sweep.toml")) {
        sweep_toml_ = tree_.read("sweep.toml");
      }
    } catch (const ResultsTreeError& e) {
      left_out_.push_back({"sweep.toml", e.what()});
    }
  }

  /// The done runs whose files were not read and the files left out, with the reasons.
  const std::vector<LeftOut>& left_out() const { return left_out_; }

  Document build(Plots& plots) {
    add_plots(plots);
    overview();
    observations(plots);
    ada();
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

  // The curve from runs/<id>/; throws ReportError, ResultsTreeError or AnalysisError saying why there is
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
        for (const SummaryRow* run : runs_at(a_.runs, w)) {
          if (run->label == g->label) {
            e.points.emplace_back(run->edges, 100.0 * run->final_test_accuracy);
            v.points.emplace_back(run->norm_variance_mean, 100.0 * run->final_test_accuracy);
          }
        }
        edges.series.push_back(std::move(e));
        variance_scatter.series.push_back(std::move(v));
      }
      add_fit(edges, scale.accuracy_vs_log10_edges, true);
      add_fit(variance_scatter, scale.accuracy_vs_norm_variance_mean, false);
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
    plots.add(std::move(accuracy));
    plots.add(std::move(throughput));
    plots.add(std::move(efficiency));
  }

  // The fitted line, sampled over the data's x range (log-spaced on a log axis).
  static void add_fit(PlotSpec& spec, const LineFit& fit, bool log10_x) {
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
      const double x = log10_x ? std::pow(10.0, std::log10(lo) + f * (std::log10(hi) - std::log10(lo)))
                               : lo + f * (hi - lo);
      const double y = fit.intercept + fit.slope * (log10_x ? std::log10(x) : x);
      line.points.emplace_back(x, 100.0 * y);
    }
    spec.series.push_back(std::move(line));
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
    Table t{{"#", "observation", "verdict", "evidence", "rule", "plots"}, {}};
    for (std::size_t i = 0; i < a_.observations.size(); ++i) {
      const Observation& o = a_.observations[i];
      t.rows.push_back({fmt::format("{}", i + 1), o.claim, std::string(verdict_name(o.verdict)), o.evidence,
                        o.rule, Cell("", support[i])});
    }
    doc_.table(std::move(t));
  }

  void ada() {
    if (a_.ada.empty()) {
      return;
    }
    doc_.heading("Ada against centralized training and the static graphs");
    Table t{{"workers", "Ada label", "accuracy", "vs centralized", "vs best static graph",
             "iterations to target", "simulated time to target", "bytes per GPU vs centralized"},
            {}};
    for (const auto& c : a_.ada) {
      const GroupStats* g = group(c.label, c.workers);
      doc_.paragraph(fmt::format(
          "{} workers, {}: final accuracy {} ({} against centralized training, {} against the most accurate "
          "static graph{}); {} centralized accuracy within 1 pp. Iterations to the target: {} (centralized "
          "{}, "
          "fastest static graph {}{}). Bytes sent per GPU: {} of centralized training's.",
          c.workers, c.label, percent_spread(g->final_accuracy), signed_pp(c.vs_centralized_pp),
          signed_pp(c.vs_best_static_pp),
          c.best_static_label.empty() ? "" : fmt::format(", {}", c.best_static_label),
          std::isfinite(c.vs_centralized_pp) ? (c.matches_centralized() ? "matches" : "does not match")
                                             : "cannot be compared with",
          number(c.iterations_to_target), number(c.centralized_iterations_to_target),
          number(c.best_static_iterations_to_target),
          c.fastest_static_label.empty() ? "" : fmt::format(", {}", c.fastest_static_label),
          std::isfinite(c.bytes_per_gpu_vs_centralized)
              ? fmt::format("{:.3g}x", c.bytes_per_gpu_vs_centralized)
              : std::string(kNone)));
      t.rows.push_back({fmt::format("{}", c.workers), c.label, percent_spread(g->final_accuracy),
                        signed_pp(c.vs_centralized_pp),
                        c.best_static_label.empty()
                            ? std::string(kNone)
                            : fmt::format("{} ({})", signed_pp(c.vs_best_static_pp), c.best_static_label),
                        fmt::format("{} (centralized {}, fastest static {})", number(c.iterations_to_target),
                                    number(c.centralized_iterations_to_target),
                                    number(c.best_static_iterations_to_target)),
                        fmt::format("{} s (centralized {} s)", number(c.simulated_time_to_target_s),
                                    number(c.centralized_simulated_time_to_target_s)),
                        std::isfinite(c.bytes_per_gpu_vs_centralized)
                            ? fmt::format("{:.3g}x", c.bytes_per_gpu_vs_centralized)
                            : std::string(kNone)});
    }
    doc_.table(std::move(t));
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
    figure(plots, "accuracy-workers", "Final accuracy per label against workers.");
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

  void appendix() {
    if (a_.failed > 0) {
      doc_.heading("Failed runs");
      doc_.paragraph(
          fmt::format("{} runs failed; their logs are under {}.", a_.failed, (dir_ / "logs").string()));
    }
    if (sweep_toml_) {
      doc_.heading("Sweep config");
      doc_.preformatted(*sweep_toml_);
    }
  }

  ResultsTree tree_;
  fs::path dir_;
  SweepAnalysis a_;
  Document doc_;
  std::map<std::string, std::string> colors_;
  std::map<std::pair<std::string, int>, Curve> curves_;
  std::vector<LeftOut> left_out_;
  std::optional<std::string> sweep_toml_;
};

// The report of one run.

Document run_report(const ResultsTree& tree, Plots& plots) {
  const fs::path& dir = tree.root();
  const SummaryJson summary =
      parse_summary_json(tree.read("summary.json"), tree.shown("summary.json").string());
  // Keys that only some runs carry (the model, the simulated platform).
  const auto text = [&](const char* key) {
    const auto it = summary.fields.find(key);
    return it != summary.fields.end() && it->is_string() ? it->get<std::string>() : std::string(kNone);
  };
  const bool simulated = summary.engine == "sim";
  Document doc(
      fmt::format("DBench run report: {}", summary.name.empty() ? dir.filename().string() : summary.name));
  doc.paragraph(fmt::format(
      "{} in {}: {} ({}, {}) on {} workers, {} iterations; final test accuracy {} (best {}), {} s per "
      "iteration "
      "({}), {} samples/s.",
      simulated ? "Simulated run" : "Run", dir.string(), text("model"), summary.algorithm, summary.graph,
      summary.workers, summary.iterations, percent(summary.final_test_accuracy),
      percent(summary.best_test_accuracy), number(summary.seconds_per_iteration),
      simulated ? fmt::format("simulated on {}", text("platform")) : std::string("measured"),
      number(summary.samples_per_second)));

  const Curve c = read_curve(tree, "");
  const std::string clock = simulated ? "simulated time (s)" : "time (s)";
  PlotSpec accuracy{"accuracy-iteration", "Test accuracy of the averaged model", "iteration",
                    "test accuracy (%)"};
  Series a{"averaged model", zip(c.iteration, c.accuracy, 100.0), "linespoints", std::string(kPalette[5])};
  accuracy.series.push_back(a);
  {
    const RunTable t(tree, "metrics.csv");
    if (const auto replica = t.optional_column("replica_accuracy_mean")) {
      Series r{"replicas (mean)", {}, "linespoints", std::string(kPalette[1]), true};
      const std::size_t iteration = t.column("iteration");
      for (std::size_t row = 0; row < t.rows(); ++row) {
        r.points.emplace_back(t.number(row, iteration), 100.0 * t.number(row, *replica));
      }
      accuracy.series.push_back(std::move(r));
    }
  }
  PlotSpec by_time{"accuracy-time", fmt::format("Test accuracy against {}", clock), clock,
                   "test accuracy (%)"};
  a.points = zip(c.time_s, c.accuracy, 100.0);
  by_time.series.push_back(a);
  PlotSpec variance{"norm-variance", "Cross-replica variance of parameter-tensor norms", "iteration",
                    "norm variance (sum over tensors)"};
  variance.log_y = true;
  variance.series.push_back(
      {"norm variance", zip(c.iteration, c.norm_variance), "linespoints", std::string(kPalette[6])});
  drop_rounding_noise(variance.series);
  PlotSpec consensus{"consensus-distance", "Consensus distance: mean over replicas of |x_i - x_mean|^2",
                     "iteration", "consensus distance"};
  consensus.log_y = true;
  consensus.series.push_back({"consensus distance", zip(c.iteration, c.consensus_distance), "linespoints",
                              std::string(kPalette[3])});
  drop_rounding_noise(consensus.series);

  const std::array<std::pair<std::string, std::string>, 4> figures = {{
      {"accuracy-iteration", "Test accuracy against iteration."},
      {"accuracy-time", fmt::format("Test accuracy against {}.", clock)},
      {"norm-variance",
       "Norm variance against iteration (log scale; rounding noise below 1e-12 of the largest "
       "is not drawn)."},
      {"consensus-distance", "Consensus distance against iteration (log scale)."},
  }};
  for (auto* spec : {&accuracy, &by_time, &variance, &consensus}) {
    plots.add(std::move(*spec));
  }
  doc.heading("Curves");
  for (const auto& [name, caption] : figures) {
    if (plots.has(name)) {
      doc.figure(name, caption);
    } else {
      doc.paragraph(
          fmt::format("(No plot {}: no drawable values, e.g. centralized replicas stay identical.)", name));
    }
  }
  doc.heading("Summary");
  Table t{{"key", "value"}, {}};
  for (const auto& [key, v] : summary.fields.items()) {
    if (v.is_number_float()) {
      t.rows.push_back({key, number(v.get<double>(), 6)});
    } else if (v.is_primitive()) {
      t.rows.push_back({key, v.is_string() ? v.get<std::string>() : v.dump()});
    }
  }
  doc.table(std::move(t));
  return doc;
}

// Staging: everything is written under DIR/.report-<pid>-<random> and renamed into place at the end.

class Staging {
 public:
  /// A hidden `.report.tmp-PID-XXXXXXXX` directory in `dir`, named and marked as a ResultsDir stages, so
  /// that one a killed report left behind is removed here, by the next report into `dir`; registered with
  /// `cleanup` (when given) so that a stop signal removes it.
  Staging(const fs::path& dir, SignalCleanup* cleanup) : cleanup_(cleanup) {
    remove_abandoned_staging(dir / "report");
    std::random_device random;
    std::error_code ec;
    for (int attempt = 0; attempt < 16 && path_.empty(); ++attempt) {
      const fs::path candidate = dir / fmt::format(".report.tmp-{}-{:08x}", ::getpid(), random());
      if (fs::create_directory(candidate, ec)) {
        path_ = candidate;
      } else if (ec) {
        throw ReportError(fmt::format("cannot write into {}: {}", dir.string(), ec.message()));
      }
    }
    if (path_.empty()) {
      throw ReportError(fmt::format("cannot find a free staging directory name in {}", dir.string()));
    }
    if (cleanup_ != nullptr) {
      cleanup_->add(path_);
    }
    write_text(path_ / ResultsDir::kMarkerName, staging_marker_text());
    fs::create_directory(path_ / "plots");
    fs::create_directory(path_ / "work");
  }
  Staging(const Staging&) = delete;
  Staging& operator=(const Staging&) = delete;
  ~Staging() {
    std::error_code ec;
    fs::remove_all(path_, ec);  // best effort; a leftover is hidden, and the next report removes it
    if (cleanup_ != nullptr) {
      cleanup_->forget(path_);
    }
  }

  const fs::path& path() const { return path_; }

  /// Moves plots/, report.md and report.html into `dir`, report.html last: it is the file readers open.
  void commit(const fs::path& dir) const {
    const auto hold = cleanup_ != nullptr ? cleanup_->hold() : std::unique_lock<std::recursive_mutex>();
    const fs::path plots = dir / "plots";
    std::error_code ec;
    if (fs::exists(fs::symlink_status(plots, ec))) {
      // Swap the directories in one step; the old plots end up in the staging directory, removed with it.
      if (::renameat2(AT_FDCWD, (path_ / "plots").c_str(), AT_FDCWD, plots.c_str(), RENAME_EXCHANGE) != 0) {
        throw ReportError(fmt::format("cannot replace {}: {}", plots.string(), std::strerror(errno)));
      }
    } else {
      rename(path_ / "plots", plots);
    }
    rename(path_ / "report.md", dir / "report.md");
    rename(path_ / "report.html", dir / "report.html");
  }

 private:
  static void rename(const fs::path& from, const fs::path& to) {
    std::error_code ec;
    fs::rename(from, to, ec);
    if (ec) {
      throw ReportError(fmt::format("cannot move {} into place: {}", to.string(), ec.message()));
    }
  }

  fs::path path_;
  SignalCleanup* cleanup_ = nullptr;
};

}  // namespace

ReportResult write_report(const fs::path& given, SignalCleanup* cleanup) {
  std::error_code ec;
  if (!fs::is_directory(given, ec)) {
    throw ReportError(fmt::format("{} is not a directory", given.string()));
  }
  fs::path dir = fs::absolute(given).lexically_normal();
  if (!dir.has_filename()) {
    dir = dir.parent_path();  // "." and "results/sweep/" name folders whose names title the report
  }
  // DIR is untrusted input: every file below is opened through the tree, which refuses paths out of DIR.
  const ResultsTree tree(dir);
  const bool sweep = tree.exists("summary.csv");
  const bool run = tree.exists("summary.json") && tree.exists("metrics.csv");
  if (!sweep && !run) {
    throw ReportError(fmt::format(
        "{} is neither a sweep directory (no summary.csv) nor a run's results directory (no summary.json and "
        "metrics.csv)",
        dir.string()));
  }

  // Read and analyze everything before the first file is written, so that bad input changes nothing.
  Plots plots;
  Document doc("");
  std::vector<LeftOut> left_out;
  if (sweep) {
    const fs::path summary = tree.shown("summary.csv");
    const auto rows = parse_summary_csv(tree.read("summary.csv"), summary.string());
    SweepAnalysis analysis;
    try {
      analysis = analyze_sweep(rows);
    } catch (const AnalysisError& e) {
      throw ReportError(fmt::format("{}: {}", summary.string(), e.what()));
    }
    SweepReport report(tree, std::move(analysis));
    left_out = report.left_out();
    doc = report.build(plots);
  } else {
    doc = run_report(tree, plots);
  }

  const Staging staging(dir, cleanup);
  const auto svgs = plots.render(staging.path() / "work", staging.path() / "plots");
  write_text(staging.path() / "report.md", doc.markdown());
  write_text(staging.path() / "report.html", doc.html(svgs));
  staging.commit(dir);

  ReportResult result;
  result.html = dir / "report.html";
  result.markdown = dir / "report.md";
  result.plots = static_cast<int>(svgs.size());
  result.sweep = sweep;
  result.left_out = std::move(left_out);
  for (const auto& spec : plots.specs()) {
    result.plot_names.push_back(spec.name);
  }
  return result;
}

}  // namespace dbench::experiments
