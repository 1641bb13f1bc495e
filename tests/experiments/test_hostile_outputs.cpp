// Hostile output targets: files and folders that are not DBench's are never replaced, emptied or followed
// out of. Every device node, FIFO and link here is made inside the test's own folder, never the real /dev.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <fmt/core.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <filesystem>
#include <future>
#include <map>
#include <string>
#include <vector>

#include "support/files.hpp"
#include "support/run_dbench.hpp"
#include "support/temp_dir.hpp"
#include "sweep_fixtures.hpp"

namespace fs = std::filesystem;
using dbench::experiments::testing::sweep_command;
using dbench::testing::read_file;
using dbench::testing::run_dbench;
using dbench::testing::TempDir;
using dbench::testing::write_file;

using dbench::testing::one_line;

namespace {

constexpr const char* kRing = "graph --kind ring --nodes 8";

std::string quoted(const fs::path& path) {
  return fmt::format("\"{}\"", path.string());
}

/// Every file under `dir` with its content (links by their target, other kinds by their type).
std::map<std::string, std::string> snapshot(const fs::path& dir) {
  std::map<std::string, std::string> files;
  for (auto it = fs::recursive_directory_iterator(dir); it != fs::recursive_directory_iterator(); ++it) {
    const auto status = it->symlink_status();
    const std::string name = fs::relative(it->path(), dir).string();
    if (fs::is_symlink(status)) {
      files[name] = "-> " + fs::read_symlink(it->path()).string();
      it.disable_recursion_pending();
    } else if (fs::is_regular_file(status)) {
      files[name] = read_file(it->path());
    } else {
      files[name] = fmt::format("<type {}>", static_cast<int>(status.type()));
    }
  }
  return files;
}

/// A character device node like /dev/full (writes fail with ENOSPC) or /dev/null, made at `path`; false
/// where this process may not make one.
bool make_device(const fs::path& path, unsigned minor) {
  return ::mknod(path.c_str(), S_IFCHR | 0666, makedev(1, minor)) == 0;
}

const std::string kSweep = dbench::experiments::testing::small_sweep("\"ring\"");

/// The sweep file kSweep in `temp` and its finished sweep folder `out`.
struct FinishedSweep {
  fs::path sweep;
  fs::path out;
};

FinishedSweep finished_sweep(const TempDir& temp) {
  FinishedSweep made{temp.path() / "mine.toml", temp.path() / "out"};
  write_file(made.sweep, kSweep);
  REQUIRE(run_dbench(sweep_command(made.sweep, made.out, "--quiet --no-report")).status == 0);
  return made;
}

}  // namespace

TEST_CASE("experiments::hostile outputs: a device node named as --dot is written into, never replaced") {
  const TempDir temp;
  const fs::path full = temp.path() / "full";
  const fs::path null = temp.path() / "null";
  if (!make_device(full, 7) || !make_device(null, 3)) {
    MESSAGE(DBENCH_SKIP_MARKER " cannot make device nodes here (not root)");
    return;
  }
  // A full device: the write error is reported, and the node stays a device.
  const auto on_full = run_dbench(fmt::format("{} --dot {}", kRing, quoted(full)));
  CAPTURE(on_full.output);
  CHECK(on_full.status != 0);
  CHECK(on_full.output.find("--dot: cannot write '" + full.string() + "'") != std::string::npos);
  CHECK(on_full.output.find("No space left on device") != std::string::npos);
  CHECK(fs::is_character_file(fs::symlink_status(full)));
  // A sink: written into, still a device.
  const auto on_null = run_dbench(fmt::format("{} --graphml {}", kRing, quoted(null)));
  CAPTURE(on_null.output);
  CHECK(on_null.status == 0);
  CHECK(fs::is_character_file(fs::symlink_status(null)));
  CHECK(snapshot(temp.path()).size() == 2);  // no temporary left beside them
}

TEST_CASE("experiments::hostile outputs: - and /dev/stdout write the file to standard output") {
  for (const char* target : {"-", "/dev/stdout"}) {
    CAPTURE(target);
    const auto result = run_dbench(fmt::format("{} --dot {} 2>/dev/null | cat", kRing, target));
    CHECK(result.status == 0);
    CHECK(result.output.find("graph") != std::string::npos);
    CHECK(result.output.find("--") != std::string::npos);  // the DOT edges
  }
  CHECK(fs::is_symlink(fs::symlink_status("/dev/stdout")));
}

