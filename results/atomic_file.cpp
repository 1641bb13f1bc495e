#include "results/atomic_file.hpp"

#include <fmt/core.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <system_error>

namespace dbench::results {

void write_file_atomically(const std::filesystem::path& path, std::string_view bytes) {
  namespace fs = std::filesystem;
  const fs::path temporary =
      path.parent_path() / fmt::format(".{}.tmp-{}", path.filename().string(), ::getpid());
  const auto fail = [&](const std::string& why) {
    std::error_code ignored;
    fs::remove(temporary, ignored);
    return std::runtime_error(fmt::format("cannot write '{}': {}", path.string(), why));
  };
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    if (!out) {
      throw fail(std::strerror(errno));
    }
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    out.close();
    if (!out) {
      throw fail(std::strerror(errno));
    }
  }
  std::error_code error;
  fs::rename(temporary, path, error);
  if (error) {
    throw fail(error.message());
  }
}

}  // namespace dbench::results
