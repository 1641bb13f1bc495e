// Hostile sizes and values: inputs that would exhaust memory, overflow a number or reach another user's
// folder are refused with one line that names the argument or file, before anything large is allocated.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <fmt/core.h>
#include <sys/file.h>
#include <unistd.h>

#include <filesystem>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "results/csv.hpp"
#include "results/summary_csv.hpp"
#include "support/files.hpp"
#include "support/run_dbench.hpp"
#include "support/temp_dir.hpp"
#include "sweep_fixtures.hpp"

namespace fs = std::filesystem;
using dbench::experiments::testing::sweep_command;
using dbench::testing::run_dbench;
using dbench::testing::TempDir;

using dbench::testing::one_line;

namespace {

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

/// `dbench ARGUMENTS` under a 2 GB address-space limit, so that an allocation made before a size check ends
/// in bad_alloc at once instead of taking the machine's memory, and with no MPI launcher, so that a check
/// made after workers would start names the launcher instead of the argument. AddressSanitizer reserves
/// terabytes of shadow address space at start, so a sanitized build runs without the limit (the checks still
/// come before any allocation, which is what the cases test).
dbench::testing::CommandResult run_limited(const std::string& arguments) {
#if defined(__SANITIZE_ADDRESS__)
  const char* limit = "";
#else
  const char* limit = "ulimit -v 2000000; ";
#endif
  return dbench::testing::run_command(
      fmt::format("{}DBENCH_MPIRUN=/nonexistent/mpirun timeout 60 \"{}\" {}", limit, DBENCH_EXE, arguments));
}

}  // namespace

TEST_CASE("experiments::hostile limits: a graph of two billion nodes is refused before it is built") {
  for (const std::string arguments :
       {"graph --kind ring --nodes 2000000000", "graph --kind star --nodes 2000000000",
        "graph --kind base --degree 1 --nodes 2000000000", "graphs --nodes 2000000000"}) {
    CAPTURE(arguments);
    const auto result = run_limited(arguments);
    CAPTURE(result.output);
    CHECK(result.status == 1);
    CHECK(one_line(result.output));
    CHECK(contains(result.output, "--nodes: "));
    CHECK(contains(result.output, "1000000"));
    CHECK_FALSE(contains(result.output, "bad_alloc"));
  }
}

TEST_CASE("experiments::hostile limits: train.workers is bounded by the largest graph") {
  const auto result = run_limited(fmt::format(
      "config \"{}/experiments/configs/quickstart.toml\" --set train.workers=2000000000", DBENCH_SOURCE_DIR));
  CAPTURE(result.output);
  CHECK(result.status == 1);
  CHECK(one_line(result.output));
  CHECK(contains(result.output, "train.workers: must be <= 1000000 (the largest graph), got 2000000000"));
}

TEST_CASE("experiments::hostile limits: --set refuses a whole section instead of resetting its other keys") {
  const std::string config = fmt::format("\"{}/experiments/configs/quickstart.toml\"", DBENCH_SOURCE_DIR);
  for (const auto& [set, reason] : std::vector<std::pair<std::string, std::string>>{
           {"train={workers=8}",
            "'train' is a whole section; --set changes one key, so set its keys one by one"},
           {"platform=1", "'platform' is a whole section"},
           {"train.workers={value=8}", "the value is a table"}}) {
    CAPTURE(set);
    const auto result = run_dbench(fmt::format("config {} --set '{}'", config, set));
    CAPTURE(result.output);
    CHECK(result.status == 1);
    CHECK(one_line(result.output));
    CHECK(contains(result.output, "--set " + set + ": " + reason));
  }
  // One key of the section is set as before.
  const auto one_key = run_dbench(fmt::format("config {} --set train.workers=6", config));
  CHECK(one_key.status == 0);
  CHECK(contains(one_key.output, "workers = 6 "));
}

namespace {

const std::string kSweep = dbench::experiments::testing::small_sweep("\"ring\", \"centralized\"");

/// A lock on `file` held by this process, as a running sweep holds it, with this process's pid recorded.
class HeldLock {
 public:
  HeldLock(const fs::path& file, int operation)
      : fd_(::open(file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666)) {
    REQUIRE(fd_ >= 0);
    REQUIRE(::flock(fd_, operation | LOCK_NB) == 0);
    const std::string pid = fmt::format("{}\n", ::getpid());
    REQUIRE(::write(fd_, pid.data(), pid.size()) == static_cast<ssize_t>(pid.size()));
  }
  ~HeldLock() { ::close(fd_); }
  HeldLock(const HeldLock&) = delete;
  HeldLock& operator=(const HeldLock&) = delete;

