// Reports as a user gets them: a small sweep and a single run, rendered by headless Chromium to check that
// every plot the report wrote is actually drawn; and the errors that must leave an existing report alone.
#include <doctest/doctest.h>
#include <fmt/core.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "report/report.hpp"
#include "support/files.hpp"
#include "support/report_inputs.hpp"
#include "support/run_dbench.hpp"
#include "support/temp_dir.hpp"

namespace {

using namespace dbench::testing;

namespace fs = std::filesystem;

std::string quoted(const fs::path& path) {
  return fmt::format("\"{}\"", path.string());
}

/// A tiny, fast `dbench simulate` on the exponential graph (synthetic data, 20 iterations, 8 workers).
/// `text` with its first `from` replaced by `to` (FAILs when `from` is not there).
std::string replace_first(std::string text, std::string_view from, std::string_view to) {
  const auto at = text.find(from);
  if (at == std::string::npos) {
    FAIL("'" << std::string(from) << "' is not in the text");
  }
  return text.replace(at, from.size(), to);
}

/// The digits right after the first `prefix` in `text`, as written; empty when there are none.
std::string digits_after(const std::string& text, std::string_view prefix) {
  const auto at = text.find(prefix);
  if (at == std::string::npos) {
    return "";
  }
  const auto begin = at + prefix.size();
  auto end = begin;
  while (end < text.size() && text[end] >= '0' && text[end] <= '9') {
    ++end;
  }
  return text.substr(begin, end - begin);
}

std::string simulate_command(const fs::path& out) {
  return fmt::format(
      "\"{}\" simulate --set train.dataset=synthetic --set train.workers=8 --set train.iterations=20 "
      "--set train.eval_every=5 --set train.eval_samples=500 --set algorithm.graph=exponential "
      "--set platform.preset=dgx-h100 --set platform.timing_model=mlp -q --out {} > /dev/null",
      DBENCH_EXE, quoted(out));
}

/// A sweep directory from a tiny real `dbench sweep`: centralized, ring and Ada at 4 and 8 workers, two seeds
/// each (twelve simulations, each mostly process start-up), without its report.
void make_sweep(const fs::path& dir) {
  const fs::path config = dir.parent_path() / "sweep.toml";
  write_file(config, R"(name = "report-fixture"
target_accuracy = 0.3
[set]
"train.dataset" = "synthetic"
"train.iterations" = 20
"train.eval_every" = 5
"train.eval_samples" = 500
"platform.preset" = "dgx-h100"
"platform.timing_model" = "mlp"
[grid]
algorithm = ["centralized", "ring", "ada"]
"train.workers" = [4, 8]
seed = [1, 2]
)");
  const auto result =
      run_dbench(fmt::format("sweep {} --out {} -j 2 -q --no-report", quoted(config), quoted(dir)));
  CAPTURE(result.output);
  REQUIRE(result.status == 0);
  REQUIRE(fs::exists(dir / "summary.csv"));
}

/// Path of headless Chromium, or empty.
std::string chromium() {
  const auto found = run_command("command -v chromium");
  if (found.status != 0) {
    return {};
  }
  return found.output.substr(0, found.output.find('\n'));
}

/// How many plots headless Chromium drew in `html` (the report's own count, written after load), or -1.
int rendered_plots(const fs::path& html, const fs::path& scratch) {
  const std::string browser = chromium();
  if (browser.empty()) {
    FAIL("chromium is not installed: run ./setup.sh (it installs Debian's chromium for this test)");
  }
  const auto result =
      run_command(fmt::format("\"{}\" --headless --no-sandbox --disable-gpu --virtual-time-budget=10000 "
                              "--user-data-dir={} --dump-dom "
                              "\"file://{}\" 2>/dev/null",
                              browser, quoted(scratch / "chromium-profile"), fs::absolute(html).string()));
  REQUIRE(result.status == 0);
  const std::string count = digits_after(result.output, "data-rendered-plots=\"");
  return count.empty() ? -1 : std::stoi(count);
}

/// The files of a directory with their contents, hidden ones included.
std::map<std::string, std::string> snapshot(const fs::path& dir) {
  std::map<std::string, std::string> files;
  for (const auto& entry : fs::recursive_directory_iterator(dir)) {
    files[fs::relative(entry.path(), dir).string()] = entry.is_regular_file() ? read_file(entry.path()) : "";
  }
  return files;
}

}  // namespace

