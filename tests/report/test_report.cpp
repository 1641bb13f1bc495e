// Reports written by the library from hand-made results directories (no engine runs): text from the
// directory reaches gnuplot only as data. Reports of real runs are tested with the dbench command in
// tests/experiments/test_report.cpp.
#include <doctest/doctest.h>
#include <fmt/core.h>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "report/report.hpp"
#include "report/report_plots.hpp"
#include "results/results_tree.hpp"
#include "support/files.hpp"
#include "support/report_inputs.hpp"
#include "support/temp_dir.hpp"

namespace {

namespace fs = std::filesystem;
using namespace dbench::testing;

}  // namespace

TEST_CASE("report::report: labels and paths with every byte never reach gnuplot as commands") {
  const TempDir temp;
  const fs::path canary = temp.path() / "canary";
  const std::string hostile = hostile_text(canary);
  // The directory's own name: every byte a file name may hold, with the shell payload.
  std::string name = "sweep\n!touch " + canary.string() + "-path\n'\"`@";
  for (int b = 1; b < 128; ++b) {
    if (b != '/') {
      name.push_back(static_cast<char>(b));
    }
  }
  const fs::path dir = temp.path() / name;
  std::string done = summary_header();
  for (int k = 0; k < 4; ++k) {
    done += fmt::format(
        "r{0},done,{3},dpsgd,ring,8,1,0.{1},0.{1},1,20,{2},2,0.5,0.01,0.01,0.1,0.1,0.3,10,1,0.01,"
        "100,0.9,1000,20000,0.2,1,mlp,frontier,1000,,64,60000,1280,0.1,8\n",
        k, 50 + k, 8 * (k + 1), csv_field(hostile + std::to_string(k)));
  }
  write_file(dir / "summary.csv", done);
  mark_sweep_folder(dir);

  const auto result = dbench::report::write_report(dir);
  CHECK(result.plots > 0);
  CHECK(canaries_made(canary).empty());
  for (const auto& plot : result.plot_names) {
    CAPTURE(plot);
    CHECK(fs::file_size(dir / "plots" / (plot + ".svg")) > 0);
  }
}

