#include "results/sweep_lock.hpp"

#include <fcntl.h>
#include <fmt/core.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <optional>

#include "results/results_dir.hpp"

namespace dbench::results {
namespace fs = std::filesystem;
namespace {

// The lock file `name` in `out`, opened (created if missing) as a regular file of its own: never through a
// link, and without blocking on a FIFO put in its place.
int open_lock_file(const fs::path& out, std::string_view name) {
  const fs::path path = out / name;
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0666);
  if (fd < 0) {
    const int error = errno;
    throw ResultsDirError(fmt::format("sweep folder '{}': cannot open its lock file '{}': {}", out.string(),
                                      name, error == ELOOP ? "it is a symbolic link" : std::strerror(error)));
  }
  struct stat info {};
  if (::fstat(fd, &info) != 0 || !S_ISREG(info.st_mode)) {
    ::close(fd);
    throw ResultsDirError(fmt::format(
        "sweep folder '{}': its lock file '{}' is not a regular file; remove it", out.string(), name));
  }
  return fd;
}

// The pid recorded in a lock file, when it names a process that is still there.
std::optional<int> recorded_pid(int fd) {
  char text[32] = {};
  const ssize_t n = ::pread(fd, text, sizeof text - 1, 0);
  int pid = 0;
  if (n <= 0 || std::from_chars(text, text + n, pid).ec != std::errc() || pid <= 0 || process_ended(pid)) {
    return std::nullopt;
  }
  return pid;
}

void record_pid(int fd) {
  const std::string text = fmt::format("{}\n", ::getpid());
  if (::ftruncate(fd, 0) == 0) {
    [[maybe_unused]] const ssize_t written = ::pwrite(fd, text.data(), text.size(), 0);
  }
}

// Whether flock is unavailable on the file system rather than held by another process.
bool unsupported(int error) {
  return error == ENOLCK || error == ENOSYS || error == EINVAL || error == EOPNOTSUPP;
}

// Takes `operation` (LOCK_EX or LOCK_SH) on `fd` without waiting; false when another process holds a lock
// that conflicts. Throws for other errors.
bool try_lock(int fd, int operation, const fs::path& out) {
  if (::flock(fd, operation | LOCK_NB) == 0) {
    return true;
  }
  const int error = errno;
  if (error == EWOULDBLOCK) {
    return false;
  }
  if (unsupported(error)) {
    return true;  // nothing to lock with: the sweep runs as it did before locks existed
  }
  throw ResultsDirError(
      fmt::format("sweep folder '{}': cannot lock it: {}", out.string(), std::strerror(error)));
}

std::string running(const std::optional<int>& pid) {
  return pid ? fmt::format("another sweep (pid {})", *pid) : std::string("another sweep");
}

}  // namespace

std::string sweep_shard_lock_name(int index_1, int count) {
  return fmt::format(".dbench-sweep.shard-{}-of-{}.lock", index_1, count);
}

SweepLock::SweepLock(const fs::path& out, int index_1, int count) {
  folder_fd_ = open_lock_file(out, kSweepLockName);
  if (count <= 1) {
    if (!try_lock(folder_fd_, LOCK_EX, out)) {
      const auto pid = recorded_pid(folder_fd_);
      ::close(folder_fd_);
      folder_fd_ = -1;
      throw ResultsDirError(fmt::format(
          "{} is running in sweep folder '{}'{}; wait for it to end, or choose another --out", running(pid),
          out.string(), pid ? "" : " (shards of a sharded sweep, or one just ending)"));
    }
    record_pid(folder_fd_);
    return;
  }
  if (!try_lock(folder_fd_, LOCK_SH, out)) {
    const auto pid = recorded_pid(folder_fd_);
    ::close(folder_fd_);
    folder_fd_ = -1;
    throw ResultsDirError(
        fmt::format("{} is running in sweep folder '{}' over the whole grid; wait for it "
                    "to end before starting its shards",
                    running(pid), out.string()));
  }
  const std::string shard_name = sweep_shard_lock_name(index_1, count);
  try {
    shard_fd_ = open_lock_file(out, shard_name);
  } catch (...) {
    ::close(folder_fd_);
    folder_fd_ = -1;
    throw;
  }
  if (!try_lock(shard_fd_, LOCK_EX, out)) {
    const auto pid = recorded_pid(shard_fd_);
    ::close(shard_fd_);
    ::close(folder_fd_);
    shard_fd_ = folder_fd_ = -1;
    throw ResultsDirError(fmt::format("{} is running shard {}/{} in sweep folder '{}'; wait for it to end",
                                      running(pid), index_1, count, out.string()));
  }
  record_pid(shard_fd_);
}

SweepLock::~SweepLock() {
  // The pid goes first, so that a later refusal never names a process that no longer holds the lock; a shard
  // recorded its pid in its own lock file only.
  if (const int recorded = shard_fd_ >= 0 ? shard_fd_ : folder_fd_; recorded >= 0) {
    [[maybe_unused]] const int truncated = ::ftruncate(recorded, 0);
  }
  for (const int fd : {shard_fd_, folder_fd_}) {
    if (fd >= 0) {
      ::close(fd);
    }
  }
}

}  // namespace dbench::results
