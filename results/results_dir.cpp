// Staged results directories. POSIX rename() of a directory is atomic within one file system, which is why
// the staging directory is a sibling of the target rather than a folder under /tmp.
#include "results/results_dir.hpp"

#include <fcntl.h>
#include <fmt/core.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <charconv>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <optional>
#include <random>
#include <system_error>
#include <utility>

#include "results/atomic_file.hpp"
#include "results/read_file.hpp"

namespace dbench::results {
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

// The marker names the machine, so that a later run tells a staging directory of a dead process on this
// machine from one of a live process on another machine sharing the file system.
std::string marker_text() {
  std::array<char, 256> host{};
  ::gethostname(host.data(), host.size() - 1);
  return fmt::format("This directory was written by DBench; `dbench ... --out` may replace it.\nhost: {}\n",
                     host.data());
}

// More than any marker_text: a larger marker file is not one of ours.
constexpr std::size_t kMaxMarkerBytes = 4096;

// The PID of a staging directory's name `.NAME.tmp-PID-XXXXXXXX` (see sibling_name), if it is one.
std::optional<pid_t> staging_pid(const std::string& name) {
  constexpr std::string_view kRole = ".tmp-";
  constexpr std::size_t kRandomDigits = 8;
  const std::size_t role = name.rfind(kRole);
  if (!name.starts_with('.') || role == std::string::npos || role < 2) {
    return std::nullopt;
  }
  const std::size_t dash = name.find('-', role + kRole.size());
  if (dash == std::string::npos || name.size() != dash + 1 + kRandomDigits ||
      name.find_first_not_of("0123456789abcdef", dash + 1) != std::string::npos) {
    return std::nullopt;
  }
  pid_t pid = 0;
  const char* first = name.data() + role + kRole.size();
  const char* last = name.data() + dash;
  const auto [end, error] = std::from_chars(first, last, pid);
  if (error != std::errc() || end != last || first == last || pid <= 0) {
    return std::nullopt;
  }
  return pid;
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

// The target of a ResultsDir: normalized, replaceable, and with its parent made.
fs::path prepared_target(const fs::path& given) {
  fs::path target = normalized_target(given);
  check_replaceable(target);
  std::error_code ec;
  fs::create_directories(target.parent_path(), ec);
  if (ec) {
    throw ResultsDirError(fmt::format("cannot create the parent directory of results directory '{}': {}",
                                      target.string(), ec.message()));
  }
  return target;
}

}  // namespace

StagingDir::StagingDir(const fs::path& beside, StagingCleanup* cleanup) : cleanup_(cleanup) {
  remove_abandoned_staging(beside);
  // A signal comes after the directory is registered and marked, so that it is removed now or later.
  const auto hold = this->hold();
  std::error_code ec;
  constexpr int kAttempts = 16;
  for (int attempt = 0; attempt < kAttempts && path_.empty(); ++attempt) {
    const fs::path candidate = sibling_name(beside, "tmp");
    if (fs::create_directory(candidate, ec)) {
      path_ = candidate;
    } else if (ec) {
      throw ResultsDirError(
          fmt::format("cannot create a staging directory next to '{}': {}", beside.string(), ec.message()));
    }
  }
  if (path_.empty()) {
    throw ResultsDirError(
        fmt::format("cannot find a free staging directory name next to '{}'", beside.string()));
  }
  if (cleanup_ != nullptr) {
    cleanup_->add(path_);
  }
  // Written whole under a temporary name and renamed: a marker that is there is complete, even when the
  // process is killed while writing it, so that a later run can take the directory as its own to remove.
  try {
    write_file_atomically(path_ / kMarkerName, marker_text());
  } catch (const std::runtime_error& e) {
    remove();  // no destructor runs for an object whose constructor threw
    throw ResultsDirError(
        fmt::format("cannot mark the staging directory next to '{}': {}", beside.string(), e.what()));
  }
}

StagingDir::~StagingDir() {
  remove();
}

StagingDir::StagingDir(StagingDir&& other) noexcept
    : path_(std::exchange(other.path_, fs::path())), cleanup_(std::exchange(other.cleanup_, nullptr)) {}

StagingDir& StagingDir::operator=(StagingDir&& other) noexcept {
  if (this != &other) {
    remove();
    path_ = std::exchange(other.path_, fs::path());
    cleanup_ = std::exchange(other.cleanup_, nullptr);
  }
  return *this;
}

std::unique_lock<std::recursive_mutex> StagingDir::hold() const {
  return cleanup_ != nullptr ? cleanup_->hold() : std::unique_lock<std::recursive_mutex>();
}

void StagingDir::remove() {
  if (path_.empty()) {
    return;
  }
  const auto hold = this->hold();
  std::error_code ec;
  fs::remove_all(path_, ec);  // best effort: a destructor must not throw, and a leftover is hidden anyway
  if (cleanup_ != nullptr) {
    cleanup_->forget(path_);
  }
  path_.clear();
}

void StagingDir::replace(const fs::path& target, std::string_view what) {
  // A signal waits until the staged directory is in place (and then has nothing left to remove).
  const auto hold = this->hold();
  replace_directory(path_, target, what);
  if (cleanup_ != nullptr) {
    cleanup_->forget(path_);
  }
  path_.clear();
}

void replace_directory(const fs::path& staged, const fs::path& target, std::string_view what) {
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(target, ec))) {
    fs::rename(staged, target, ec);
    if (ec) {
      throw ResultsDirError(
          fmt::format("cannot move the staged {} into '{}': {}", what, target.string(), ec.message()));
    }
    return;
  }

  // Linux swaps two directories in one step, so the target never goes missing even for a moment.
  if (::renameat2(AT_FDCWD, staged.c_str(), AT_FDCWD, target.c_str(), RENAME_EXCHANGE) == 0) {
    fs::remove_all(staged, ec);  // the old content now lives here; a leftover is harmless and hidden
    return;
  }
  const int exchange_error = errno;
  if (exchange_error != EINVAL && exchange_error != ENOSYS && exchange_error != ENOTSUP &&
      exchange_error != EXDEV) {
    throw ResultsDirError(fmt::format("cannot replace '{}' with the staged {}: {}", target.string(), what,
                                      errno_text(exchange_error)));
  }

  // File systems without the exchange: move the target aside, move the staged one in, and put the target back
  // on failure.
  const fs::path aside = sibling_name(target, "old");
  fs::rename(target, aside, ec);
  if (ec) {
    throw ResultsDirError(
        fmt::format("cannot move the previous '{}' aside: {}", target.string(), ec.message()));
  }
  fs::rename(staged, target, ec);
  if (ec) {
    std::error_code restore_ec;
    fs::rename(aside, target, restore_ec);
    throw ResultsDirError(
        restore_ec ? fmt::format("cannot move the staged {} into '{}' ({}), and the previous {} could "
                                 "not be put back; they are in '{}'",
                                 what, target.string(), ec.message(), what, aside.string())
                   : fmt::format("cannot move the staged {} into '{}': {}; the previous {} are unchanged",
                                 what, target.string(), ec.message(), what));
  }
  fs::remove_all(aside, ec);
}

