// A results directory read as untrusted input: summary.csv's run cells and the symlinks inside it decide
// which files a report opens, so every path is resolved and checked to stay inside the directory first.
#pragma once

#include <cstdint>
#include <filesystem>
#include <stdexcept>
#include <string>

namespace dbench::results {

/// A path that leads out of a results directory, or a file in it that cannot be read; the message names it.
class ResultsTreeError : public std::runtime_error {
 public:
  /// Wraps a complete, user-facing message.
  explicit ResultsTreeError(const std::string& message) : std::runtime_error(message) {}
};

/// The largest file of a results directory that DBench reads whole (summary.csv, metrics.csv, summary.json):
/// 1 GiB, a thousand times the metrics of a long run, so that a damaged or hostile file ends as one error
/// instead of exhausting memory.
inline constexpr std::uintmax_t kMaxResultsFileBytes = std::uintmax_t{1} << 30;

/// The bytes of the regular file `file`, of at most kMaxResultsFileBytes; `shown` names it in errors. Throws
/// ResultsTreeError saying why it cannot be read.
std::string read_results_file(const std::filesystem::path& file, const std::filesystem::path& shown);

/// The files under one directory, reachable only by relative paths that stay inside it.
///
/// A path is refused when it is absolute, holds a '..' component, or leads out of the directory through a
/// symlink (checked on the fully resolved path); a symlink from inside to inside is followed.
class ResultsTree {
 public:
  /// `root` must be a directory; it is resolved once, so a symlink in the root's own path is the user's.
  explicit ResultsTree(const std::filesystem::path& root);

  /// The directory as given (absolute), as messages show it.
  const std::filesystem::path& root() const { return shown_; }
  /// `relative` as messages show it: under root().
  std::filesystem::path shown(const std::filesystem::path& relative) const { return shown_ / relative; }

  /// Where `relative` leads, symlinks resolved, inside the directory; throws ResultsTreeError saying why not.
  std::filesystem::path resolve(const std::filesystem::path& relative) const;
  /// Whether `relative` exists; throws ResultsTreeError when it leads out of the directory.
  bool exists(const std::filesystem::path& relative) const;
  /// Whether `relative` is a directory; throws ResultsTreeError when it leads out of the directory.
  bool is_directory(const std::filesystem::path& relative) const;
  /// The bytes of the file `relative` (read_results_file); throws ResultsTreeError when it leads out or
  /// cannot be read.
  std::string read(const std::filesystem::path& relative) const;

 private:
  std::filesystem::path shown_;
  std::filesystem::path canonical_;
};

}  // namespace dbench::results
