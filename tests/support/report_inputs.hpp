// Inputs for report tests: summary.csv's header, and text built to run commands if it ever reached gnuplot.
#pragma once

#include <fmt/core.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include "results/results_dir.hpp"
#include "results/summary_csv.hpp"

namespace dbench::testing {

/// summary.csv's header: the contract's columns and one grid axis.
inline std::string summary_header() {
  std::string header;
  for (std::string_view column : results::required_summary_columns()) {
    header += header.empty() ? "" : ",";
    header += column;
  }
  return header + ",train.workers\n";
}

/// A done row of summary.csv for run cell `run` with `label`, at 8 workers; `k` varies the numbers.
inline std::string done_row(const std::string& run, const std::string& label, int k) {
  return fmt::format(
      "{0},done,{1},dpsgd,ring,8,1,0.{2},0.{2},1,20,{3},2,0.5,0.01,0.01,0.1,0.1,0.3,10,1,0.01,"
      "100,0.9,1000,20000,0.2,1,mlp,frontier,1000,,64,60000,1280,0.1,8\n",
      run, label, 50 + k, 8 * (k + 1));
}

/// A well-formed metrics.csv with three evaluations.
inline constexpr const char* kMetrics =
    "iteration,test_accuracy,norm_variance,consensus_distance\n0,0.1,0,0\n10,0.5,0.01,0.1\n20,0.6,0.02,0.1\n";

/// Marks `dir` (created if missing) as a sweep folder, as `dbench sweep` does before writing into it: a
/// report writes only into folders that hold the marker.
inline void mark_sweep_folder(const std::filesystem::path& dir) {
  std::filesystem::create_directories(dir);
  std::ofstream(dir / results::kSweepMarkerName) << "This folder holds a DBench sweep.\n";
}

/// Text built to run commands if it reached gnuplot's parser as it is: every byte from 1 to 255 (newlines,
/// quotes, backquotes, `@`, `\` among them) around the payloads of each route into a gnuplot script.
inline std::string hostile_text(const std::filesystem::path& canary) {
  const std::string c = canary.string();
  std::string text = fmt::format(
      "x\n!touch {0}-shell\n# ' \" `touch {0}-backquote` @x system(\"touch {0}-system\")"
      "' . system('touch {0}-system2') . '\n",
      c);
  for (int b = 1; b < 256; ++b) {
    text.push_back(static_cast<char>(b));
  }
  return text;
}

/// `text` as one CSV field (quoted; quotes doubled).
inline std::string csv_field(const std::string& text) {
  std::string out = "\"";
  for (char ch : text) {
    out += ch == '"' ? std::string("\"\"") : std::string(1, ch);
  }
  return out + "\"";
}

/// The files a gnuplot command would have made from the canary's payloads.
inline std::vector<std::filesystem::path> canaries_made(const std::filesystem::path& canary) {
  std::vector<std::filesystem::path> made;
  for (const auto& entry : std::filesystem::directory_iterator(canary.parent_path())) {
    if (entry.path().filename().string().starts_with(canary.filename().string())) {
      made.push_back(entry.path());
    }
  }
  return made;
}

}  // namespace dbench::testing