TEST_CASE("experiments::report: a sweep's report draws every plot in headless Chromium") {
  const TempDir temp;
  const fs::path dir = temp.path() / "sweep";
  make_sweep(dir);

  const auto result = dbench::report::write_report(dir);
  CHECK(result.sweep);
  CHECK(result.plots > 0);
  CHECK(result.plots == static_cast<int>(result.plot_names.size()));
  CHECK(rendered_plots(result.html, temp.path()) == result.plots);

  const std::string html = read_file(result.html);
  const std::string markdown = read_file(result.markdown);
  // Self-contained: no external scripts, styles or images.
  for (const char* external : {"src=", "<link", "@import", "href=\"http"}) {
    CAPTURE(external);
    CHECK(html.find(external) == std::string::npos);
  }
  for (const auto& name : result.plot_names) {
    CAPTURE(name);
    CHECK(fs::file_size(dir / "plots" / (name + ".svg")) > 0);
    CHECK(markdown.find(fmt::format("(plots/{}.svg)", name)) != std::string::npos);
    CHECK(html.find(fmt::format("id=\"plot-{}\"", name)) != std::string::npos);
  }
  for (const char* expected : {"accuracy-iteration-w8", "accuracy-iteration-w4", "accuracy-time-w8",
                               "norm-variance-w8", "accuracy-edges-w8", "accuracy-norm-variance-w8",
                               "throughput-workers", "efficiency-workers", "accuracy-workers"}) {
    CAPTURE(expected);
    CHECK(std::find(result.plot_names.begin(), result.plot_names.end(), expected) != result.plot_names.end());
  }
  for (const char* section : {"The study's observations", "Ada against centralized training", "## 8 workers",
                              "## 4 workers", "Spearman rho", "12 done, 0 failed, 0 pending"}) {
    CAPTURE(section);
    CHECK(markdown.find(section) != std::string::npos);
  }
  // Every observation gets one of the three verdicts.
  int verdicts = 0;
  std::istringstream lines(markdown);
  for (std::string line; std::getline(lines, line);) {
    const bool numbered =
        line.starts_with("| 1 | ") || line.starts_with("| 2 | ") || line.starts_with("| 3 | ");
    for (const char* verdict : {"| holds |", "| does not hold |", "| inconclusive here |"}) {
      verdicts += numbered && line.find(verdict) != std::string::npos ? 1 : 0;
    }
  }
  CHECK(verdicts == 3);
  for (const auto& entry : fs::directory_iterator(dir)) {
    CHECK(!entry.path().filename().string().starts_with(".report"));
  }
}

TEST_CASE("experiments::report: a run's results directory gets the smaller report, replacing an older one") {
  const TempDir temp;
  const fs::path dir = temp.path() / "run";
  const auto simulated = run_command(simulate_command(dir));
  REQUIRE(simulated.status == 0);
  write_file(dir / "plots" / "stale.svg", "<svg/>");

  const auto command = run_dbench(fmt::format("report {}", quoted(dir)));
  CAPTURE(command.output);
  REQUIRE(command.status == 0);
  CHECK(command.output.find("report.html (4 plots)") != std::string::npos);
  CHECK(!fs::exists(dir / "plots" / "stale.svg"));
  for (const char* name : {"accuracy-iteration", "accuracy-time", "norm-variance", "consensus-distance"}) {
    CAPTURE(name);
    CHECK(fs::exists(dir / "plots" / (std::string(name) + ".svg")));
  }
  const std::string markdown = read_file(dir / "report.md");
  CHECK(markdown.find("final\\_test\\_accuracy") != std::string::npos);
  CHECK(markdown.find("on 8 workers") != std::string::npos);
  CHECK(rendered_plots(dir / "report.html", temp.path()) == 4);

  // dbench train writes no accuracy_time.csv: the clock comes from trace.csv's elapsed_s instead.
  fs::remove(dir / "accuracy_time.csv");
  const auto measured = dbench::report::write_report(dir);
  CHECK(measured.plots == 4);
  CHECK(std::find(measured.plot_names.begin(), measured.plot_names.end(), "accuracy-time") !=
        measured.plot_names.end());
}

