// Whole-file writes: the new content replaces the old at once, and a failed write leaves the old in place.
#include <doctest/doctest.h>
#include <sys/stat.h>

#include <filesystem>
#include <stdexcept>
#include <string>

#include "results/atomic_file.hpp"
#include "support/files.hpp"
#include "support/temp_dir.hpp"

namespace fs = std::filesystem;
using dbench::testing::read_file;
using dbench::testing::TempDir;

namespace {

/// How many entries `dir` holds, hidden ones included.
int entries(const fs::path& dir) {
  int count = 0;
  for ([[maybe_unused]] const auto& entry : fs::directory_iterator(dir)) {
    ++count;
  }
  return count;
}

/// Writes `content` to a new file `target` and makes `link` a symbolic link to it; returns `link`.
fs::path link_to_new_file(const fs::path& target, const std::string& content, const fs::path& link) {
  dbench::testing::write_file(target, content);
  fs::create_symlink(target, link);
  return link;
}

}  // namespace

TEST_CASE("results::atomic_file: writes a new file and replaces an old one, leaving no temporary") {
  TempDir dir;
  const fs::path file = dir.path() / "summary.csv";
  dbench::results::write_file_atomically(file, "a,b\n1,2\n");
  CHECK(read_file(file) == "a,b\n1,2\n");
  dbench::results::write_file_atomically(file, "a,b\n3,4\n");
  CHECK(read_file(file) == "a,b\n3,4\n");
  CHECK(entries(dir.path()) == 1);
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
  CHECK(entries(dir.path()) == 1);  // the temporary was removed
  // A folder that does not exist: nothing is created.
  CHECK_THROWS_WITH_AS(dbench::results::write_file_atomically(dir.path() / "missing" / "x.csv", "x"),
                       doctest::Contains("missing/x.csv"), std::runtime_error);
  CHECK_FALSE(fs::exists(dir.path() / "missing"));
}

TEST_CASE("results::atomic_file: only a regular file is replaced; a link, FIFO or folder stays as it was") {
  TempDir dir;
  const fs::path elsewhere = dir.path() / "elsewhere.csv";
  const fs::path link = link_to_new_file(elsewhere, "theirs", dir.path() / "link.csv");
  CHECK_THROWS_WITH_AS(dbench::results::write_file_atomically(link, "new"),
                       doctest::Contains("it is a symbolic link, which is left as it is"),
                       std::runtime_error);
  CHECK(fs::is_symlink(fs::symlink_status(link)));
  CHECK(read_file(elsewhere) == "theirs");
  const fs::path fifo = dir.path() / "fifo.csv";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  CHECK_THROWS_WITH_AS(dbench::results::write_file_atomically(fifo, "new"), doctest::Contains("it is a FIFO"),
                       std::runtime_error);
  CHECK(fs::is_fifo(fs::symlink_status(fifo)));
  CHECK(entries(dir.path()) == 3);  // no temporary left
}

TEST_CASE("results::atomic_file: a user's file is written through its link and into a FIFO's reader") {
  TempDir dir;
  const fs::path target = dir.path() / "graph.dot";
  const fs::path link = link_to_new_file(target, "old", dir.path() / "link.dot");
  dbench::results::write_user_file(link, "new");
  CHECK(read_file(target) == "new");
  CHECK(fs::is_symlink(fs::symlink_status(link)));
  // A FIFO nobody reads: refused at once, not a hang.
  const fs::path fifo = dir.path() / "fifo";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  CHECK_THROWS_WITH_AS(dbench::results::write_user_file(fifo, "x"),
                       doctest::Contains("a FIFO that no process reads"), std::runtime_error);
  // A folder: refused, kept.
  const fs::path folder = dir.path() / "folder";
  fs::create_directory(folder);
  CHECK_THROWS_WITH_AS(dbench::results::write_user_file(folder, "x"), doctest::Contains("it is a directory"),
                       std::runtime_error);
}
