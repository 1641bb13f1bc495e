// `dbench train --local` and its workers: a stop signal or a killed launcher leaves no process and no staged
// results behind, and neither does a failed run.
#include <doctest/doctest.h>
#include <signal.h>
#include <sys/wait.h>

#include <filesystem>
#include <string>
#include <vector>

#include "support/files.hpp"
#include "support/processes.hpp"
#include "support/run_dbench.hpp"
#include "support/temp_dir.hpp"

namespace {

namespace fs = std::filesystem;
using namespace dbench::testing;

/// `train --local 2` on synthetic data into `out`, long enough to be stopped midway.
std::vector<std::string> long_train(const fs::path& out) {
  return {"train",
          "--local",
          "2",
          "--set",
          "train.dataset=synthetic",
          "--set",
          "train.iterations=1000000",
          "-q",
          "--peer-timeout",
          "0",
          "--out",
          out.string()};
}

/// Starts a long `train --local 2`, waits until its launcher, mpirun and both workers run and rank 0 has
/// staged its results, sends the launcher `signal`, and checks that within 10 s no process of the job is
/// left and nothing is staged beside --out. Returns the launcher's wait status.
int stop_launcher_with(int signal) {
  TempDir dir;
  const fs::path out = dir.path() / "stopped";
  const std::string staging = ".stopped.tmp-";
  // Every process of the job carries --out on its command line.
  BackgroundDbench launcher(long_train(out), dir.path() / "log.txt", out.string());
  INFO(read_file(dir.path() / "log.txt"));
  REQUIRE(wait_until(120, [&] {
    return processes_with(out.string()).size() >= 4 && !entries_starting(dir.path(), staging).empty();
  }));
  ::kill(launcher.pid(), signal);
  const bool gone =
      wait_until(10, [&] { return launcher.status().has_value() && processes_with(out.string()).empty(); });
  CHECK(gone);
  CHECK(entries_starting(dir.path(), staging).empty());
  CHECK(!fs::exists(out));
  return launcher.status().value_or(-1);
}

}  // namespace

TEST_CASE("runtime::launcher: SIGTERM to the --local launcher leaves no worker behind") {
  const int status = stop_launcher_with(SIGTERM);
  // The launcher waited for its workers, then reported the signal as a shell would (128 + 15).
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 128 + SIGTERM);
}

TEST_CASE("runtime::launcher: SIGKILL to the --local launcher leaves no worker behind") {
  const int status = stop_launcher_with(SIGKILL);
  CHECK(WIFSIGNALED(status));
}

TEST_CASE("runtime::launcher: a failed --local run leaves no staging directory beside --out") {
  TempDir dir;
  const fs::path out = dir.path() / "failed";
  // Worker 1 dies at iteration 3; mpirun then ends rank 0, which had staged its results.
  const auto failed = dbench::testing::run_dbench(
      "train --local 2 --set train.dataset=synthetic --set train.iterations=200 -q --inject-kill 1:3 --out "
      "\"" +
      out.string() + "\"");
  INFO(failed.output);
  CHECK(failed.status != 0);
  CHECK(entries_starting(dir.path(), ".failed.tmp-").empty());
  CHECK(!fs::exists(out));
}