TEST_CASE(
    "experiments::report: bad input ends with one error line and leaves the existing report untouched") {
  const TempDir temp;
  const fs::path dir = temp.path() / "sweep";
  write_file(dir / "report.html", "<p>the previous report</p>");
  write_file(dir / "report.md", "previous");
  write_file(dir / "plots" / "old.svg", "<svg/>");

  const auto fails_with = [&](const std::string& command_line, const std::string& expected) {
    CAPTURE(command_line);
    const auto before = snapshot(dir);
    const auto result = run_command(command_line);
    CAPTURE(result.output);
    CHECK(result.status != 0);
    CHECK(std::count(result.output.begin(), result.output.end(), '\n') == 1);
    CHECK(result.output.starts_with("dbench: error: "));
    CHECK(result.output.find(expected) != std::string::npos);
    CHECK(snapshot(dir) == before);
  };
  const std::string report = fmt::format("\"{}\" report {}", DBENCH_EXE, quoted(dir));

  // Neither a sweep nor a run.
  fails_with(report, "neither a sweep directory");
  fails_with(fmt::format("\"{}\" report {}", DBENCH_EXE, quoted(temp.path() / "missing")), "not a directory");

  // A summary.csv without a required column.
  mark_sweep_folder(dir);
  std::string header = summary_header();
  write_file(dir / "summary.csv", replace_first(header, ",spectral_gap,", ",gap,"));
  fails_with(report, "lacks the column 'spectral_gap'");

  // No done runs.
  write_file(dir / "summary.csv", header +
                                      "ring_w8_s1,pending,ring,dpsgd,ring,8,1,,,,,,,,,,,,,,,,,,,,,,,,,8\n" +
                                      "ring_w8_s2,failed,ring,dpsgd,ring,8,2,,,,,,,,,,,,,,,,,,,,,,,,,8\n");
  fails_with(report, "no run is done yet (1 pending, 1 failed)");

  // Done runs, but gnuplot cannot be found.
  std::string done = header;
  for (int k = 0; k < 4; ++k) {
    done += fmt::format(
        "r{0},done,g{0},dpsgd,ring,8,1,0.{1},0.{1},1,20,{2},2,0.5,0.01,0.01,0.1,0.1,0.3,10,1,0.01,"
        "100,0.9,1000,20000,0.2,1,mlp,frontier,1000,,64,60000,1280,0.1,8\n",
        k, 50 + k, 8 * (k + 1));
  }
  write_file(dir / "summary.csv", done);
  fails_with("PATH=/nonexistent " + report, "gnuplot is not installed");

  // The same directory with gnuplot on PATH reports fine; the runs' curves are absent, and the report says
  // why.
  const auto ok = run_command(report);
  CAPTURE(ok.output);
  CHECK(ok.status == 0);
  CHECK(read_file(dir / "report.md").find("| r3 | no directory ") != std::string::npos);
}

TEST_CASE("experiments::report: a sweep whose grid values carry gnuplot commands reports them as text") {
  const TempDir temp;
  const fs::path canary = temp.path() / "canary";
  const fs::path config = temp.path() / "sweep.toml";
  // TOML escapes carry the newlines, quotes and control characters into the grid's values.
  const auto toml_string = [](const std::string& text) {
    std::string out = "\"";
    for (char ch : text) {
      const auto byte = static_cast<unsigned char>(ch);
      if (ch == '"' || ch == '\\') {
        out += fmt::format("\\{}", ch);
      } else if (byte < 0x20 || byte == 0x7f) {
        out += fmt::format("\\u{:04x}", byte);
      } else if (byte < 0x80) {
        out.push_back(ch);
      }
    }
    return out + "\"";
  };
  const std::string hostile = hostile_text(canary);
  write_file(config, fmt::format(R"(name = "hostile"
[set]
"train.dataset" = "synthetic"
"train.iterations" = 10
"train.eval_every" = 5
"train.eval_samples" = 200
"train.workers" = 4
"platform.preset" = "dgx-h100"
"platform.timing_model" = "mlp"
[grid]
algorithm = ["ring"]
description = [{}, {}]
)",
                                 toml_string(hostile + "a"), toml_string(hostile + "b")));
  const fs::path out = temp.path() / "out\n!touch canary-out\n";
  const auto swept = run_dbench(fmt::format("sweep {} --out {} -j 2 -q", quoted(config), quoted(out)));
  CAPTURE(swept.output);
  REQUIRE(swept.status == 0);
  CHECK(fs::exists(out / "report.html"));
  CHECK(canaries_made(canary).empty());
  CHECK(!fs::exists(fs::current_path() / "canary-out"));
  const auto reported = run_dbench(fmt::format("report {}", quoted(out)));
  CAPTURE(reported.output);
  CHECK(reported.status == 0);
  CHECK(canaries_made(canary).empty());
}

