// Staged results directories. POSIX rename() of a directory is atomic within one file system, which is why
// the staging directory is a sibling of the target rather than a folder under /tmp.
#include "experiments/results_dir.hpp"

#include <fcntl.h>
#include <fmt/core.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <fstream>
#include <random>
#include <system_error>
#include <utility>

namespace dbench::experiments {
namespace fs = std::filesystem;
namespace {

std::string errno_text(int error) {
  return std::generic_category().message(error);
}

// A hidden sibling name unique to this process and attempt: `.NAME.tmp-<pid>-<random>`.
fs::path sibling_name(const fs::path& target, std::string_view role) {
  std::random_device random;
  return target.parent_path() /
         fmt::format(".{}.{}-{}-{:08x}", target.filename().string(), role, ::getpid(), random());
}

// A directory may be replaced if it is empty or was written by a ResultsDir; anything else might be a
// user's unrelated files (`--out .`), which a results writer must never delete.
void check_replaceable(const fs::path& target) {
  std::error_code ec;
  const auto status = fs::status(target, ec);
  if (ec || !fs::exists(status)) {
    return;
  }
  if (!fs::is_directory(status)) {
    throw ResultsDirError(
        fmt::format("results directory '{}' exists and is not a directory; remove it or choose another --out",
                    target.string()));
  }
  const bool empty = fs::is_empty(target, ec);
  const bool ours = fs::exists(target / ResultsDir::kMarkerName, ec);
  if (!empty && !ours) {
    throw ResultsDirError(fmt::format(
        "refusing to replace '{}': it is a non-empty directory that DBench did not write (no {} file); "
        "choose another --out or remove it",
        target.string(), ResultsDir::kMarkerName));
  }
}

fs::path normalized_target(const fs::path& target) {
  if (target.empty()) {
    throw ResultsDirError("results directory path is empty");
  }
  fs::path absolute = fs::absolute(target).lexically_normal();
  if (!absolute.has_filename()) {
    absolute = absolute.parent_path();  // "runs/a/" names the folder "runs/a"
  }
  std::error_code ec;
  if (fs::is_symlink(fs::symlink_status(absolute, ec))) {
    // Swap the directory the link points to, keeping the user's link (e.g. to scratch storage) in place.
    absolute = fs::canonical(absolute, ec);
    if (ec) {
      throw ResultsDirError(
          fmt::format("results directory '{}' is a symbolic link that cannot be resolved: {}",
                      target.string(), ec.message()));
    }
  }
  if (absolute == absolute.root_path() || !absolute.has_filename()) {
    throw ResultsDirError(
        fmt::format("'{}' cannot be a results directory: it has no parent", target.string()));
  }
  return absolute;
}

}  // namespace

ResultsDir::ResultsDir(const fs::path& target) : target_(normalized_target(target)) {
  check_replaceable(target_);
  std::error_code ec;
  fs::create_directories(target_.parent_path(), ec);
  if (ec) {
    throw ResultsDirError(fmt::format("cannot create the parent directory of results directory '{}': {}",
                                      target_.string(), ec.message()));
  }
  constexpr int kAttempts = 16;
  for (int attempt = 0; attempt < kAttempts && staging_.empty(); ++attempt) {
    const fs::path candidate = sibling_name(target_, "tmp");
    if (fs::create_directory(candidate, ec)) {
      staging_ = candidate;
    } else if (ec) {
      throw ResultsDirError(
          fmt::format("cannot create a staging directory next to '{}': {}", target_.string(), ec.message()));
    }
  }
  if (staging_.empty()) {
    throw ResultsDirError(
        fmt::format("cannot find a free staging directory name next to '{}'", target_.string()));
  }
  write_text(kMarkerName, "This directory was written by DBench; `dbench ... --out` may replace it.\n");
}

ResultsDir::ResultsDir(const fs::path& target, const ExperimentConfig& config) : ResultsDir(target) {
  write_config(config);
}

ResultsDir::~ResultsDir() {
  if (!committed_ && !staging_.empty()) {
    std::error_code ec;
    fs::remove_all(staging_, ec);  // best effort: a destructor must not throw, and DIR is untouched anyway
  }
}

ResultsDir::ResultsDir(ResultsDir&& other) noexcept
    : target_(std::move(other.target_)),
      staging_(std::exchange(other.staging_, fs::path())),
      committed_(std::exchange(other.committed_, false)) {}

ResultsDir& ResultsDir::operator=(ResultsDir&& other) noexcept {
  if (this != &other) {
    if (!committed_ && !staging_.empty()) {
      std::error_code ec;
      fs::remove_all(staging_, ec);
    }
    target_ = std::move(other.target_);
    staging_ = std::exchange(other.staging_, fs::path());
    committed_ = std::exchange(other.committed_, false);
  }
  return *this;
}

void ResultsDir::check_writable() const {
  if (committed_) {
    throw ResultsDirError(fmt::format("results directory '{}' is already committed", target_.string()));
  }
  if (staging_.empty()) {
    throw ResultsDirError("results directory was moved from and has nothing staged");
  }
}

fs::path ResultsDir::path(std::string_view relative_name) const {
  check_writable();
  const fs::path relative = fs::path(relative_name).lexically_normal();
  const bool escapes = relative.empty() || relative.is_absolute() || *relative.begin() == "..";
  if (escapes || !relative.has_filename()) {
    throw ResultsDirError(
        fmt::format("'{}' is not a file name inside results directory '{}'; use a relative path without '..'",
                    relative_name, target_.string()));
  }
  const fs::path full = staging_ / relative;
  std::error_code ec;
  fs::create_directories(full.parent_path(), ec);
  if (ec) {
    throw ResultsDirError(fmt::format("cannot create '{}' in the staging directory of '{}': {}",
                                      relative.parent_path().string(), target_.string(), ec.message()));
  }
  return full;
}

void ResultsDir::write_text(std::string_view relative_name, std::string_view content) const {
  const fs::path file = path(relative_name);
  errno = 0;  // so that a failure below reports its own cause, not an older one
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  out.write(content.data(), static_cast<std::streamsize>(content.size()));
  out.close();
  if (!out) {
    const int error = errno;
    throw ResultsDirError(fmt::format("cannot write '{}' of results directory '{}': {}", relative_name,
                                      target_.string(), error != 0 ? errno_text(error) : "write failed"));
  }
}

void ResultsDir::write_config(const ExperimentConfig& config) const {
  write_text("config.toml", to_toml(config));
}

void ResultsDir::commit() {
  check_writable();
  check_replaceable(target_);
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(target_, ec))) {
    fs::rename(staging_, target_, ec);
    if (ec) {
      throw ResultsDirError(
          fmt::format("cannot move the staged results into '{}': {}", target_.string(), ec.message()));
    }
    committed_ = true;
    return;
  }

  // Linux swaps two directories in one step, so DIR never goes missing even for a moment.
  if (::renameat2(AT_FDCWD, staging_.c_str(), AT_FDCWD, target_.c_str(), RENAME_EXCHANGE) == 0) {
    committed_ = true;
    fs::remove_all(staging_, ec);  // the old run now lives here; a leftover is harmless and hidden
    return;
  }
  const int exchange_error = errno;
  if (exchange_error != EINVAL && exchange_error != ENOSYS && exchange_error != ENOTSUP &&
      exchange_error != EXDEV) {
    throw ResultsDirError(fmt::format("cannot replace '{}' with the staged results: {}", target_.string(),
                                      errno_text(exchange_error)));
  }

  // File systems without the exchange: move DIR aside, move the staged one in, and put DIR back on failure.
  const fs::path aside = sibling_name(target_, "old");
  fs::rename(target_, aside, ec);
  if (ec) {
    throw ResultsDirError(
        fmt::format("cannot move the previous '{}' aside: {}", target_.string(), ec.message()));
  }
  fs::rename(staging_, target_, ec);
  if (ec) {
    std::error_code restore_ec;
    fs::rename(aside, target_, restore_ec);
    throw ResultsDirError(
        restore_ec
            ? fmt::format("cannot move the staged results into '{}' ({}), and the previous results could "
                          "not be put back; they are in '{}'",
                          target_.string(), ec.message(), aside.string())
            : fmt::format("cannot move the staged results into '{}': {}; the previous results are "
                          "unchanged",
                          target_.string(), ec.message()));
  }
  committed_ = true;
  fs::remove_all(aside, ec);
}

}  // namespace dbench::experiments