 private:
  int fd_;
};

}  // namespace

TEST_CASE("experiments::hostile limits: a second sweep into a folder that a sweep is running in is refused") {
  const TempDir temp;
  const fs::path sweep = temp.path() / "mine.toml";
  dbench::testing::write_file(sweep, kSweep);
  const fs::path out = temp.path() / "out";
  dbench::testing::write_file(out / ".dbench-sweep", "");
  const std::string pid = std::to_string(::getpid());
  {
    const HeldLock running(out / ".dbench-sweep.lock", LOCK_EX);
    const auto second = run_dbench(sweep_command(sweep, out, "--quiet --no-report"));
    CAPTURE(second.output);
    CHECK(second.status == 1);
    CHECK(one_line(second.output));
    CHECK(contains(second.output, "--out: another sweep (pid " + pid + ") is running in sweep folder '" +
                                      out.string() + "'"));
    CHECK_FALSE(fs::exists(out / "runs"));
  }
  // The shards of one sweep run side by side; a second copy of a shard, or a whole sweep, waits for them.
  {
    const HeldLock shards(out / ".dbench-sweep.lock", LOCK_SH);
    const HeldLock first(out / ".dbench-sweep.shard-1-of-2.lock", LOCK_EX);
    const auto whole = run_dbench(sweep_command(sweep, out, "--quiet --no-report"));
    CAPTURE(whole.output);
    CHECK(whole.status == 1);
    CHECK(contains(whole.output, "another sweep (pid " + pid + ") is running in sweep folder"));
    const auto copy = run_dbench(sweep_command(sweep, out, "--quiet --no-report --shard 1/2"));
    CAPTURE(copy.output);
    CHECK(copy.status == 1);
    CHECK(one_line(copy.output));
    CHECK(contains(copy.output, "another sweep (pid " + pid + ") is running shard 1/2"));
    const auto second_shard = run_dbench(sweep_command(sweep, out, "--quiet --no-report --shard 2/2"));
    CAPTURE(second_shard.output);
    CHECK(second_shard.status == 0);
  }
  // Released, the folder is the next sweep's, and a finished sweep leaves no pid behind.
  const auto after = run_dbench(sweep_command(sweep, out, "--quiet --no-report"));
  CAPTURE(after.output);
  CHECK(after.status == 0);
  CHECK(dbench::testing::read_file(out / ".dbench-sweep.lock").empty());
}

TEST_CASE("experiments::hostile limits: summary.csv has one column per name and keeps formulas as text") {
  const TempDir temp;
  const fs::path sweep = temp.path() / "formulas.toml";
  std::string text = kSweep;
  text.replace(text.find("algorithm = [\"ring\", \"centralized\"]"), std::string::npos,
               "algorithm = [\"ring\"]\nseed = [1]\ndescription = [\"=1+1\", \"@SUM(A1)\"]\n");
  dbench::testing::write_file(sweep, text);
  const fs::path out = temp.path() / "out";
  const auto swept = run_dbench(sweep_command(sweep, out, "--quiet --no-report"));
  CAPTURE(swept.output);
  REQUIRE(swept.status == 0);
  const std::string summary = dbench::testing::read_file(out / "summary.csv");
  const auto table = dbench::results::parse_csv(summary, "summary.csv");
  const std::set<std::string> names(table.header.begin(), table.header.end());
  CHECK(names.size() == table.header.size());
  CHECK(names.contains("grid.algorithm"));
  CHECK(names.contains("grid.seed"));
  CHECK(contains(summary, ",\"'=1+1\"\n"));
  CHECK(contains(summary, ",\"'@SUM(A1)\"\n"));
  const auto rows = dbench::results::parse_summary_csv(summary, "summary.csv");
  REQUIRE(rows.size() == 2);
  CHECK(rows[0].axes.back() == std::pair<std::string, std::string>("description", "=1+1"));
  CHECK(rows[1].axes.back() == std::pair<std::string, std::string>("description", "@SUM(A1)"));
}

