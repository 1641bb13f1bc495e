// docs/results-files.md is what results' tables say: a column added to a table appears there (the test
// fails until the page is made anew), and every column of every file is on the page.
#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include "results/file_docs.hpp"
#include "results/run_csv.hpp"
#include "results/summary_csv.hpp"
#include "results/summary_json.hpp"

namespace {

const std::filesystem::path kPage = std::filesystem::path(DBENCH_SOURCE_DIR) / "docs" / "results-files.md";

std::string read_page() {
  std::ifstream in(kPage, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

TEST_CASE("results::docs: docs/results-files.md is made from the tables that write and read the files") {
  const std::string made = dbench::results::results_files_markdown();
  if (const char* update = std::getenv("DBENCH_UPDATE_DOCS");
      update != nullptr && std::string(update) == "1") {
    std::ofstream(kPage, std::ios::binary) << made;
    std::cout << "wrote " << kPage << "\n";
  }
  const std::string page = read_page();
  CHECK_MESSAGE(page == made,
                "docs/results-files.md differs from results' tables; remake it with "
                "DBENCH_UPDATE_DOCS=1 build/tests/results/dbench_tests_results -tc='results::docs*'");
  // Every column and key is on the page, named as the files name it.
  for (const auto& column : dbench::results::documented_columns(dbench::results::metrics_columns())) {
    CHECK(page.find("| `" + column.name + "` |") != std::string::npos);
  }
  for (const auto& column : dbench::results::documented_columns(dbench::results::summary_columns())) {
    CHECK(page.find("| `" + column.name + "` |") != std::string::npos);
  }
  for (const auto& key : dbench::results::documented_keys(dbench::results::summary_json_keys())) {
    CHECK(page.find("| `" + key.name + "` |") != std::string::npos);
  }
}