ResultsDir::ResultsDir(const fs::path& target, StagingCleanup* cleanup)
    : target_(prepared_target(target)), staging_(target_, cleanup) {}

ResultsDir::ResultsDir(ResultsDir&& other) noexcept
    : target_(std::move(other.target_)),
      staging_(std::move(other.staging_)),
      committed_(std::exchange(other.committed_, false)) {}

ResultsDir& ResultsDir::operator=(ResultsDir&& other) noexcept {
  if (this != &other) {
    target_ = std::move(other.target_);
    staging_ = std::move(other.staging_);
    committed_ = std::exchange(other.committed_, false);
  }
  return *this;
}

void ResultsDir::check_writable() const {
  if (committed_) {
    throw ResultsDirError(fmt::format("results directory '{}' is already committed", target_.string()));
  }
  if (staging_.path().empty()) {
    throw ResultsDirError("results directory was moved from and has nothing staged");
  }
}

fs::path ResultsDir::path(std::string_view relative_name) const {
  const auto hold = staging_.hold();
  return staged_path(relative_name);
}

fs::path ResultsDir::staged_path(std::string_view relative_name) const {
  check_writable();
  const fs::path relative = fs::path(relative_name).lexically_normal();
  const bool escapes = relative.empty() || relative.is_absolute() || *relative.begin() == "..";
  if (escapes || !relative.has_filename()) {
    throw ResultsDirError(
        fmt::format("'{}' is not a file name inside results directory '{}'; use a relative path without '..'",
                    relative_name, target_.string()));
  }
  const fs::path full = staging_.path() / relative;
  std::error_code ec;
  fs::create_directories(full.parent_path(), ec);
  if (ec) {
    throw ResultsDirError(fmt::format("cannot create '{}' in the staging directory of '{}': {}",
                                      relative.parent_path().string(), target_.string(), ec.message()));
  }
  return full;
}

