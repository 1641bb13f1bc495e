#include "results/results_tree.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <array>
#include <fstream>
#include <system_error>

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
  std::error_code ec;
  if (!fs::is_regular_file(file, ec)) {
    throw ResultsTreeError(fmt::format("cannot read {}: {}", shown.string(),
                                       fs::exists(file, ec) ? "not a regular file" : "no such file"));
  }
  const auto too_large = [&] {
    return ResultsTreeError(fmt::format("cannot read {}: larger than the {} GiB limit for a results file",
                                        shown.string(), kMaxResultsFileBytes >> 30));
  };
  if (const auto size = fs::file_size(file, ec); !ec && size > kMaxResultsFileBytes) {
    throw too_large();
  }
  std::ifstream in(file, std::ios::binary);
  if (!in) {
    throw ResultsTreeError(fmt::format("cannot read {}", shown.string()));
  }
  // Chunks up to one byte past the limit, so that a file that grows while it is read is still refused.
  std::string text;
  std::array<char, 65536> chunk{};
  while (in && text.size() <= kMaxResultsFileBytes) {
    in.read(chunk.data(), static_cast<std::streamsize>(chunk.size()));
    text.append(chunk.data(), static_cast<std::size_t>(in.gcount()));
  }
  if (in.bad()) {
    throw ResultsTreeError(fmt::format("cannot read {}: read error", shown.string()));
  }
  if (text.size() > kMaxResultsFileBytes) {
    throw too_large();
  }
  return text;
}

}  // namespace dbench::results
