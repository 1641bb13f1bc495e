// Reports written by the library from hand-made results directories (no engine runs): text from the
// directory reaches gnuplot only as data. Reports of real runs are tested with the dbench command in
// tests/experiments/test_report.cpp.
#include <doctest/doctest.h>
#include <fmt/core.h>

#include <filesystem>
#include <string>

#include "report/report.hpp"
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

  const auto result = dbench::report::write_report(dir);
  CHECK(result.plots > 0);
  CHECK(canaries_made(canary).empty());
  for (const auto& plot : result.plot_names) {
    CAPTURE(plot);
    CHECK(fs::file_size(dir / "plots" / (plot + ".svg")) > 0);
  }
}
