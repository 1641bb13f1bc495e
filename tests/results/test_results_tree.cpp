// A results directory read as untrusted input: paths out of it are refused, whichever way they are written.
#include <doctest/doctest.h>

#include <filesystem>
#include <string>

#include "results/results_tree.hpp"
#include "support/files.hpp"
#include "support/temp_dir.hpp"

namespace {

namespace fs = std::filesystem;
namespace rs = dbench::results;
using dbench::testing::write_file;

std::string refusal(const rs::ResultsTree& tree, const fs::path& relative) {
  try {
    tree.resolve(relative);
  } catch (const rs::ResultsTreeError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("results::results_tree: '..', absolute paths and symlinks out of the directory are refused") {
  const dbench::testing::TempDir temp;
  const fs::path root = temp.path() / "sweep";
  write_file(root / "runs" / "a" / "metrics.csv", "iteration\n0\n");
  write_file(temp.path() / "sweep2" / "metrics.csv", "outside\n");
  fs::create_directory_symlink(temp.path() / "sweep2", root / "runs" / "out");
  fs::create_directory_symlink(root / "runs" / "a", root / "runs" / "in");
  fs::create_symlink("../../../sweep2/metrics.csv", root / "runs" / "a" / "relative-out.csv");
  const rs::ResultsTree tree(root);

  CHECK(tree.read("runs/a/metrics.csv") == "iteration\n0\n");
  CHECK(tree.read("runs/in/metrics.csv") == "iteration\n0\n");  // inside to inside is followed
  CHECK(tree.resolve("runs/in") == fs::canonical(root / "runs" / "a"));
  CHECK_FALSE(tree.exists("runs/missing/metrics.csv"));

  CHECK(refusal(tree, "runs/../../sweep2/metrics.csv").find("climbs out") != std::string::npos);
  CHECK(refusal(tree, "runs/a/../metrics.csv").find("climbs out") != std::string::npos);
  CHECK(refusal(tree, temp.path() / "sweep2" / "metrics.csv").find("absolute path") != std::string::npos);
  // A sibling whose name starts with the root's is outside too.
  CHECK(refusal(tree, "runs/out/metrics.csv").find("leads out of") != std::string::npos);
  CHECK(refusal(tree, "runs/a/relative-out.csv").find("leads out of") != std::string::npos);
  CHECK_THROWS_AS(tree.exists("runs/out/metrics.csv"), rs::ResultsTreeError);
  CHECK_THROWS_AS(tree.read("runs/out/metrics.csv"), rs::ResultsTreeError);
  CHECK_THROWS_WITH(tree.read("runs/a/none.csv"), doctest::Contains("no such file"));
}
