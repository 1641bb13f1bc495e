// Results directories: staged writes, atomic replacement on commit, an untouched DIR on failure, and no
// staging directory left behind by a stopped or killed run.
#include <doctest/doctest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "experiments/config.hpp"
#include "experiments/run_files.hpp"
#include "results/results_dir.hpp"
#include "support/files.hpp"
#include "support/processes.hpp"
#include "support/run_dbench.hpp"

namespace fs = std::filesystem;
using dbench::experiments::ExperimentConfig;
using dbench::experiments::stage_results;
using dbench::results::ResultsDir;
using dbench::results::ResultsDirError;

namespace {

using dbench::testing::read_file;
using dbench::testing::write_file;

// A fresh directory under the system's temporary folder, removed with everything in it.
class Scratch {
 public:
  Scratch() {
    std::random_device random;
    path_ = fs::temp_directory_path() /
            ("dbench-test-results-" + std::to_string(::getpid()) + "-" + std::to_string(random()));
    fs::create_directories(path_);
  }
  ~Scratch() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

// Every file below `dir` with its bytes, to compare directories exactly.
std::map<std::string, std::string> snapshot(const fs::path& dir) {
  std::map<std::string, std::string> files;
  for (const auto& entry : fs::recursive_directory_iterator(dir)) {
    const std::string name = fs::relative(entry.path(), dir).string();
    files[name] = entry.is_regular_file() ? read_file(entry.path()) : std::string("<dir>");
  }
  return files;
}

// Names in `dir`, hidden ones included: staging leftovers would show up here.
std::set<std::string> names_in(const fs::path& dir) {
  std::set<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir)) {
    names.insert(entry.path().filename().string());
  }
  return names;
}

std::string error_of(const std::function<void()>& action) {
  try {
    action();
  } catch (const ResultsDirError& e) {
    return e.what();
  }
  FAIL("expected a ResultsDirError");
  return {};
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

using dbench::testing::BackgroundDbench;
using dbench::testing::entries_starting;
using dbench::testing::wait_until;

/// `dbench simulate` of the quickstart config on synthetic data into `out`; 100000 iterations run for
/// minutes unless stopped.
std::vector<std::string> simulate_into(const fs::path& out, int iterations = 100000) {
  return {"simulate",  (fs::path(DBENCH_SOURCE_DIR) / "experiments" / "configs" / "quickstart.toml").string(),
          "--set",     "train.dataset=synthetic",
          "--set",     "train.iterations=" + std::to_string(iterations),
          "-q",        "--out",
          out.string()};
}

/// Waits until the run into `out` has staged its marker file; false after 60 s.
bool wait_until_staged(const fs::path& out) {
  return wait_until(60, [&] {
    const auto staging = entries_starting(out.parent_path(), "." + out.filename().string() + ".tmp-");
    return staging.size() == 1 && fs::exists(out.parent_path() / staging.front() / ResultsDir::kMarkerName);
  });
}

}  // namespace

TEST_CASE("experiments::results_dir: a fresh DIR is created, missing parents included") {
  Scratch scratch;
  const fs::path target = scratch.path() / "a" / "b" / "run";
  ExperimentConfig config;
  config.name = "fresh";
  {
    ResultsDir results = stage_results(target, config);
    results.write_text("summary.json", "{}\n");
    results.write_text("plots/loss.svg", "<svg/>");
    CHECK_FALSE(fs::exists(target));  // nothing is visible before commit
    results.commit();
    CHECK(results.committed());
  }
  CHECK(read_file(target / "config.toml") == dbench::experiments::to_toml(config));
  CHECK(dbench::experiments::load_config_file(target / "config.toml") == config);
  CHECK(read_file(target / "summary.json") == "{}\n");
  CHECK(read_file(target / "plots" / "loss.svg") == "<svg/>");
  CHECK(names_in(target.parent_path()) == std::set<std::string>{"run"});
}

TEST_CASE("experiments::results_dir: commit replaces the old content") {
  Scratch scratch;
  const fs::path target = scratch.path() / "run";
  {
    ResultsDir first(target);
    first.write_text("old.txt", "old");
    first.write_text("shared.txt", "first");
    first.commit();
  }
  {
    ResultsDir second(target);
    second.write_text("new.txt", "new");
    second.write_text("shared.txt", "second");
    CHECK(read_file(target / "shared.txt") == "first");  // the old run stays whole until commit
    second.commit();
  }
  CHECK_FALSE(fs::exists(target / "old.txt"));
  CHECK(read_file(target / "new.txt") == "new");
  CHECK(read_file(target / "shared.txt") == "second");
  CHECK(names_in(scratch.path()) == std::set<std::string>{"run"});
}

