// Whole-file writes: the new content replaces the old at once, and a failed write leaves the old in place.
#include <doctest/doctest.h>

#include <filesystem>
#include <stdexcept>
#include <string>

#include "results/atomic_file.hpp"
#include "support/files.hpp"
#include "support/temp_dir.hpp"

namespace fs = std::filesystem;
using dbench::testing::read_file;
using dbench::testing::TempDir;

TEST_CASE("results::atomic_file: writes a new file and replaces an old one, leaving no temporary") {
  TempDir dir;
  const fs::path file = dir.path() / "summary.csv";
  dbench::results::write_file_atomically(file, "a,b\n1,2\n");
  CHECK(read_file(file) == "a,b\n1,2\n");
  dbench::results::write_file_atomically(file, "a,b\n3,4\n");
  CHECK(read_file(file) == "a,b\n3,4\n");
  int entries = 0;
  for ([[maybe_unused]] const auto& entry : fs::directory_iterator(dir.path())) {
    ++entries;
  }
  CHECK(entries == 1);
}

TEST_CASE("results::atomic_file: a write that cannot land names the file and keeps what was there") {
  TempDir dir;
  // A directory where the file should go: the rename over it fails, the directory and its content stay.
  const fs::path taken = dir.path() / "report.md";
  fs::create_directory(taken);
  dbench::testing::write_file(taken / "keep.txt", "kept");
  const std::string expected = "cannot write '" + taken.string() + "'";
  CHECK_THROWS_WITH_AS(dbench::results::write_file_atomically(taken, "new"),
                       doctest::Contains(expected.c_str()), std::runtime_error);
  CHECK(read_file(taken / "keep.txt") == "kept");
  int entries = 0;
  for ([[maybe_unused]] const auto& entry : fs::directory_iterator(dir.path())) {
    ++entries;
  }
  CHECK(entries == 1);  // the temporary was removed
  // A folder that does not exist: nothing is created.
  CHECK_THROWS_WITH_AS(dbench::results::write_file_atomically(dir.path() / "missing" / "x.csv", "x"),
                       doctest::Contains("missing/x.csv"), std::runtime_error);
  CHECK_FALSE(fs::exists(dir.path() / "missing"));
}
