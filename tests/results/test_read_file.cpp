// The one whole-file reader: regular files of bounded size only, every refusal naming the file and why.
#include <doctest/doctest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

#include "results/read_file.hpp"
#include "support/temp_dir.hpp"

namespace fs = std::filesystem;
using dbench::results::FileReadError;
using dbench::results::read_file;
using dbench::results::ReadFailure;

namespace {

/// The failure read_file reports for `path`, or nothing when it reads the file.
std::optional<ReadFailure> failure_of(const fs::path& path, std::size_t max_bytes) {
  try {
    read_file(path, max_bytes);
  } catch (const FileReadError& e) {
    CHECK(e.file() == path);
    CHECK(std::string(e.what()) == "cannot read " + path.string() + ": " + e.reason());
    return e.failure();
  }
  return std::nullopt;
}

}  // namespace

TEST_CASE("results::read_file: reads a regular file whole, up to and including the limit") {
  dbench::testing::TempDir dir;
  const fs::path file = dir.path() / "a.txt";
  std::ofstream(file, std::ios::binary) << "hello\n";
  CHECK(read_file(file, 6) == "hello\n");
  CHECK(read_file(file, 1 << 20) == "hello\n");
  std::ofstream(dir.path() / "empty");
  CHECK(read_file(dir.path() / "empty", 0).empty());
}

TEST_CASE("results::read_file: refuses missing files, directories, FIFOs, devices and files past the limit") {
  dbench::testing::TempDir dir;
  CHECK(failure_of(dir.path() / "none", 10) == ReadFailure::kMissing);
  CHECK(failure_of(dir.path(), 10) == ReadFailure::kDirectory);
  const fs::path fifo = dir.path() / "fifo";
  REQUIRE(::mkfifo(fifo.c_str(), 0644) == 0);
  CHECK(failure_of(fifo, 10) == ReadFailure::kNotRegular);  // opened without blocking: no writer needed
  CHECK(failure_of("/dev/zero", 10) == ReadFailure::kNotRegular);
  const fs::path big = dir.path() / "big";
  std::ofstream(big, std::ios::binary) << std::string(11, 'x');
  CHECK(failure_of(big, 10) == ReadFailure::kTooLarge);
  CHECK(read_file(big, std::size_t{2} << 20, "config") == std::string(11, 'x'));
  fs::resize_file(big, (std::size_t{2} << 20) + 1);
  CHECK_THROWS_WITH_AS(read_file(big, std::size_t{2} << 20, "config"),
                       ("cannot read " + big.string() + ": larger than the 2 MiB limit for a config").c_str(),
                       FileReadError);
}