TEST_CASE("experiments::hostile outputs: a FIFO is written into when read, and refused without a reader") {
  const TempDir temp;
  const fs::path fifo = temp.path() / "pipe";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  // No reader: an error at once instead of a hang, and the FIFO stays.
  const auto alone = run_dbench(fmt::format("{} --dot {}", kRing, quoted(fifo)));
  CAPTURE(alone.output);
  CHECK(alone.status != 0);
  CHECK(one_line(alone.output));
  CHECK(alone.output.find("FIFO that no process reads") != std::string::npos);
  CHECK(fs::is_fifo(fs::symlink_status(fifo)));
  // A reader: it gets the file. The reader opens first; the writer finds it there.
  auto reader = std::async(std::launch::async, [&] { return read_file(fifo); });
  // The reader's open blocks until the writer opens; retry the writer until the reader is in place.
  dbench::testing::CommandResult with_reader;
  for (int attempt = 0; attempt < 100; ++attempt) {
    with_reader = run_dbench(fmt::format("{} --dot {}", kRing, quoted(fifo)));
    if (with_reader.status == 0) {
      break;
    }
    ::usleep(20000);
  }
  CAPTURE(with_reader.output);
  CHECK(with_reader.status == 0);
  CHECK(reader.get().find("--") != std::string::npos);
  CHECK(fs::is_fifo(fs::symlink_status(fifo)));
}

TEST_CASE(
    "experiments::hostile outputs: a symlink is followed to its file, never replaced; a dangling one is "
    "refused") {
  const TempDir temp;
  const fs::path file = temp.path() / "graph.dot";
  const fs::path link = temp.path() / "link.dot";
  write_file(file, "old");
  fs::create_symlink(file, link);
  const auto followed = run_dbench(fmt::format("{} --dot {}", kRing, quoted(link)));
  CAPTURE(followed.output);
  CHECK(followed.status == 0);
  CHECK(fs::is_symlink(fs::symlink_status(link)));
  CHECK(read_file(file).find("--") != std::string::npos);

  const fs::path dangling = temp.path() / "dangling.dot";
  fs::create_symlink(temp.path() / "nowhere" / "x.dot", dangling);
  const auto refused = run_dbench(fmt::format("{} --graphml {}", kRing, quoted(dangling)));
  CAPTURE(refused.output);
  CHECK(refused.status != 0);
  CHECK(one_line(refused.output));
  CHECK(refused.output.find("--graphml: cannot write") != std::string::npos);
  CHECK(fs::is_symlink(fs::symlink_status(dangling)));
  CHECK_FALSE(fs::exists(temp.path() / "nowhere"));

  // A directory under the name: refused, its content kept.
  const fs::path folder = temp.path() / "folder.dot";
  fs::create_directory(folder);
  write_file(folder / "keep.txt", "kept");
  const auto on_folder = run_dbench(fmt::format("{} --dot {}", kRing, quoted(folder)));
  CHECK(on_folder.status != 0);
  CHECK(on_folder.output.find("it is a directory") != std::string::npos);
  CHECK(read_file(folder / "keep.txt") == "kept");
}

TEST_CASE("experiments::hostile outputs: sweep --out never writes into a user's folder, nor /") {
  const TempDir temp;
  const fs::path sweep = temp.path() / "mine.toml";
  write_file(sweep, kSweep);
  const fs::path project = temp.path() / "project";
  write_file(project / "plots" / "fig1.pdf", "figure");
  write_file(project / "report.md", "my notes");
  write_file(project / "summary.csv", "mine");
  const auto before = snapshot(project);
  for (const fs::path& out : {project, fs::path("/")}) {
    const auto result = run_dbench(sweep_command(sweep, out, "--quiet"));
    CAPTURE(result.output);
    CHECK(result.status != 0);
    CHECK(one_line(result.output));
    CHECK(result.output.find("--out: ") != std::string::npos);
  }
  CHECK(snapshot(project) == before);
  // A folder a sweep was started in is taken again, and an empty one is taken.
  const fs::path fresh = temp.path() / "fresh";
  fs::create_directory(fresh);
  const auto first = run_dbench(sweep_command(sweep, fresh, "--quiet --no-report"));
  CAPTURE(first.output);
  REQUIRE(first.status == 0);
  CHECK(fs::exists(fresh / ".dbench-sweep"));
  CHECK(run_dbench(sweep_command(sweep, fresh, "--quiet --no-report")).status == 0);
}