TEST_CASE("experiments::results_dir: an exception before commit leaves the old directory byte-identical") {
  Scratch scratch;
  const fs::path target = scratch.path() / "run";
  {
    ResultsDir first = stage_results(target, ExperimentConfig{});
    first.write_text("metrics.csv", "iteration,test_accuracy\n0,0.1\n");
    first.write_text("nested/trace.csv", "iteration,graph\n");
    first.commit();
  }
  const auto before = snapshot(target);
  REQUIRE(before.size() >= 4);

  CHECK_THROWS_AS(
      [&] {
        ResultsDir second = stage_results(target, ExperimentConfig{});
        second.write_text("metrics.csv", "partial");
        second.write_text("nested/trace.csv", "partial");
        throw std::runtime_error("the run failed");
      }(),
      std::runtime_error);

  CHECK(snapshot(target) == before);
  CHECK(names_in(scratch.path()) == std::set<std::string>{"run"});
}

TEST_CASE("experiments::results_dir: refuses a DIR that is a regular file, naming it") {
  Scratch scratch;
  const fs::path target = scratch.path() / "results.txt";
  write_file(target, "not a directory");
  const std::string message = error_of([&] { ResultsDir results(target); });
  CHECK(contains(message, target.string()));
  CHECK(contains(message, "is not a directory"));
  CHECK(read_file(target) == "not a directory");
  CHECK(names_in(scratch.path()) == std::set<std::string>{"results.txt"});
}

TEST_CASE("experiments::results_dir: refuses to replace a non-empty directory it did not write") {
  Scratch scratch;
  const fs::path target = scratch.path() / "home";
  write_file(target / "thesis.tex", "precious");
  const std::string message = error_of([&] { ResultsDir results(target); });
  CHECK(contains(message, "refusing to replace"));
  CHECK(contains(message, target.string()));
  CHECK(read_file(target / "thesis.tex") == "precious");

  // An empty directory (e.g. made by mktemp -d) is fine to replace.
  const fs::path empty = scratch.path() / "empty";
  fs::create_directory(empty);
  ResultsDir results(empty);
  results.write_text("a.txt", "a");
  results.commit();
  CHECK(read_file(empty / "a.txt") == "a");
}

TEST_CASE("experiments::results_dir: a trailing separator names the same directory") {
  Scratch scratch;
  ResultsDir results(scratch.path().string() + "/run/");
  CHECK(results.target() == scratch.path() / "run");
  results.commit();
  CHECK(fs::is_directory(scratch.path() / "run"));
}

TEST_CASE("experiments::results_dir: rejects file names that escape the directory") {
  Scratch scratch;
  ResultsDir results(scratch.path() / "run");
  CHECK_THROWS_AS(results.write_text("../escape.txt", "x"), ResultsDirError);
  CHECK_THROWS_AS(results.write_text("a/../../escape.txt", "x"), ResultsDirError);
  CHECK_THROWS_AS(results.write_text("/tmp/escape.txt", "x"), ResultsDirError);
  CHECK_THROWS_AS(results.write_text("", "x"), ResultsDirError);
  CHECK_FALSE(fs::exists(scratch.path() / "escape.txt"));
  // path() hands other writers a location inside the staging directory, its folders created.
  const fs::path file = results.path("sub/dir/data.bin");
  CHECK(fs::is_directory(file.parent_path()));
  CHECK(file.string().starts_with(results.staging().string()));
}

TEST_CASE("experiments::results_dir: writing after commit is an error") {
  Scratch scratch;
  ResultsDir results(scratch.path() / "run");
  results.commit();
  CHECK_THROWS_AS(results.write_text("late.txt", "x"), ResultsDirError);
  CHECK_THROWS_AS(results.commit(), ResultsDirError);
}

TEST_CASE(
    "experiments::results_dir: a moved writer keeps the staging directory, the moved-from one owns none") {
  Scratch scratch;
  const fs::path target = scratch.path() / "run";
  ResultsDir first(target);
  first.write_text("a.txt", "a");
  ResultsDir second(std::move(first));
  CHECK(first.staging().empty());  // NOLINT(bugprone-use-after-move): the moved-from state is specified
  CHECK_THROWS_AS(first.write_text("b.txt", "b"), ResultsDirError);
  second.commit();
  CHECK(read_file(target / "a.txt") == "a");
}

