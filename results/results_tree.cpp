#include "results/results_tree.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <system_error>

#include "results/read_file.hpp"

namespace dbench::results {
namespace fs = std::filesystem;

ResultsTree::ResultsTree(const fs::path& root) {
  std::error_code ec;
  shown_ = fs::absolute(root, ec).lexically_normal();
  if (!shown_.has_filename()) {
    shown_ = shown_.parent_path();
  }
  canonical_ = fs::canonical(root, ec);
  if (ec || !fs::is_directory(canonical_, ec)) {
    throw ResultsTreeError(fmt::format("{} is not a directory", shown_.string()));
  }
}

fs::path ResultsTree::resolve(const fs::path& relative) const {
  const fs::path shown = this->shown(relative);
  if (relative.has_root_path()) {
    throw ResultsTreeError(
        fmt::format("{} is an absolute path, not one inside {}", relative.string(), shown_.string()));
  }
  if (std::any_of(relative.begin(), relative.end(), [](const fs::path& part) { return part == ".."; })) {
    throw ResultsTreeError(fmt::format("{} climbs out of {} with '..'", shown.string(), shown_.string()));
  }
  std::error_code ec;
  const fs::path resolved = fs::weakly_canonical(canonical_ / relative, ec);
  if (ec) {
    throw ResultsTreeError(fmt::format("cannot resolve {}: {}", shown.string(), ec.message()));
  }
  // Component by component, so that /data/sweep2 is not taken to be inside /data/sweep.
  const auto [root_end, inside_end] =
      std::mismatch(canonical_.begin(), canonical_.end(), resolved.begin(), resolved.end());
  if (root_end != canonical_.end()) {
    throw ResultsTreeError(
        fmt::format("{} leads out of {} (to {})", shown.string(), shown_.string(), resolved.string()));
  }
  return resolved;
}

bool ResultsTree::exists(const fs::path& relative) const {
  std::error_code ec;
  return fs::exists(resolve(relative), ec);
}

bool ResultsTree::is_directory(const fs::path& relative) const {
  std::error_code ec;
  return fs::is_directory(resolve(relative), ec);
}

std::string ResultsTree::read(const fs::path& relative) const {
  return read_results_file(resolve(relative), shown(relative));
}

std::string read_results_file(const fs::path& file, const fs::path& shown) {
  try {
    return read_file(file, kMaxResultsFileBytes, "results file");
  } catch (const FileReadError& e) {
    const std::string reason = [&]() -> std::string {
      switch (e.failure()) {
        case ReadFailure::kMissing:
          return "no such file";
        case ReadFailure::kDirectory:
        case ReadFailure::kNotRegular:
          return "not a regular file";
        case ReadFailure::kUnopenable:
        case ReadFailure::kReadError:
        case ReadFailure::kTooLarge:
          break;
      }
      return e.reason();
    }();
    throw ResultsTreeError(fmt::format("cannot read {}: {}", shown.string(), reason));
  }
}

}  // namespace dbench::results
