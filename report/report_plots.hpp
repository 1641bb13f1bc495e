// The report's plots: specs collected while the document is built, drawn at the end by one gnuplot process
// into SVG files. Internal to the report.
#pragma once

#include <array>
#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace dbench::analysis {
struct LineFit;
}  // namespace dbench::analysis

namespace dbench::report {

/// One line or set of points in a plot.
struct Series {
  std::string title;
  std::vector<std::pair<double, double>> points;
  std::string style = "linespoints";  // gnuplot's `with`
  std::string color;                  // "#rrggbb"
  bool dashed = false;
};

/// A plot: its file name, labels, axes and series.
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

/// Colour-blind-safe colours (Okabe-Ito first), one per label in the order the report lists labels.
inline constexpr std::array<std::string_view, 12> kPalette = {"#000000", "#E69F00", "#56B4E9", "#009E73",
                                                              "#D55E00", "#0072B2", "#CC79A7", "#999999",
                                                              "#882255", "#44AA99", "#117733", "#AA4499"};

/// The points (x[i], y[i] * y_scale) for every i that both have.
std::vector<std::pair<double, double>> zip(const std::vector<double>& x, const std::vector<double>& y,
                                           double y_scale = 1.0);

/// Drops the points that are rounding noise next to the largest value of `series`, for a log axis.
void drop_rounding_noise(std::vector<Series>& series);

/// The longest key entry drawn, in characters: gnuplot drops a plot's whole key when one entry is wider than
/// the plot (about 95 characters of the 760-pixel SVG).
inline constexpr std::size_t kMaxKeyChars = 80;

/// The series' titles as the key shows them: a title longer than kMaxKeyChars (UTF-8 characters) is
/// shortened in the middle with "...", keeping its start and its end (where the labels of one sweep differ),
/// and one shortened into another's title gets " #2", " #3", ... so that every entry stays distinct.
std::vector<std::string> key_titles(const std::vector<Series>& series);

/// Adds the least-squares line `fit` (a fraction against x, or against log10(x) where `log10_x`) to `spec` in
/// percent, sampled over its series' x range (log-spaced on a log axis); nothing when the fit or the range is
/// undefined.
void add_fit_line(PlotSpec& spec, const analysis::LineFit& fit, bool log10_x);

/// The plots of one report, in the order they were added.
class Plots {
 public:
  /// Adds a plot after dropping the points it cannot draw (non-finite, or not positive on a log axis) and the
  /// series left empty; returns false (and adds nothing) when no point is left.
  bool add(PlotSpec spec);

  /// Whether a plot named `name` was added.
  bool has(std::string_view name) const;

  /// The plots added, in order.
  const std::vector<PlotSpec>& specs() const { return specs_; }

  /// Draws every plot into `plots_dir` with gnuplot (data and script in `work`); returns each plot's SVG
  /// text. Throws ReportError when gnuplot is missing or fails.
  std::map<std::string, std::string> render(const std::filesystem::path& work,
                                            const std::filesystem::path& plots_dir) const;

 private:
  std::vector<PlotSpec> specs_;
};

}  // namespace dbench::report