TEST_CASE("experiments::hostile limits: a number option out of its range prints the range as written") {
  for (const auto& [arguments, expected] : std::vector<std::pair<std::string, std::string>>{
           {"train --peer-timeout -1", "--peer-timeout: must be >= 0, got -1"},
           {"train --checkpoint-every -2", "--checkpoint-every: must be >= 0, got -2"},
           {"train --image-size 0", "--image-size: must be >= 1, got 0"},
           {"calibrate --sizes 4,1024", "--sizes: must be in [8, 1000000000], got 4"},
           {"sweep sweep.toml -j 0", "--jobs: must be in [1, 1024], got 0"}}) {
    CAPTURE(arguments);
    const auto result = run_dbench(arguments);
    CAPTURE(result.output);
    CHECK(result.status != 0);
    CHECK(one_line(result.output));
    CHECK(contains(result.output, expected));
    CHECK(result.output.size() < 200);
  }
}

TEST_CASE("experiments::hostile limits: --models and --algorithms are checked before any worker starts") {
  const TempDir temp;
  const std::string config = fmt::format("\"{}/experiments/configs/quickstart.toml\"", DBENCH_SOURCE_DIR);
  struct Refused {
    std::string arguments;  // without --out
    fs::path out;
    std::string option;  // the first part of the message
    std::string reason;  // the message of the refused value's own check
  };
  const std::vector<Refused> cases = {
      {"calibrate --models mlp,nope --local 2", temp.path() / "calibration",
       "--models: 'nope' cannot be calibrated: ", "train.model: must be one of"},
      {"calibrate --models mlp,lenet,mlp --local 2", temp.path() / "calibration",
       "--models: 'mlp' is given twice", "into one file"},
      {fmt::format("validate {} --algorithms ring,nope --local 2", config), temp.path() / "validation",
       "--algorithms: 'nope' cannot be validated: ", "algorithm.graph: unknown kind 'nope'"},
      {fmt::format("validate {} --algorithms ring,centralized,ring --local 2", config),
       temp.path() / "validation", "--algorithms: 'ring' is given twice", "its runs in one folder"},
  };
  for (const auto& refused : cases) {
    const auto result = run_limited(fmt::format("{} --out \"{}\"", refused.arguments, refused.out.string()));
    CAPTURE(result.output);
    CHECK(result.status == 1);
    CHECK(one_line(result.output));
    CHECK(contains(result.output, refused.option));
    CHECK(contains(result.output, refused.reason));
    CHECK_FALSE(fs::exists(refused.out));
  }
}

TEST_CASE("experiments::hostile limits: a damaged calibration.json is named with the file and the key") {
  const TempDir temp;
  const std::string config = fmt::format("\"{}/experiments/configs/quickstart.toml\"", DBENCH_SOURCE_DIR);
  const fs::path calibration = temp.path() / "calibration";
  const fs::path file = calibration / "calibration.json";
  for (const auto& [text, expected] : std::vector<std::pair<std::string, std::string>>{
           {"{ not json", file.string() + ": not valid JSON: "},
           {"[1, 2]", file.string() + ": expected a JSON object, got array"},
           {"{\"device\": 5}", file.string() + ": key 'device' is a number, not a string"}}) {
    CAPTURE(text);
    dbench::testing::write_file(file, text);
    const auto result = run_dbench(fmt::format("validate {} --calibration \"{}\" --local 2 --out \"{}\"",
                                               config, calibration.string(), (temp.path() / "out").string()));
    CAPTURE(result.output);
    CHECK(result.status == 1);
    CHECK(one_line(result.output));
    CHECK(contains(result.output, "--calibration: " + expected));
    CHECK_FALSE(fs::exists(temp.path() / "out"));
  }
}

TEST_CASE("experiments::hostile limits: a JSON number beyond a double names the key and the file") {
  const TempDir temp;
  const std::string config = fmt::format("\"{}/experiments/configs/quickstart.toml\"", DBENCH_SOURCE_DIR);
  const fs::path profile = temp.path() / "profile.json";
  dbench::testing::write_file(profile, R"({"name": "x", "tensors": [{"name": "w", "elements": 1e400}]})");
  const fs::path calibration = temp.path() / "calibration.json";
  dbench::testing::write_file(calibration, R"({"nic_latency_s": 1e400})");
  for (const auto& [set, file] : std::vector<std::pair<std::string, fs::path>>{
           {"platform.timing_model", profile}, {"platform.preset", calibration}}) {
    CAPTURE(set);
    const auto result = run_dbench(fmt::format("config {} --set \"{}={}\"", config, set, file.string()));
    CAPTURE(result.output);
    CHECK(result.status == 1);
    CHECK(one_line(result.output));
    CHECK(contains(result.output, fmt::format("{}: {}: invalid JSON: ", set, file.string())));
    CHECK(contains(result.output, "number overflow parsing '1e400'"));
  }
}
