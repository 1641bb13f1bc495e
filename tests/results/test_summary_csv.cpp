// summary.csv as people open it: text cells that a spreadsheet would evaluate are written as text and read
// back as they were, numbers out of their column's range are refused, and no two columns share a name.
#include <doctest/doctest.h>
#include <fmt/core.h>

#include <string>
#include <vector>

#include "results/csv.hpp"
#include "results/summary_csv.hpp"
#include "support/report_inputs.hpp"

namespace rs = dbench::results;
using dbench::testing::summary_header;

namespace {

/// A done row with `label`, `workers` and the final accuracy `accuracy`; its axis (train.workers) is 8.
std::string row(const std::string& label, const std::string& workers = "8",
                const std::string& accuracy = "0.5") {
  return fmt::format(
      "r0,done,{},dpsgd,ring,{},1,{},0.5,1,20,8,2,0.5,0.01,0.01,0.1,0.1,0.3,10,1,0.01,100,0.9,1000,20000,0.2,"
      "1,"
      "mlp,frontier,1000,,64,60000,1280,0.1,8\n",
      label, workers, accuracy);
}

std::string error_of(const std::string& text) {
  try {
    rs::parse_summary_csv(text, "summary.csv");
  } catch (const rs::CsvError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("results::summary csv: a cell a spreadsheet would evaluate is written as text and read back") {
  const std::vector<std::string> texts = {
      "=1+1", "+cmd|' /C calc'!A0", "-2+3", "@SUM(A1:A2)", "\tx", "\rx", "'quoted", "''",
      "'=x",  "=HYPERLINK(\"x\")"};
  for (const auto& text : texts) {
    CAPTURE(text);
    const std::string field = rs::text_field(text);
    CHECK(field.starts_with("\"'"));  // a quote inside the quoted cell: text to a spreadsheet
    const auto table = rs::parse_csv("label\n" + field + "\n", "t.csv");
    REQUIRE(table.rows.size() == 1);
    CHECK(rs::read_text_field(table.rows[0][0]) == text);
    const auto runs = rs::parse_summary_csv(summary_header() + row(field), "summary.csv");
    REQUIRE(runs.size() == 1);
    CHECK(runs[0].label == text);
  }
  // Plain text and numbers, negative ones included, are written as they are.
  for (const std::string text : {"ring", "-0.5", "-3", "1e-3", "a,b"}) {
    CAPTURE(text);
    const std::string field = rs::text_field(text);
    CHECK(field.find('\'') == std::string::npos);
    CHECK(rs::read_text_field(rs::parse_csv("x\n" + field + "\n", "t.csv").rows[0][0]) == text);
  }
}

TEST_CASE("results::summary csv: numbers outside their column's range are refused, naming line and column") {
  CHECK(error_of(summary_header() + row("a", "2147483647")).empty());
  for (const std::string workers : {"2147483648", "3000000000", "1e300", "0", "-8"}) {
    CAPTURE(workers);
    const std::string error = error_of(summary_header() + row("a", workers));
    CHECK(error.find("summary.csv: line 2: column 'workers' holds " + workers +
                     ", outside [1, 2147483647]") != std::string::npos);
  }
  CHECK(error_of(summary_header() + row("a", "8.5")).find("whole number of workers") != std::string::npos);
  CHECK(error_of(summary_header() + row("a", "8", "1.5"))
            .find("column 'final_test_accuracy' holds 1.5, outside [0, 1]") != std::string::npos);
  CHECK(error_of(summary_header() + row("a", "8", "-0.1")).find("outside [0, 1]") != std::string::npos);
  CHECK(error_of(summary_header() + row("a", "8", "inf")).find("not a finite number") != std::string::npos);
  std::string negative = row("a");
  negative.replace(negative.find(",1000,20000,"), 12, ",-1000,20000,");
  CHECK(error_of(summary_header() + negative)
            .find("'bytes_per_gpu_per_iteration' holds -1000, outside [0, inf]") != std::string::npos);
}

TEST_CASE("results::summary csv: grid axes named like contract columns get columns of their own") {
  CHECK(rs::summary_axis_column("algorithm") == "grid.algorithm");
  CHECK(rs::summary_axis_column("seed") == "grid.seed");
  CHECK(rs::summary_axis_column("train.workers") == "train.workers");
  CHECK(rs::summary_axis_key("grid.algorithm") == "algorithm");
  CHECK(rs::summary_axis_key("grid.other") == "grid.other");
  std::string header = summary_header();
  header.insert(header.size() - 1, ",grid.algorithm,grid.seed");
  std::string done = row("a");
  done.insert(done.size() - 1, ",ring,7");
  const auto runs = rs::parse_summary_csv(header + done, "summary.csv");
  REQUIRE(runs.size() == 1);
  REQUIRE(runs[0].axes.size() == 3);
  CHECK(runs[0].axes[1] == std::pair<std::string, std::string>("algorithm", "ring"));
  CHECK(runs[0].axes[2] == std::pair<std::string, std::string>("seed", "7"));
}
