// Whole files written so that a reader never sees half of one: under a temporary name beside the file, then
// renamed into place. Every engine's and command's files that are read while runs go on are written here.
#pragma once

#include <filesystem>
#include <string_view>

namespace dbench::results {

/// Writes `bytes` to `path` through a temporary file in the same folder and a rename: a failure (disk full,
/// no permission) leaves whatever was at `path` before and removes the temporary. Throws std::runtime_error
/// "cannot write 'PATH': REASON".
void write_file_atomically(const std::filesystem::path& path, std::string_view bytes);

}  // namespace dbench::results
