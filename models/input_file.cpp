#include "models/input_file.hpp"

#include <fcntl.h>
#include <fmt/core.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdint>
#include <system_error>

namespace dbench::models {
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

}  // namespace

std::string read_input_file(const std::filesystem::path& path, std::string_view what, std::size_t max_bytes) {
  const std::string name = path.string();
  const auto fail = [&](const std::string& reason) {
    return InputFileError(fmt::format("{}: cannot read {}: {}", name, what, reason));
  };
  // O_NONBLOCK: opening a FIFO that no process writes returns at once; the kind is then checked on what was
  // opened, so nothing can swap the file between a check and the open.
  const Descriptor file(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY));
  if (file.get() < 0) {
    throw fail(std::generic_category().message(errno));
  }
  struct stat status {};
  if (::fstat(file.get(), &status) != 0) {
    throw fail(std::generic_category().message(errno));
  }
  if (S_ISDIR(status.st_mode)) {
    throw fail("it is a directory, not a file");
  }
  if (!S_ISREG(status.st_mode)) {
    // A device, FIFO or socket could be read without end (/dev/zero) or block forever.
    throw fail("not a regular file");
  }
  // Up to one byte past the limit, so that a file that grows while it is read is still refused.
  std::string text;
  text.reserve(static_cast<std::size_t>(
      std::min<std::uint64_t>(static_cast<std::uint64_t>(status.st_size), max_bytes)));
  std::array<char, 65536> chunk{};
  while (text.size() <= max_bytes) {
    const ::ssize_t n = ::read(file.get(), chunk.data(), chunk.size());
    if (n < 0) {
      if (errno == EINTR) {
        continue;
      }
      throw fail(fmt::format("read error: {}", std::generic_category().message(errno)));
    }
    if (n == 0) {
      break;
    }
    text.append(chunk.data(), static_cast<std::size_t>(n));
  }
  if (text.size() > max_bytes) {
    throw fail(fmt::format("larger than the {} limit for a {}",
                           max_bytes % (1 << 20) == 0 ? fmt::format("{} MiB", max_bytes >> 20)
                                                      : fmt::format("{} bytes", max_bytes),
                           what));
  }
  return text;
}

}  // namespace dbench::models
