// The results contract holds in the source tree: the column names of results' tables and summary.json's keys
// are spelt only in results/ (and its tests), and only a known few files outside results/ open files for
// writing, none of them a run directory's.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "results/run_csv.hpp"
#include "results/summary_csv.hpp"
#include "results/summary_json.hpp"

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
    "results::contract: no column name of a run file's or summary.csv's table, nor a summary.json key, is a "
    "string literal outside results/") {
  std::set<std::string> names;
  add_names(names, rs::metrics_columns());
  add_names(names, rs::replica_norms_columns());
  add_names(names, rs::schedule_columns());
  add_names(names, rs::trace_columns());
  add_names(names, rs::worker_trace_columns());
  add_names(names, rs::accuracy_time_columns());
  add_names(names, rs::summary_columns());
  for (const auto& key : rs::summary_json_keys()) {
    names.emplace(key.name);
  }
  // Words that are also keys of another file, whose own schema spells them, or words used for other purposes.
  const std::map<std::string, std::string> keys_elsewhere = {
      {"algorithm", "config.toml's [algorithm] and validation.json's key"},
      {"allreduce", "an algorithm.kind and a calibration kernel"},
      {"augment_copies", "config.toml's train.augment_copies"},
      {"best_test_accuracy", "a checkpoint's own key"},
      {"comm_s", "validation.json's key"},
      {"compute_s", "validation.json's key"},
      {"dataset", "config.toml's train.dataset"},
      {"device", "calibration.json's key"},
      {"edges", "graphs.json's key, a report heading and an analysis quantity"},
      {"epochs", "config.toml's train.epochs"},
      {"fabric", "config.toml's platform.fabric"},
      {"final_test_accuracy", "a checkpoint's own key"},
      {"final_test_loss", "a checkpoint's own key"},
      {"graph", "config.toml's algorithm.graph and graphs.json's key"},
      {"iteration", "a plot axis"},
      {"iterations", "config.toml's train.iterations"},
      {"label", "a report heading"},
      {"lr", "config.toml's [lr]"},
      {"mean_degree", "graphs.json's key"},
      {"model", "config.toml's train.model and a profile's key"},
      {"name", "config.toml's and a sweep file's name"},
      {"norm_variance_final", "an analysis quantity"},
      {"norm_variance_mean", "an analysis quantity"},
      {"parameters", "a profile's and a report heading"},
      {"platform", "config.toml's [platform]"},
      {"seconds_per_iteration", "validation.json's key"},
      {"seed", "config.toml's seed"},
      {"spectral_gap", "graphs.json's key and an analysis quantity"},
      {"target_accuracy", "a sweep file's key"},
      {"timing_batch_per_gpu", "config.toml's platform.timing_batch_per_gpu"},
      {"timing_model", "config.toml's platform.timing_model"},
      {"timing_only", "a sweep file's key"},
      {"workers", "config.toml's train.workers and a checkpoint's key"},
  };
  for (const auto& [name, reason] : keys_elsewhere) {
    CAPTURE(name);
    CHECK(names.contains(name));  // an exemption no table needs any more is dropped
    CHECK_FALSE(reason.empty());
  }
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
                                         "models/dataset.cpp"};
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
