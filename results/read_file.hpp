// Reading a whole file that may be hostile: a config a user names, a results directory's CSV, a checkpoint.
// Only a regular file of bounded size is read, so that /dev/zero is never read without end, a FIFO never
// blocks the command and a damaged file ends as one error instead of exhausting memory.
#pragma once

#include <cstddef>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <string_view>

namespace dbench::results {

/// Why a file could not be read.
enum class ReadFailure {
  kMissing,     ///< no such file
  kUnopenable,  ///< no permission, or any other reason open() gave
  kDirectory,   ///< a directory
  kNotRegular,  ///< a device, FIFO or socket
  kReadError,   ///< read() failed part way
  kTooLarge,    ///< more bytes than the limit
};

/// A file that read_file cannot read; the message is "cannot read PATH: REASON".
class FileReadError : public std::runtime_error {
 public:
  /// `reason` says why, as a user reads it ("not a regular file", "No such file or directory").
  FileReadError(std::filesystem::path file, ReadFailure failure, std::string reason);

  /// The file, as given.
  const std::filesystem::path& file() const { return file_; }
  /// What went wrong.
  ReadFailure failure() const { return failure_; }
  /// Why, without the file's name.
  const std::string& reason() const { return reason_; }

 private:
  std::filesystem::path file_;
  ReadFailure failure_;
  std::string reason_;
};

/// The whole content of the regular file `path`, of at most `max_bytes` bytes. The file is opened without
/// blocking and its kind checked on what was opened, so nothing can swap it between a check and the open.
/// `what` names the kind of file in the too-large reason ("larger than the 16 MiB limit for a config").
/// Throws FileReadError.
std::string read_file(const std::filesystem::path& path, std::size_t max_bytes,
                      std::string_view what = "file");

}  // namespace dbench::results
