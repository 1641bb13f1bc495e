// Reading a file a user names (a config, a sweep, a calibration file, a model profile): a regular file of
// bounded size only, read by results::read_file, with errors that say which kind of input it was.
#pragma once

#include <cstddef>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <string_view>

namespace dbench::models {

/// A file that cannot be read as an input file; the message is "PATH: cannot read WHAT: reason".
class InputFileError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// The largest config, sweep, calibration or profile file: 16 MiB, far beyond any real one.
inline constexpr std::size_t kMaxInputFileBytes = std::size_t{16} << 20;

/// The whole content of `path`, named `what` in errors ("config", "profile file"). Throws InputFileError when
/// the path is missing, a directory, not a regular file (a device, FIFO or socket: checked on the opened
/// file, which is opened without blocking), unreadable, or larger than `max_bytes`.
std::string read_input_file(const std::filesystem::path& path, std::string_view what,
                            std::size_t max_bytes = kMaxInputFileBytes);

}  // namespace dbench::models