TEST_CASE("experiments::report: run cells and symlinks that lead out of DIR are not opened, and are named") {
  const TempDir temp;
  const fs::path dir = temp.path() / "sweep";
  // Each of these would give its label a curve if the report opened it.
  write_file(temp.path() / "elsewhere" / "metrics.csv", kMetrics);
  write_file(temp.path() / "absolute" / "metrics.csv", kMetrics);
  write_file(temp.path() / "linked-target" / "metrics.csv", kMetrics);
  write_file(temp.path() / "secret.toml", "name = \"SECRET-SWEEP-TEXT\"\n");
  fs::create_directories(dir / "runs");
  fs::create_directory_symlink(temp.path() / "linked-target", dir / "runs" / "linked");
  fs::create_directories(dir / "runs" / "filelink");
  fs::create_symlink(temp.path() / "elsewhere" / "metrics.csv", dir / "runs" / "filelink" / "metrics.csv");
  fs::create_symlink(temp.path() / "secret.toml", dir / "sweep.toml");
  // A run of its own, and a symlink inside DIR to a folder inside DIR, which may be followed.
  mark_sweep_folder(dir);
  write_file(dir / "runs" / "plain" / "metrics.csv", kMetrics);
  write_file(dir / "store" / "kept" / "metrics.csv", kMetrics);
  fs::create_directory_symlink(dir / "store" / "kept", dir / "runs" / "insidelink");

  const std::string absolute = (temp.path() / "absolute").string();
  write_file(dir / "summary.csv",
             summary_header() + done_row("plain", "plainlabel", 0) +
                 done_row("insidelink", "insidelabel", 1) + done_row("../../elsewhere", "dotdotlabel", 2) +
                 done_row(absolute, "absolutelabel", 3) + done_row("linked", "symlinklabel", 4) +
                 done_row("filelink", "filelinklabel", 5) + done_row("gone", "gonelabel", 6));

  const auto command = run_dbench(fmt::format("report {}", quoted(dir)));
  CAPTURE(command.output);
  REQUIRE(command.status == 0);
  const std::string curves = read_file(dir / "plots" / "accuracy-iteration-w8.svg");
  CHECK(curves.find("plainlabel") != std::string::npos);
  CHECK(curves.find("insidelabel") != std::string::npos);
  for (const char* label : {"dotdotlabel", "absolutelabel", "symlinklabel", "filelinklabel", "gonelabel"}) {
    CAPTURE(label);
    CHECK(curves.find(label) == std::string::npos);
  }
  const std::string html = read_file(dir / "report.html");
  CHECK(html.find("SECRET-SWEEP-TEXT") == std::string::npos);
  // The report and stderr name every run (and file) left out, with the reason.
  const std::vector<std::pair<std::string, std::string>> left_out = {
      {"../../elsewhere", "climbs out"}, {absolute, "absolute path"}, {"linked", "leads out of"},
      {"filelink", "leads out of"},      {"gone", "no directory"},    {"sweep.toml", "leads out of"},
  };
  for (const auto& [name, reason] : left_out) {
    CAPTURE(name);
    const auto in_html = html.find(fmt::format("<td>{}</td><td>", name));
    REQUIRE(in_html != std::string::npos);
    CHECK(html.substr(in_html, html.find("</tr>", in_html) - in_html).find(reason) != std::string::npos);
    const auto in_output = command.output.find(fmt::format("left out {}: ", name));
    REQUIRE(in_output != std::string::npos);
    CHECK(command.output.substr(in_output, command.output.find('\n', in_output) - in_output).find(reason) !=
          std::string::npos);
  }
}

