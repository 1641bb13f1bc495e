// Whole files written so that a reader never sees half of one: under a temporary name beside the file, then
// renamed into place. Every engine's and command's files that are read while runs go on are written here,
// and so is every file a user names on the command line (write_user_file), which may be a terminal or a pipe.
#pragma once

#include <filesystem>
#include <string_view>

namespace dbench::results {

/// Writes `bytes` to `path` through a temporary file in the same folder and a rename: a failure (disk full,
/// no permission) leaves whatever was at `path` before and removes the temporary. Only a regular file is
/// ever replaced: a target that exists as anything else (a symbolic link, a directory, a device, a FIFO) is
/// refused and left as it is. Throws std::runtime_error "cannot write 'PATH': REASON".
void write_file_atomically(const std::filesystem::path& path, std::string_view bytes);

/// Writes `bytes` to a file a user named (`--dot F`, `profile --out F`), where the user may mean "write
/// there" rather than "put a file there": "-" is standard output; an existing character device (a terminal,
/// /dev/null) or FIFO is written into, never replaced, and a FIFO without a reader is an error rather than a
/// hang; a symbolic link is followed to what it names, which these rules then apply to (a link that leads
/// nowhere is refused, the link itself is never replaced); a regular file or a new name is written as
/// write_file_atomically writes it. A directory, block device or socket is refused. Every write error (a
/// full device, a closed pipe) is reported. Throws std::runtime_error "cannot write 'PATH': REASON".
void write_user_file(const std::filesystem::path& path, std::string_view bytes);

}  // namespace dbench::results
