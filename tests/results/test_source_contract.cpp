// The results contract holds in the source tree: the column names of results' tables are spelt only in
// results/ (and its tests), and only a known few files outside results/ open files for writing, none of them
// a run directory's.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "results/run_csv.hpp"

namespace fs = std::filesystem;
namespace rs = dbench::results;

namespace {

// The engine and command sources: everything but results/ and the tests.
std::vector<fs::path> sources_outside_results() {
  std::vector<fs::path> files;
  const fs::path root = DBENCH_SOURCE_DIR;
  for (const char* folder :
       {"analysis", "core", "experiments", "models", "report", "runtime", "sim", "topology", "validation"}) {
    for (const auto& entry : fs::recursive_directory_iterator(root / folder)) {
      const auto ext = entry.path().extension();
      if (entry.is_regular_file() && (ext == ".cpp" || ext == ".hpp")) {
        files.push_back(entry.path());
      }
    }
  }
  REQUIRE(files.size() > 50);
  return files;
}

std::string read_text(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

template <class R>
void add_names(std::set<std::string>& names, const rs::ColumnTable<R>& table) {
  for (const auto& column : table.columns) {
    names.emplace(column.name);
  }
  if (table.group) {
    for (const auto& column : table.group->columns) {
      if (!column.prefix.empty()) {
        names.emplace(column.prefix);
      }
    }
  }
}

}  // namespace

TEST_CASE(
    "results::contract: no column name of a run file's table is a string literal outside "
    "results/") {
  std::set<std::string> names;
  add_names(names, rs::metrics_columns());
  add_names(names, rs::replica_norms_columns());
  add_names(names, rs::schedule_columns());
  add_names(names, rs::trace_columns());
  add_names(names, rs::worker_trace_columns());
  add_names(names, rs::accuracy_time_columns());
  // Words that are also keys of config.toml, summary.json or validation.json, whose own schemas spell them.
  const std::set<std::string> keys_elsewhere = {"iteration", "graph",         "lr",        "worker",
                                                "epoch",     "test_accuracy", "test_loss", "train_loss",
                                                "loss",      "compute_s",     "comm_s"};
  for (const fs::path& file : sources_outside_results()) {
    const std::string text = read_text(file);
    for (const std::string& name : names) {
      if (keys_elsewhere.contains(name)) {
        continue;
      }
      CAPTURE(file.string());
      CAPTURE(name);
      CHECK(text.find('"' + name + '"') == std::string::npos);
    }
  }
}

TEST_CASE("results::contract: only a known few files outside results/ open files for writing") {
  // The report's pages, decoded image folders, downloaded data sets and calibration's own output: none is a
  // run directory's file, which only results/ writes (ResultsDir, write_file_atomically).
  const std::set<std::string> writers = {"report/report_document.cpp", "runtime/image_folder.cpp",
                                         "models/dataset.cpp", "experiments/validate_command.cpp"};
  const fs::path root = DBENCH_SOURCE_DIR;
  for (const fs::path& file : sources_outside_results()) {
    const std::string text = read_text(file);
    const bool writes = text.find("std::ofstream") != std::string::npos ||
                        text.find("\"wb\"") != std::string::npos || text.find("\"w\"") != std::string::npos ||
                        text.find("std::fstream") != std::string::npos;
    CAPTURE(file.string());
    CHECK((!writes || writers.contains(fs::relative(file, root).generic_string())));
  }
}