TEST_CASE("experiments::report: a run directory's files are checked: symlinks out, summary.json, columns") {
  const TempDir temp;
  const fs::path dir = temp.path() / "run";
  const auto simulated = run_command(simulate_command(dir));
  REQUIRE(simulated.status == 0);
  write_file(dir / "report.html", "<p>the previous report</p>");
  const std::string metrics = read_file(dir / "metrics.csv");
  const std::string summary = read_file(dir / "summary.json");

  const auto fails_with = [&](const std::string& expected) {
    const auto result = run_dbench(fmt::format("report {}", quoted(dir)));
    CAPTURE(result.output);
    CHECK(result.status != 0);
    CHECK(std::count(result.output.begin(), result.output.end(), '\n') == 1);
    CHECK(result.output.find(expected) != std::string::npos);
    CHECK(read_file(dir / "report.html") == "<p>the previous report</p>");
  };

  // metrics.csv, accuracy_time.csv and summary.json as symlinks out of the directory.
  for (const char* name : {"metrics.csv", "accuracy_time.csv", "summary.json"}) {
    CAPTURE(name);
    const std::string original = read_file(dir / name);
    write_file(temp.path() / "outside" / name, original);
    fs::remove(dir / name);
    fs::create_symlink(temp.path() / "outside" / name, dir / name);
    fails_with(fmt::format("{}", (dir / name).string()));
    fails_with("leads out of");
    fs::remove(dir / name);
    write_file(dir / name, original);
  }

  // summary.json: not JSON, a required key missing, a key of the wrong type.
  write_file(dir / "summary.json", "{ not json");
  fails_with("summary.json: not valid JSON");
  const auto erase_key = [](std::string text, const std::string& key) {
    const auto at = text.find(fmt::format("\"{}\"", key));
    REQUIRE(at != std::string::npos);
    const auto line_start = text.rfind('\n', at);
    const auto line_end = text.find('\n', at);
    return text.erase(line_start, line_end - line_start);
  };
  write_file(dir / "summary.json", erase_key(summary, "final_test_accuracy"));
  fails_with("summary.json: no key 'final_test_accuracy'");
  write_file(dir / "summary.json",
             replace_first(summary, "\"workers\": " + digits_after(summary, "\"workers\": "),
                           "\"workers\": \"eight\""));
  fails_with("summary.json: key 'workers'");
  write_file(dir / "summary.json", summary);

  // metrics.csv: a column missing, a cell that is not a number.
  write_file(dir / "metrics.csv", replace_first(metrics, "norm_variance,", "nv,"));
  fails_with("metrics.csv lacks the column 'norm_variance'");
  const auto second_line = metrics.find('\n') + 1;
  write_file(dir / "metrics.csv", metrics.substr(0, second_line) + "x" + metrics.substr(second_line));
  fails_with("metrics.csv: line 2: column 'iteration'");
}

TEST_CASE(
    "experiments::report: a staging directory that a killed report left behind goes with the next one") {
  const TempDir temp;
  const fs::path dir = temp.path() / "run";
  REQUIRE(run_command(simulate_command(dir)).status == 0);
  // A report killed outright leaves its marked staging directory; its pid (a child that has ended) is gone.
  const auto child = run_command("echo $$");
  const std::string pid = child.output.substr(0, child.output.find('\n'));
  const fs::path abandoned = dir / fmt::format(".report.tmp-{}-0123abcd", pid);
  const std::string marker = read_file(dir / ".dbench-results");
  write_file(abandoned / ".dbench-results", marker);
  write_file(abandoned / "plots" / "half.svg", "<svg");
  // Unmarked, or of a live process: not the report's to remove.
  const fs::path unrelated = dir / fmt::format(".report.tmp-{}-0123abce", pid);
  write_file(unrelated / "notes.txt", "mine");
  const fs::path live = dir / fmt::format(".report.tmp-{}-0123abcf", ::getpid());
  write_file(live / ".dbench-results", marker);

  const auto reported = run_dbench(fmt::format("report {}", quoted(dir)));
  CAPTURE(reported.output);
  CHECK(reported.status == 0);
  CHECK(!fs::exists(abandoned));
  CHECK(fs::exists(unrelated / "notes.txt"));
  CHECK(fs::exists(live));
}