TEST_CASE(
    "experiments::results_dir: the staging directory of a process that ended but is not reaped yet is "
    "abandoned") {
  // A worker killed after its mpirun ended stays a zombie until init reaps it; its staging is abandoned.
  Scratch dir;
  std::string marker;
  {
    ResultsDir results(dir.path() / "source");
    const auto staged = entries_starting(dir.path(), ".source.tmp-");
    REQUIRE(staged.size() == 1);
    marker = read_file(dir.path() / staged.front() / ResultsDir::kMarkerName);
  }
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    ::_exit(0);
  }
  // Not reaped: the child stays a zombie until waitpid below.
  const auto zombie = [&] {
    std::ifstream stat("/proc/" + std::to_string(child) + "/stat");
    std::string line;
    std::getline(stat, line);
    const auto close = line.rfind(')');
    return close != std::string::npos && close + 2 < line.size() && line[close + 2] == 'Z';
  };
  REQUIRE(wait_until(10, zombie));
  const fs::path staging = dir.path() / (".ended.tmp-" + std::to_string(child) + "-0123abcd");
  fs::create_directories(staging);
  write_file(staging / ResultsDir::kMarkerName, marker);
  CHECK(dbench::results::remove_abandoned_staging(dir.path() / "ended") == 1);
  CHECK(!fs::exists(staging));
  int status = 0;
  ::waitpid(child, &status, 0);
}

TEST_CASE("experiments::results_dir: a DIR that is a symbolic link stays a link to the new results") {
  Scratch scratch;
  const fs::path real = scratch.path() / "scratch-storage" / "run";
  const fs::path link = scratch.path() / "run";
  {
    ResultsDir first(real);
    first.write_text("v.txt", "1");
    first.commit();
  }
  fs::create_directory_symlink(real, link);
  {
    ResultsDir second(link);
    second.write_text("v.txt", "2");
    second.commit();
  }
  CHECK(fs::is_symlink(link));
  CHECK(read_file(link / "v.txt") == "2");
  CHECK(read_file(real / "v.txt") == "2");
}

TEST_CASE("experiments::results_dir: SIGTERM or SIGINT to simulate leaves no staging directory") {
  for (const int signal : {SIGTERM, SIGINT}) {
    CAPTURE(signal);
    Scratch dir;
    const fs::path out = dir.path() / "res";
    BackgroundDbench simulate(simulate_into(out), dir.path() / "log.txt", out.string());
    INFO(read_file(dir.path() / "log.txt"));
    REQUIRE(wait_until_staged(out));
    ::kill(simulate.pid(), signal);
    // Ended by the signal itself, as a shell expects of a stopped command.
    REQUIRE(wait_until(10, [&] { return simulate.status().has_value(); }));
    const int status = *simulate.status();
    CHECK(WIFSIGNALED(status));
    CHECK(WTERMSIG(status) == signal);
    CHECK(entries_starting(dir.path(), ".res.tmp-").empty());
    CHECK(!fs::exists(out));
  }
}

TEST_CASE(
    "experiments::results_dir: the staging directory of a killed run goes with the next run into the same "
    "folder") {
  Scratch dir;
  const fs::path out = dir.path() / "killed";
  {
    BackgroundDbench simulate(simulate_into(out), dir.path() / "log.txt", out.string());
    INFO(read_file(dir.path() / "log.txt"));
    REQUIRE(wait_until_staged(out));
    ::kill(simulate.pid(), SIGKILL);  // cannot be caught: the staging directory stays
    REQUIRE(wait_until(10, [&] { return simulate.status().has_value(); }));
  }
  const auto abandoned = entries_starting(dir.path(), ".killed.tmp-");
  REQUIRE(abandoned.size() == 1);
  // Look-alikes that stay: a directory of the same name shape without the marker (not DBench's), and a
  // marked one whose process is alive (the test runner's pid).
  const fs::path unmarked = dir.path() / ".mine.tmp-999999999-0123abcd";
  const fs::path live = dir.path() / (".live.tmp-" + std::to_string(::getppid()) + "-0123abcd");
  fs::create_directories(unmarked);
  fs::create_directories(live);
  fs::copy_file(dir.path() / abandoned.front() / ResultsDir::kMarkerName, live / ResultsDir::kMarkerName);

  std::string command;
  for (const auto& argument : simulate_into(dir.path() / "next", 2)) {
    command += " \"" + argument + "\"";
  }
  const auto result = dbench::testing::run_dbench(command);
  INFO(result.output);
  REQUIRE(result.status == 0);
  CHECK(entries_starting(dir.path(), ".killed.tmp-").empty());
  CHECK(fs::exists(unmarked));
  CHECK(fs::exists(live));
}
