#include "results/atomic_file.hpp"

#include <fcntl.h>
#include <fmt/core.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <system_error>

namespace dbench::results {
namespace {

namespace fs = std::filesystem;

std::runtime_error write_error(const fs::path& path, std::string_view why) {
  return std::runtime_error(fmt::format("cannot write '{}': {}", path.string(), why));
}

std::string errno_text(int error) {
  return std::generic_category().message(error);
}

// What `status` is, in words, for a refusal.
std::string kind_text(const struct stat& status) {
  switch (status.st_mode & S_IFMT) {
    case S_IFLNK:
      return "a symbolic link";
    case S_IFDIR:
      return "a directory";
    case S_IFCHR:
      return "a character device";
    case S_IFBLK:
      return "a block device";
    case S_IFIFO:
      return "a FIFO";
    case S_IFSOCK:
      return "a socket";
    default:
      return "not a regular file";
  }
}

// Writes all of `bytes` to `fd`; returns 0 or the errno of the write that failed.
int write_all(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t written = ::write(fd, bytes.data(), bytes.size());
    if (written < 0) {
      if (errno == EINTR) {
        continue;
      }
      return errno;
    }
    bytes.remove_prefix(static_cast<std::size_t>(written));
  }
  return 0;
}

// Writes into the open `fd` of a device or pipe that `path` names, and closes it; errors name `path`.
void write_into(int fd, const fs::path& path, std::string_view bytes, bool close_fd) {
  int error = write_all(fd, bytes);
  if (close_fd && ::close(fd) != 0 && error == 0 && errno != EINTR) {
    error = errno;
  }
  if (error != 0) {
    throw write_error(path, errno_text(error));
  }
}

// A character device or FIFO that exists: opened as it is (no creation, no truncation) and written into.
void write_into_special(const fs::path& path, bool fifo, std::string_view bytes) {
  // A FIFO is opened without blocking first, so that one with no reader is an error instead of a hang.
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC | O_NOCTTY | (fifo ? O_NONBLOCK : 0));
  if (fd < 0) {
    const int error = errno;
    throw write_error(
        path, fifo && error == ENXIO ? std::string("it is a FIFO that no process reads") : errno_text(error));
  }
  if (fifo) {
    ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  }
  write_into(fd, path, bytes, true);
}

// The temporary file beside `path`, created afresh (never through a link someone left under its name).
int create_temporary(const fs::path& temporary) {
  for (int attempt = 0; attempt < 2; ++attempt) {
    const int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
    if (fd >= 0 || errno != EEXIST) {
      return fd;
    }
    ::unlink(temporary.c_str());  // left by a killed process that had this pid
  }
  errno = EEXIST;
  return -1;
}

// The temporary-and-rename write of a regular file or a new name; `path`'s kind was checked by the caller.
void replace_regular(const fs::path& path, std::string_view bytes) {
  const fs::path temporary =
      path.parent_path() / fmt::format(".{}.tmp-{}", path.filename().string(), ::getpid());
  const int fd = create_temporary(temporary);
  if (fd < 0) {
    throw write_error(path, errno_text(errno));
  }
  int error = write_all(fd, bytes);
  if (::close(fd) != 0 && error == 0 && errno != EINTR) {
    error = errno;
  }
  if (error == 0 && ::rename(temporary.c_str(), path.c_str()) != 0) {
    error = errno;
  }
  if (error != 0) {
    ::unlink(temporary.c_str());
    throw write_error(path, errno_text(error));
  }
}

// The descriptor that `path` names as this process's own (/dev/stdout, /dev/stderr, /dev/fd/N,
// /proc/self/fd/N), or -1: a user who names one means the stream that is already open, at its offset.
int own_descriptor(const fs::path& path) {
  const std::string text = path.lexically_normal().string();
  if (text == "/dev/stdout") {
    return STDOUT_FILENO;
  }
  if (text == "/dev/stderr") {
    return STDERR_FILENO;
  }
  for (const std::string_view prefix : {"/dev/fd/", "/proc/self/fd/"}) {
    if (text.size() > prefix.size() && text.size() <= prefix.size() + 4 && text.starts_with(prefix) &&
        text.find_first_not_of("0123456789", prefix.size()) == std::string::npos) {
      return std::stoi(text.substr(prefix.size()));
    }
  }
  return -1;
}

}  // namespace

void write_file_atomically(const fs::path& path, std::string_view bytes) {
  if (path.empty() || !path.has_filename()) {
    throw write_error(path, "not a file name");
  }
  struct stat status {};
  if (::lstat(path.c_str(), &status) == 0 && !S_ISREG(status.st_mode)) {
    throw write_error(path, fmt::format("it is {}, which is left as it is (only a regular file is replaced)",
                                        kind_text(status)));
  }
  replace_regular(path, bytes);
}

void write_user_file(const fs::path& path, std::string_view bytes) {
  const int own = path == "-" ? STDOUT_FILENO : own_descriptor(path);
  if (own >= 0) {
    std::fflush(nullptr);  // what this process printed before comes first
    write_into(own, path == "-" ? fs::path("<standard output>") : path, bytes, false);
    return;
  }
  if (path.empty() || !path.has_filename()) {
    throw write_error(path, "not a file name");
  }
  struct stat status {};
  if (::lstat(path.c_str(), &status) != 0) {
    replace_regular(path, bytes);  // a new file (or a folder that does not exist, which is reported)
    return;
  }
  fs::path target = path;
  if (S_ISLNK(status.st_mode)) {
    // Followed: what the link leads to gets the rules below; the link itself is never replaced.
    std::error_code ec;
    if (::stat(path.c_str(), &status) != 0) {
      throw write_error(path, "it is a symbolic link that leads to nothing; the link is left as it is");
    }
    if (S_ISREG(status.st_mode)) {
      target = fs::canonical(path, ec);
      if (ec) {
        throw write_error(path, fmt::format("its symbolic link cannot be resolved: {}", ec.message()));
      }
    }
  }
  if (S_ISREG(status.st_mode)) {
    replace_regular(target, bytes);
  } else if (S_ISCHR(status.st_mode) || S_ISFIFO(status.st_mode)) {
    write_into_special(target, S_ISFIFO(status.st_mode), bytes);
  } else {
    throw write_error(path, fmt::format("it is {}, which is not written to", kind_text(status)));
  }
}

}  // namespace dbench::results
