#include "results/read_file.hpp"

#include <fcntl.h>
#include <fmt/core.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdint>
#include <system_error>
#include <utility>

namespace dbench::results {
namespace {

/// Closes the descriptor it holds.
class Descriptor {
 public:
  explicit Descriptor(int fd) : fd_(fd) {}
  Descriptor(const Descriptor&) = delete;
  Descriptor& operator=(const Descriptor&) = delete;
  ~Descriptor() {
    if (fd_ >= 0) {
      ::close(fd_);
    }
  }
  int get() const { return fd_; }

 private:
  int fd_;
};

/// A byte limit as a user reads it: "1 GiB", "16 MiB", "256 bytes".
std::string limit_text(std::size_t bytes) {
  constexpr std::size_t kMiB = std::size_t{1} << 20;
  constexpr std::size_t kGiB = std::size_t{1} << 30;
  if (bytes >= kGiB && bytes % kGiB == 0) {
    return fmt::format("{} GiB", bytes / kGiB);
  }
  if (bytes >= kMiB && bytes % kMiB == 0) {
    return fmt::format("{} MiB", bytes / kMiB);
  }
  return fmt::format("{} bytes", bytes);
}

}  // namespace

FileReadError::FileReadError(std::filesystem::path file, ReadFailure failure, std::string reason)
    : std::runtime_error(fmt::format("cannot read {}: {}", file.string(), reason)),
      file_(std::move(file)),
      failure_(failure),
      reason_(std::move(reason)) {}

std::string read_file(const std::filesystem::path& path, std::size_t max_bytes, std::string_view what) {
  const auto errno_text = [](int error) { return std::generic_category().message(error); };
  // O_NONBLOCK: opening a FIFO that no process writes returns at once; the kind is then checked on what was
  // opened, so nothing can swap the file between a check and the open.
  const Descriptor file(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY));
  if (file.get() < 0) {
    const int error = errno;
    throw FileReadError(path, error == ENOENT ? ReadFailure::kMissing : ReadFailure::kUnopenable,
                        errno_text(error));
  }
  struct stat status {};
  if (::fstat(file.get(), &status) != 0) {
    throw FileReadError(path, ReadFailure::kUnopenable, errno_text(errno));
  }
  if (S_ISDIR(status.st_mode)) {
    throw FileReadError(path, ReadFailure::kDirectory, "it is a directory, not a file");
  }
  if (!S_ISREG(status.st_mode)) {
    // A device, FIFO or socket could be read without end (/dev/zero) or block forever.
    throw FileReadError(path, ReadFailure::kNotRegular, "not a regular file");
  }
  const auto too_large = [&] {
    return FileReadError(path, ReadFailure::kTooLarge,
                         fmt::format("larger than the {} limit for a {}", limit_text(max_bytes), what));
  };
  if (static_cast<std::uint64_t>(status.st_size) > max_bytes) {
    throw too_large();
  }
  // Up to one byte past the limit, so that a file that grows while it is read is still refused.
  std::string text;
  text.reserve(static_cast<std::size_t>(status.st_size));
  std::array<char, 65536> chunk{};
  while (text.size() <= max_bytes) {
    const ::ssize_t n = ::read(file.get(), chunk.data(), chunk.size());
    if (n < 0) {
      if (errno == EINTR) {
        continue;
      }
      throw FileReadError(path, ReadFailure::kReadError, fmt::format("read error: {}", errno_text(errno)));
    }
    if (n == 0) {
      break;
    }
    text.append(chunk.data(), static_cast<std::size_t>(n));
  }
  if (text.size() > max_bytes) {
    throw too_large();
  }
  return text;
}

}  // namespace dbench::results