void ResultsDir::write_text(std::string_view relative_name, std::string_view content) const {
  const auto hold = staging_.hold();
  const fs::path file = staged_path(relative_name);
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

void ResultsDir::commit() {
  check_writable();
  check_replaceable(target_);
  staging_.replace(target_, "results");
  committed_ = true;
}

void check_results_target(const fs::path& target) {
  check_replaceable(normalized_target(target));
}

void check_sweep_folder(const fs::path& out, std::span<const fs::path> directories,
                        std::span<const fs::path> files) {
  if (out.empty()) {
    throw ResultsDirError("the sweep folder's path is empty; name a folder with --out");
  }
  std::error_code ec;
  const fs::path absolute = fs::absolute(out, ec).lexically_normal();
  if (!ec && absolute == absolute.root_path()) {
    throw ResultsDirError(fmt::format("'{}' cannot be a sweep folder: it is the root", out.string()));
  }
  const auto status = fs::status(out, ec);
  if (ec && ec != std::errc::no_such_file_or_directory) {
    throw ResultsDirError(fmt::format("cannot use '{}' as a sweep folder: {}", out.string(), ec.message()));
  }
  if (!fs::exists(status)) {
    if (fs::is_symlink(fs::symlink_status(out, ec))) {
      throw ResultsDirError(fmt::format(
          "cannot use '{}' as a sweep folder: it is a symbolic link that leads to nothing", out.string()));
    }
    return;
  }
  if (!fs::is_directory(status)) {
    throw ResultsDirError(
        fmt::format("'{}' exists and is not a directory; choose another --out", out.string()));
  }
  const bool empty = fs::is_empty(out, ec);
  if (!empty && !fs::is_regular_file(fs::symlink_status(out / kSweepMarkerName, ec))) {
    throw ResultsDirError(fmt::format(
        "refusing to write a sweep into '{}': it is a non-empty folder that no DBench sweep was started in "
        "(no {} file), and a sweep would replace files there; choose another --out (a sweep folder written "
        "by an older DBench is taken once that file is created in it)",
        out.string(), kSweepMarkerName));
  }
  const auto check = [&](const fs::path& relative, bool directory) {
    const auto entry = fs::symlink_status(out / relative, ec);
    if (!fs::exists(entry)) {
      return;
    }
    const char* reason = fs::is_symlink(entry)                       ? "is a symbolic link"
                         : directory && !fs::is_directory(entry)     ? "is not a directory"
                         : !directory && !fs::is_regular_file(entry) ? "is not a regular file"
                                                                     : nullptr;
    if (reason != nullptr) {
      throw ResultsDirError(fmt::format(
          "sweep folder '{}': '{}' {}; a sweep writes only its own entries and never follows one elsewhere, "
          "so remove it (or choose another --out)",
          out.string(), relative.string(), reason));
    }
  };
  for (const auto& d : directories) {
    check(d, true);
  }
  for (const auto& f : files) {
    check(f, false);
  }
}

void claim_sweep_folder(const fs::path& out) {
  check_sweep_folder(out, {}, {});
  std::error_code ec;
  fs::create_directories(out, ec);
  if (ec) {
    throw ResultsDirError(fmt::format("cannot create sweep folder '{}': {}", out.string(), ec.message()));
  }
  if (fs::exists(fs::symlink_status(out / kSweepMarkerName, ec))) {
    return;
  }
  const std::string marker = "This folder holds a DBench sweep; `dbench sweep --out` writes into it.\n";
  const int fd =
      ::open((out / kSweepMarkerName).c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
  const bool written =
      fd >= 0 && ::write(fd, marker.data(), marker.size()) == static_cast<ssize_t>(marker.size());
  const int error = errno;
  if (fd >= 0) {
    ::close(fd);
  }
  if (!written) {
    throw ResultsDirError(
        fmt::format("cannot write '{}': {}", (out / kSweepMarkerName).string(), errno_text(error)));
  }
}

bool process_ended(int pid) noexcept {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!stat || !std::getline(stat, line)) {
    return ::kill(pid, 0) != 0 && errno == ESRCH;  // no /proc: at least tell a free pid from a live one
  }
  // "pid (comm) S ...": the name may hold spaces and parentheses, the state follows the last ')'.
  const auto close = line.rfind(')');
  const char state = close != std::string::npos && close + 2 < line.size() ? line[close + 2] : '?';
  return state == 'Z' || state == 'X';
}

int remove_abandoned_staging(const fs::path& target) {
  fs::path parent;
  try {
    parent = normalized_target(target).parent_path();  // where ResultsDir(target) stages
  } catch (const std::exception&) {
    return 0;
  }
  const std::string marker = marker_text();
  int removed = 0;
  std::error_code ec;
  for (fs::directory_iterator it(parent, ec), end; !ec && it != end; it.increment(ec)) {
    const std::optional<pid_t> pid = staging_pid(it->path().filename().string());
    std::error_code entry_ec;
    if (!pid || *pid == ::getpid() || !fs::is_directory(fs::symlink_status(it->path(), entry_ec))) {
      continue;
    }
    // Written by a dbench on this machine (another one's pids mean nothing here), whose process is gone.
    std::string text;
    try {
      text = read_file(it->path() / ResultsDir::kMarkerName, kMaxMarkerBytes, "marker");
    } catch (const FileReadError&) {
      continue;  // not one of ours
    }
    if (text == marker && process_ended(*pid)) {
      fs::remove_all(it->path(), entry_ec);
      removed += entry_ec ? 0 : 1;
    }
  }
  return removed;
}

}  // namespace dbench::results
