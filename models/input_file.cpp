#include "models/input_file.hpp"

#include <fmt/core.h>

#include "results/read_file.hpp"

namespace dbench::models {

std::string read_input_file(const std::filesystem::path& path, std::string_view what, std::size_t max_bytes) {
  try {
    return results::read_file(path, max_bytes, what);
  } catch (const results::FileReadError& e) {
    throw InputFileError(fmt::format("{}: cannot read {}: {}", path.string(), what, e.reason()));
  }
}

}  // namespace dbench::models
