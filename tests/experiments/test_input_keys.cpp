// The command line names the config key of a run input that models/, core/ and runtime/ report by input.
#include <doctest/doctest.h>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/errors.hpp"
#include "experiments/input_keys.hpp"
#include "models/errors.hpp"
#include "runtime/errors.hpp"

namespace {

namespace de = dbench::experiments;
namespace dm = dbench::models;
namespace fs = std::filesystem;

}  // namespace

TEST_CASE("experiments::input keys: an error about a run input is shown under its config key") {
  CHECK(de::error_message(dm::DataError(dm::RunInput::augment_copies, "must be in [1, 50], got 0")) ==
        "train.augment_copies: must be in [1, 50], got 0");
  CHECK(de::error_message(dbench::core::ValueError(dm::RunInput::eval_every, "must be >= 1, got 0")) ==
        "train.eval_every: must be >= 1, got 0");
  CHECK(de::error_message(dm::PartitionError("label -1 of sample 3 is negative")) ==
        "label -1 of sample 3 is negative");
  CHECK(de::error_message(dbench::runtime::WorkerCountError(4, 2)) ==
        "train.workers = 4 but 2 workers were launched; set train.workers=2 or launch 4 workers");
  CHECK(de::error_message(dbench::core::DivergenceError("training diverged at iteration 3: the mean train "
                                                        "loss is nan")) ==
        "training diverged at iteration 3: the mean train loss is nan; lower train.lr");
  // The library's own message names the input without a config key.
  const dm::DataError error(dm::RunInput::data_dir, "x has no class sub-folders");
  CHECK(std::string(error.what()) == "data dir: x has no class sub-folders");
  for (const auto input : {dm::RunInput::model, dm::RunInput::dataset, dm::RunInput::data_dir,
                           dm::RunInput::workers, dm::RunInput::batch_per_worker,
                           dm::RunInput::augment_copies, dm::RunInput::eval_every, dm::RunInput::lr}) {
    CHECK(de::run_input_key(input).starts_with("train."));
  }
}

namespace {

// The string literals of one line of code, quotes included.
std::vector<std::string> string_literals(const std::string& line) {
  std::vector<std::string> literals;
  for (std::size_t i = 0; i < line.size(); ++i) {
    if (line[i] != '"' || (i > 0 && line[i - 1] == '\'')) {
      continue;
    }
    std::size_t end = i + 1;
    while (end < line.size() && line[end] != '"') {
      end += line[end] == '\\' ? 2 : 1;
    }
    if (end >= line.size()) {
      break;
    }
    literals.push_back(line.substr(i, end - i + 1));
    i = end;
  }
  return literals;
}

// Whether `text` holds "<section>.<key>": a config section's name, not inside a longer word, a dot and a
// lower-case letter or underscore.
bool names_config_key(const std::string& text) {
  const auto word = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_'; };
  for (const std::string section : {"train.", "algorithm.", "platform."}) {
    for (auto at = text.find(section); at != std::string::npos; at = text.find(section, at + 1)) {
      const std::size_t next = at + section.size();
      const bool starts = at == 0 || !word(text[at - 1]);
      if (starts && next < text.size() &&
          (std::islower(static_cast<unsigned char>(text[next])) != 0 || text[next] == '_')) {
        return true;
      }
    }
  }
  return false;
}

}  // namespace

TEST_CASE("experiments::input keys: core, runtime and models name no config key in their string literals") {
  // A string literal holding "<section>.<key>", the sections of the experiment config (scanned by hand:
  // <regex>'s inlined code raises -Wmaybe-uninitialized under the sanitizers).
  // The header a written model profile starts with tells its reader how a config names the file.
  const std::string allowed = "# A DBench model profile: platform.timing_model";
  std::vector<std::string> found;
  for (const char* layer : {"core", "runtime", "models"}) {
    for (const auto& entry : fs::recursive_directory_iterator(fs::path(DBENCH_SOURCE_DIR) / layer)) {
      const auto extension = entry.path().extension();
      if (!entry.is_regular_file() || (extension != ".cpp" && extension != ".hpp")) {
        continue;
      }
      std::ifstream in(entry.path());
      std::string line;
      for (int number = 1; std::getline(in, line); ++number) {
        const auto first = line.find_first_not_of(' ');
        if (first != std::string::npos && line.compare(first, 2, "//") == 0) {
          continue;
        }
        for (const std::string& text : string_literals(line)) {
          if (names_config_key(text) && text.find(allowed) == std::string::npos) {
            found.push_back(entry.path().lexically_relative(DBENCH_SOURCE_DIR).string() + ":" +
                            std::to_string(number) + ": " + text);
          }
        }
      }
    }
  }
  std::string listed;
  for (const auto& place : found) {
    listed += place + "\n";
  }
  INFO(listed);
  CHECK(found.empty());
}