namespace {

/// Every file under `dir` with its content.
std::map<std::string, std::string> snapshot(const fs::path& dir) {
  std::map<std::string, std::string> files;
  for (const auto& entry : fs::recursive_directory_iterator(dir)) {
    files[fs::relative(entry.path(), dir).string()] = entry.is_regular_file() ? read_file(entry.path()) : "";
  }
  return files;
}

/// The message write_report(dir) throws; empty when it writes a report.
std::string report_error(const fs::path& dir) {
  try {
    dbench::report::write_report(dir);
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("report::report: a folder without DBench's marker is refused, and nothing is written into it") {
  const TempDir temp;
  // A user's folder that happens to hold a summary.csv: a sweep folder in all but the marker.
  const fs::path mine = temp.path() / "mine";
  write_file(mine / "summary.csv", summary_header() + done_row("r0", "a", 0) + done_row("r1", "b", 1));
  write_file(mine / "report.md", "my notes");
  write_file(mine / "plots" / "figure.svg", "<svg/>");
  const auto before = snapshot(mine);
  const std::string refused = report_error(mine);
  CHECK(refused.find("refusing to write a report into " + mine.string()) != std::string::npos);
  CHECK(refused.find("no .dbench-sweep file") != std::string::npos);
  CHECK(refused.find('\n') == std::string::npos);
  CHECK(snapshot(mine) == before);

  // A marker that is a link to one elsewhere is not DBench's either.
  write_file(temp.path() / "elsewhere" / ".dbench-sweep", "");
  fs::create_symlink(temp.path() / "elsewhere" / ".dbench-sweep", mine / ".dbench-sweep");
  CHECK(report_error(mine).find("no .dbench-sweep file") != std::string::npos);
  fs::remove(mine / ".dbench-sweep");

  // A run's files without the results marker.
  const fs::path run = temp.path() / "run";
  write_file(run / "summary.json", "{}");
  write_file(run / "metrics.csv", kMetrics);
  CHECK(report_error(run).find("no .dbench-results file") != std::string::npos);
  CHECK(!fs::exists(run / "report.html"));

  // Marked, the same sweep folder gets its report.
  mark_sweep_folder(mine);
  CHECK(report_error(mine).empty());
  CHECK(fs::exists(mine / "report.html"));
}

TEST_CASE("report::report: a run whose metrics.csv is over the size limit is left out, named, not read") {
  const TempDir temp;
  const fs::path dir = temp.path() / "sweep";
  mark_sweep_folder(dir);
  std::string summary = summary_header();
  for (int k = 0; k < 3; ++k) {
    summary += done_row(fmt::format("r{}", k), fmt::format("label{}", k), k);
    write_file(dir / "runs" / fmt::format("r{}", k) / "metrics.csv", kMetrics);
  }
  write_file(dir / "summary.csv", summary);
  // Sparse: one byte over the limit takes no disk space.
  const fs::path huge = dir / "runs" / "r1" / "metrics.csv";
  fs::resize_file(huge, dbench::results::kMaxResultsFileBytes + 1);

  const auto result = dbench::report::write_report(dir);
  REQUIRE(result.left_out.size() == 1);
  CHECK(result.left_out[0].what == "r1");
  CHECK(result.left_out[0].reason.find("metrics.csv") != std::string::npos);
  CHECK(result.left_out[0].reason.find("larger than the 1 GiB limit") != std::string::npos);
  const std::string curves = read_file(dir / "plots" / "accuracy-iteration-w8.svg");
  CHECK(curves.find("label0") != std::string::npos);
  CHECK(curves.find("label2") != std::string::npos);
}

TEST_CASE("report::report: long labels are shortened in the key, kept distinct, never dropped") {
  using dbench::report::kMaxKeyChars;
  // Labels that differ at their end keep it; labels that differ only in the middle get a number.
  const std::string start(70, 's');
  const std::string middle_a = std::string(60, 'a') + "MIDDLE-ONE" + std::string(60, 'b');
  const std::string middle_b = std::string(60, 'a') + "MIDDLE-TWO" + std::string(60, 'b');
  std::vector<dbench::report::Series> series(5);
  series[0].title = start + std::string(60, 'x') + "-end0";
  series[1].title = start + std::string(60, 'x') + "-end1";
  series[2].title = middle_a;
  series[3].title = middle_b;
  series[4].title = "ring";
  const auto titles = dbench::report::key_titles(series);
  REQUIRE(titles.size() == 5);
  CHECK(titles[0].ends_with("-end0"));
  CHECK(titles[1].ends_with("-end1"));
  CHECK(titles[0].starts_with("sss"));
  CHECK(titles[0].find("...") != std::string::npos);
  CHECK(titles[0].size() == kMaxKeyChars);
  CHECK(titles[3] == titles[2] + " #2");
  CHECK(titles[4] == "ring");
  // UTF-8 characters are never cut in half.
  std::string accents;
  for (int i = 0; i < 100; ++i) {
    accents += "\xC3\xA9";  // é
  }
  series.assign(1, dbench::report::Series{});
  series[0].title = accents;
  const auto accented = dbench::report::key_titles(series);
  CHECK(accented[0].size() == (kMaxKeyChars - 3) * 2 + 3);

  // Drawn: every run's key entry is in its plot.
  const TempDir temp;
  const fs::path dir = temp.path() / "sweep";
  mark_sweep_folder(dir);
  std::string summary = summary_header();
  for (int k = 0; k < 4; ++k) {
    const std::string label = fmt::format("L{}", k) + std::string(150, 'x') + fmt::format("-end{}", k);
    summary += done_row(fmt::format("r{}", k), label, k);
    write_file(dir / "runs" / fmt::format("r{}", k) / "metrics.csv", kMetrics);
  }
  write_file(dir / "summary.csv", summary);
  dbench::report::write_report(dir);
  const std::string curves = read_file(dir / "plots" / "accuracy-iteration-w8.svg");
  for (int k = 0; k < 4; ++k) {
    CAPTURE(k);
    CHECK(curves.find(fmt::format("L{}xxx", k)) != std::string::npos);
    CHECK(curves.find(fmt::format("xxx-end{}", k)) != std::string::npos);
  }
}
