// The report as a document (headings, paragraphs, tables, figures), rendered as HTML or Markdown; the number
// formats its tables use; whole-file reads and writes that fail with ReportError. Internal to the report.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace dbench::analysis {
struct Correlation;
struct Spread;
}  // namespace dbench::analysis

namespace dbench::report {

/// The whole file at `path`; throws ReportError naming it when it cannot be read.
std::string read_text(const std::filesystem::path& path);

/// Replaces the file at `path` by `text`; throws ReportError naming it when it cannot be written.
void write_text(const std::filesystem::path& path, std::string_view text);

/// What a table shows where a value is undefined.
inline constexpr std::string_view kNone = "–";

/// `v` with `digits` significant digits.
std::string number(double v, int digits = 4);
/// A fraction as a percentage with two decimals.
std::string percent(double fraction);
/// A fraction's mean ± standard deviation as percentages.
std::string percent_spread(const analysis::Spread& s);
/// Percentage points with their sign.
std::string signed_pp(double pp);
/// A byte count in decimal units (kB, MB, ...).
std::string bytes(double b);
/// A p-value: four decimals, or scientific below 1e-4.
std::string p_value(double p);
/// A correlation coefficient with its sign, or why it is undefined.
std::string coefficient(const analysis::Correlation& c);

/// `text` safe inside HTML elements and attribute values.
std::string html_escape(std::string_view text);

/// A table cell: text, and the plots it points to (links in both renderings).
struct Cell {
  std::string text;
  std::vector<std::string> plots;
  Cell(std::string t) : text(std::move(t)) {}  // NOLINT: cells are written as plain strings
  Cell(const char* t) : text(t) {}             // NOLINT
  Cell(std::string t, std::vector<std::string> p) : text(std::move(t)), plots(std::move(p)) {}
};

/// A table: a header row and rows of cells.
struct Table {
  std::vector<std::string> header;
  std::vector<std::vector<Cell>> rows;
};

/// One block of a document, in the order it is shown.
struct Block {
  enum class Kind { heading, subheading, paragraph, table, figure, preformatted };
  Kind kind;
  std::string text;  // heading text, paragraph, figure caption, preformatted text
  Table table;
  std::string plot;  // figure: the plot's name
};

/// What the report says, independent of HTML or Markdown.
class Document {
 public:
  /// An empty document with the title shown as its top heading.
  explicit Document(std::string title) : title_(std::move(title)) {}

  /// Appends a section heading.
  void heading(std::string text) { blocks_.push_back({Block::Kind::heading, std::move(text), {}, {}}); }
  /// Appends a heading below a section heading.
  void subheading(std::string text) { blocks_.push_back({Block::Kind::subheading, std::move(text), {}, {}}); }
  /// Appends a paragraph of plain text.
  void paragraph(std::string text) { blocks_.push_back({Block::Kind::paragraph, std::move(text), {}, {}}); }
  /// Appends a table.
  void table(Table t) { blocks_.push_back({Block::Kind::table, {}, std::move(t), {}}); }
  /// Appends the plot named `plot` with its caption.
  void figure(std::string plot, std::string caption) {
    blocks_.push_back({Block::Kind::figure, std::move(caption), {}, std::move(plot)});
  }
  /// Appends text shown as is, in a fixed-width font.
  void preformatted(std::string text) {
    blocks_.push_back({Block::Kind::preformatted, std::move(text), {}, {}});
  }

  /// report.html: `svgs` maps a plot's name to its SVG element, ready to inline.
  std::string html(const std::map<std::string, std::string>& svgs) const;

  /// report.md, figures referenced as plots/<name>.svg.
  std::string markdown() const;

 private:
  std::string title_;
  std::vector<Block> blocks_;
};

}  // namespace dbench::report
