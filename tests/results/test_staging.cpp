// The one staging directory, as run results and reports use it: hidden and marked beside its target,
// removed unless put in place, registered with a cleanup while it exists, and swapped in whole.
#include <doctest/doctest.h>

#include <filesystem>
#include <mutex>
#include <string>
#include <vector>

#include "results/results_dir.hpp"
#include "support/files.hpp"
#include "support/temp_dir.hpp"

namespace {

namespace fs = std::filesystem;
namespace rs = dbench::results;
using namespace dbench::testing;  // read_file, TempDir, write_file

// Records what a StagingDir registers, as the dbench command's SignalCleanup would remove on a signal.
class RecordingCleanup final : public rs::StagingCleanup {
 public:
  void add(const fs::path& directory) override { registered.push_back(directory); }
  void forget(const fs::path& directory) override { std::erase(registered, directory); }
  std::unique_lock<std::recursive_mutex> hold() override { return std::unique_lock(mutex_); }

  std::vector<fs::path> registered;

 private:
  std::recursive_mutex mutex_;
};

std::vector<std::string> hidden_entries(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().filename().string().starts_with('.')) {
      names.push_back(entry.path().filename().string());
    }
  }
  return names;
}

}  // namespace

TEST_CASE("results::staging: a marked, hidden directory beside its target, registered until it is removed") {
  const TempDir temp;
  RecordingCleanup cleanup;
  fs::path staged;
  {
    const rs::StagingDir staging(temp.path() / "report", &cleanup);
    staged = staging.path();
    CHECK(staged.parent_path() == temp.path());
    CHECK(staged.filename().string().starts_with(".report.tmp-"));
    CHECK(fs::exists(staged / rs::StagingDir::kMarkerName));
    CHECK(cleanup.registered == std::vector<fs::path>{staged});
  }
  CHECK_FALSE(fs::exists(staged));
  CHECK(cleanup.registered.empty());
  CHECK(hidden_entries(temp.path()).empty());
}

TEST_CASE("results::staging: replace puts the directory in place of the target, with or without one there") {
  const TempDir temp;
  const fs::path target = temp.path() / "plots";
  RecordingCleanup cleanup;
  {
    rs::StagingDir staging(target, &cleanup);
    write_file(staging.path() / "a.svg", "first");
    staging.replace(target, "plots");
    CHECK(staging.path().empty());
    CHECK(cleanup.registered.empty());
  }
  CHECK(read_file(target / "a.svg") == "first");

  rs::StagingDir staging(target, nullptr);
  write_file(staging.path() / "b.svg", "second");
  staging.replace(target, "plots");
  CHECK(read_file(target / "b.svg") == "second");
  CHECK_FALSE(fs::exists(target / "a.svg"));
  CHECK(hidden_entries(temp.path()).empty());  // the old content went with the staging directory
}

TEST_CASE("results::staging: a staged directory that cannot move names the target and keeps it") {
  const TempDir temp;
  const fs::path target = temp.path() / "run";
  fs::create_directory(target);
  write_file(target / "old.txt", "old");
  const std::string named = target.string();
  CHECK_THROWS_WITH_AS(rs::replace_directory(temp.path() / "missing", target, "results"),
                       doctest::Contains(named.c_str()), rs::ResultsDirError);
  CHECK(read_file(target / "old.txt") == "old");
}
