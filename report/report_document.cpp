// The report's document model rendered as report.html (figures inline as SVG, a script that counts the
// plots a browser drew) and report.md (figures under plots/); the number formats of its tables.
#include "report/report_document.hpp"

#include <fmt/core.h>

#include <array>
#include <cmath>
#include <stdexcept>

#include "analysis/analysis.hpp"
#include "report/report.hpp"
#include "results/atomic_file.hpp"
#include "results/read_file.hpp"
#include "results/results_tree.hpp"

namespace dbench::report {
namespace fs = std::filesystem;
namespace {

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

std::string html_table(const Table& t) {
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

std::string markdown_table(const Table& t) {
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

}  // namespace

std::string read_text(const fs::path& path) {
  try {
    return results::read_file(path, results::kMaxResultsFileBytes, "report file");
  } catch (const results::FileReadError& e) {
    throw ReportError(e.what());
  }
}

void write_text(const fs::path& path, std::string_view text) {
  try {
    results::write_file_atomically(path, text);
  } catch (const std::runtime_error& e) {
    throw ReportError(e.what());
  }
}

std::string number(double v, int digits) {
  return std::isfinite(v) ? fmt::format("{:.{}g}", v, digits) : std::string(kNone);
}

std::string percent(double fraction) {
  return std::isfinite(fraction) ? fmt::format("{:.2f}%", 100.0 * fraction) : std::string(kNone);
}

std::string percent_spread(const analysis::Spread& s) {
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

std::string coefficient(const analysis::Correlation& c) {
  return c.defined() ? fmt::format("{:+.3f}", c.coefficient) : fmt::format("– ({})", c.reason);
}

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

std::string Document::html(const std::map<std::string, std::string>& svgs) const {
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
        out += fmt::format("<figure id=\"plot-{}\">\n{}<figcaption>{}</figcaption>\n</figure>\n", block.plot,
                           svgs.at(block.plot), html_escape(block.text));
        break;
    }
  }
  out += kRenderCheckScript;
  out += "</body>\n</html>\n";
  return out;
}

std::string Document::markdown() const {
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

}  // namespace dbench::report
