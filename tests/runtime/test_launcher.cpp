// `dbench train --local` and its workers: a stop signal or a killed launcher leaves no process and no staged
// results behind, and neither does a failed run.
#include <doctest/doctest.h>
#include <mpi.h>
#include <signal.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "runtime/mpi_communicator.hpp"
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

namespace {

/// Sets or unsets environment variables for its lifetime and restores them after.
class ScopedEnvironment {
 public:
  void set(const char* name, const char* value) {
    remember(name);
    if (value == nullptr) {
      ::unsetenv(name);
    } else {
      ::setenv(name, value, 1);
    }
  }
  ~ScopedEnvironment() {
    for (const auto& [name, value] : saved_) {
      if (value) {
        ::setenv(name.c_str(), value->c_str(), 1);
      } else {
        ::unsetenv(name.c_str());
      }
    }
  }

 private:
  void remember(const char* name) {
    const char* old = std::getenv(name);
    saved_.emplace_back(name, old == nullptr ? std::nullopt : std::optional<std::string>(old));
  }
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

}  // namespace

TEST_CASE("runtime::launcher: srun without PMIx is named with the command that works") {
  ScopedEnvironment env;
  env.set("SLURM_STEP_NUM_TASKS", "4");
  env.set("SLURM_PROCID", "0");
  env.set("PMIX_RANK", nullptr);
  env.set("OMPI_COMM_WORLD_SIZE", nullptr);
  for (const char* plugin : {"none", "pmi2"}) {
    env.set("SLURM_MPI_TYPE", plugin);
    const std::string hint = dbench::runtime::MpiEnvironment::srun_without_pmix();
    CAPTURE(hint);
#if defined(OMPI_MAJOR_VERSION)
    CHECK(hint.find(std::string("4 tasks with --mpi=") + plugin) != std::string::npos);
    CHECK(hint.find("srun --mpi=pmix") != std::string::npos);
    CHECK(hint.find("srun --mpi=list") != std::string::npos);
#else
    CHECK(hint.empty());  // other MPIs may well start under PMI-2 or Slurm's PMI-1
#endif
  }
  env.set("PMIX_RANK", "0");  // srun --mpi=pmix
  CHECK(dbench::runtime::MpiEnvironment::srun_without_pmix().empty());
  env.set("PMIX_RANK", nullptr);
  env.set("SLURM_STEP_NUM_TASKS", nullptr);  // not an srun step
  CHECK(dbench::runtime::MpiEnvironment::srun_without_pmix().empty());
}