TEST_CASE(
    "experiments::hostile outputs: a sweep never follows a link in its folder to replace what lies "
    "elsewhere") {
  const TempDir temp;
  const auto [sweep, out] = finished_sweep(temp);
  // Elsewhere: a results folder (DBench's marker included) that the sweep must leave alone.
  const fs::path elsewhere = temp.path() / "elsewhere";
  fs::copy(out / "runs" / "ring", elsewhere, fs::copy_options::recursive);
  write_file(elsewhere / "notes.txt", "keep");
  const auto before = snapshot(elsewhere);
  fs::remove_all(out / "runs" / "ring");
  fs::create_symlink(elsewhere, out / "runs" / "ring");
  for (const char* arguments : {"--quiet --no-report", "--dry-run"}) {
    const auto result = run_dbench(sweep_command(sweep, out, arguments));
    CAPTURE(result.output);
    CHECK(result.status != 0);
    CHECK(one_line(result.output));
    CHECK(result.output.find("'runs/ring' is a symbolic link") != std::string::npos);
  }
  CHECK(snapshot(elsewhere) == before);
  // The same for a log file linked to a user's file.
  fs::remove(out / "runs" / "ring");
  write_file(temp.path() / "user.log", "mine");
  fs::remove(out / "logs" / "ring.log");
  fs::create_symlink(temp.path() / "user.log", out / "logs" / "ring.log");
  CHECK(run_dbench(sweep_command(sweep, out, "--quiet --no-report")).status != 0);
  CHECK(read_file(temp.path() / "user.log") == "mine");
}

TEST_CASE(
    "experiments::hostile outputs: calibrate refuses a user's --out before measuring, and a failed "
    "calibration leaves the previous one whole") {
  const TempDir temp;
  const fs::path mine = temp.path() / "mine";
  write_file(mine / "notes.txt", "keep");
  const auto refused = run_dbench(
      fmt::format("calibrate --local 2 --out {} --models mlp --batches 8,16 --repeats 1", quoted(mine)));
  CAPTURE(refused.output);
  CHECK(refused.status != 0);
  CHECK(one_line(refused.output));
  CHECK(refused.output.find("--out: refusing to replace") != std::string::npos);
  CHECK(read_file(mine / "notes.txt") == "keep");

  // A previous calibration (DBench's marker), then a calibration that fails after it started measuring.
  const fs::path previous = temp.path() / "calibration";
  write_file(previous / ".dbench-results", "written by DBench\n");
  write_file(previous / "calibration.json", "{\"previous\": true}\n");
  write_file(previous / "mlp.toml", "previous = true\n");
  const auto before = snapshot(previous);
  const auto failed = run_dbench(fmt::format(
      "calibrate --local 2 --out {} --models mlp,nosuch --batches 8,16 --sizes 256,4096 --repeats 1 --quiet",
      quoted(previous)));
  CAPTURE(failed.output);
  CHECK(failed.status != 0);
  CHECK(snapshot(previous) == before);
  int staging = 0;
  for (const auto& entry : fs::directory_iterator(temp.path())) {
    staging += entry.path().filename().string().starts_with(".calibration") ? 1 : 0;
  }
  CHECK(staging == 0);
}

TEST_CASE(
    "experiments::hostile outputs: a run whose metrics.csv is damaged is run again, not a failure on "
    "every rerun") {
  const TempDir temp;
  const auto [sweep, out] = finished_sweep(temp);
  write_file(out / "runs" / "ring" / "metrics.csv", "iteration,test_accuracy\n2,not-a-number\n");
  const auto rerun = run_dbench(sweep_command(sweep, out, "--no-report"));
  CAPTURE(rerun.output);
  CHECK(rerun.status == 0);
  CHECK(rerun.output.find("recomputing ring: its files cannot be summarized") != std::string::npos);
  CHECK(read_file(out / "summary.csv").find(",done,") != std::string::npos);
  CHECK(read_file(out / "runs" / "ring" / "metrics.csv").find("not-a-number") == std::string::npos);
}

TEST_CASE("experiments::hostile outputs: train --local has an upper bound and never reaches the launcher") {
  const auto result = run_dbench("train --local 100000");
  CAPTURE(result.output);
  CHECK(result.status != 0);
  CHECK(one_line(result.output));
  CHECK(result.output.find("--local") != std::string::npos);
  CHECK(result.output.find("at most 4096 local workers") != std::string::npos);
}

TEST_CASE("experiments::hostile outputs: --out \"\" is refused by every command, never read as the default") {
  const TempDir temp;
  const std::string config =
      quoted(fs::path(DBENCH_SOURCE_DIR) / "experiments" / "configs" / "quickstart.toml");
  write_file(temp.path() / "mine.toml", kSweep);
  for (const std::string& command :
       std::vector<std::string>{"simulate " + config, "config " + config, "graphs --nodes 8",
                                "sweep " + quoted(temp.path() / "mine.toml"), "train " + config,
                                "calibrate --local 2", "validate " + config + " --local 2"}) {
    CAPTURE(command);
    const auto result = run_dbench(fmt::format("{} --out \"\"", command));
    CAPTURE(result.output);
    CHECK(result.status != 0);
    CHECK(one_line(result.output));
    CHECK(result.output.find("--out") != std::string::npos);
    CHECK(result.output.find("empty") != std::string::npos);
  }
  CHECK(snapshot(temp.path()).size() == 1);
}
