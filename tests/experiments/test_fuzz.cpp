// A generated fuzz over every command's options and every kind of file DBench reads: configs, sweeps,
// calibration files, model profiles, checkpoints and results folders. Each case runs in a forked child (as a
// timing-only sweep runs its runs: run_command_line without starting the program again) inside a folder of
// its own, under a time limit. What must hold over all cases: no crash (no child ends on a signal or with an
// unexpected exception), no hang (every case ends within the limit) and no file changed outside the case's
// folder. DBENCH_FUZZ_CASES sets the number of cases (default 5000); DBENCH_FUZZ_SEED the first seed;
// DBENCH_FUZZ_SECONDS the time after which no case starts (default 360, inside ctest's 600 s on a slow
// machine that shares its two cores with the suite's other tests). Seeds are consecutive, so a case that
// fails runs again alone with DBENCH_FUZZ_SEED set to its number and DBENCH_FUZZ_CASES=1.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "experiments/command_line.hpp"
#include "experiments/config.hpp"
#include "experiments/fuzz_inputs.hpp"
#include "experiments/timing_setup.hpp"
#include "models/profile_file.hpp"
#include "runtime/checkpoint.hpp"
#include "runtime/errors.hpp"
#include "support/files.hpp"
#include "support/temp_dir.hpp"

namespace fs = std::filesystem;

namespace {

using dbench::testing::TempDir;
using dbench::testing::fuzz::damage;
using dbench::testing::fuzz::hostile_values;
using dbench::testing::fuzz::kBaseCalibration;
using dbench::testing::fuzz::kBaseConfig;
using dbench::testing::fuzz::kBaseSweep;
using dbench::testing::fuzz::make_case_folder;
using dbench::testing::fuzz::mutate;
using dbench::testing::fuzz::Option;
using dbench::testing::fuzz::options_of;

/// Seconds a case may take: a valid run in the generated space (a few iterations of a tiny model, or a
/// report) takes well under a second; anything near the limit is a hang.
constexpr double kCaseSeconds = 60.0;

/// Cases that must have run before the time budget ends them: below this, the machine is too slow for the
/// fuzz to mean anything and the test says so rather than pass on a handful.
constexpr std::uint64_t kFewestCases = 500;

/// What a case runs in its child: a dbench command line, or a reader called directly.
struct Case {
  std::string kind;               ///< which generator made it
  std::vector<std::string> args;  ///< a dbench command line (without the program name), or empty
  std::function<int()> body;      ///< called instead of the command line when set
  /// The command starts dbench again (/proc/self/exe: calibrate for validate, workers for train, runs for a
  /// sweep), so the child execs the dbench executable instead of running it in the test's process.
  bool exec = false;
};

/// How a child ended.
struct Outcome {
  bool signalled = false;
  bool timed_out = false;
  int status = 0;
  std::string output;
};

std::string quoted(const std::vector<std::string>& args) {
  std::string line = "dbench";
  for (const auto& a : args) {
    line += " '" + a + "'";
  }
  return line;
}

/// Runs the case in a forked child whose working directory, HOME and TMPDIR are `dir`, with its output in
/// dir/.output; the child leads a process group of its own, which is killed if it outlives the limit.
pid_t start_case(const Case& c, const fs::path& dir) {
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  if (pid != 0) {
    return pid;
  }
  ::setpgid(0, 0);
  if (::chdir(dir.c_str()) != 0) {
    ::_exit(120);
  }
  const int out = ::open(".output", O_WRONLY | O_CREAT | O_TRUNC, 0644);
  const int in = ::open("/dev/null", O_RDONLY);
  ::dup2(in, 0);
  ::dup2(out, 1);
  ::dup2(out, 2);
  ::setenv("HOME", dir.c_str(), 1);
  ::setenv("TMPDIR", dir.c_str(), 1);
  // A run that would need more is refused by the memory estimate, at once.
  ::setenv("DBENCH_MEMORY_LIMIT", "2000000000", 1);
  // No MPI launcher: commands that start workers (train --local, calibrate, validate) check everything they
  // are given and then fail to launch, as on a machine without OpenMPI, in milliseconds instead of the
  // seconds real workers take; the launcher tests start real ones.
  ::setenv("DBENCH_MPIRUN", (dir / "no-mpirun").c_str(), 1);
  for (const int number : {SIGINT, SIGTERM, SIGHUP, SIGCHLD, SIGPIPE}) {
    ::signal(number, SIG_DFL);
  }
  if (c.exec) {
    std::vector<std::string> args = c.args;
    args.insert(args.begin(), DBENCH_EXE);
    std::vector<char*> argv;
    for (auto& a : args) {
      argv.push_back(a.data());
    }
    argv.push_back(nullptr);
    ::execv(DBENCH_EXE, argv.data());
    ::_exit(127);
  }
  int status = 0;
  try {
    if (c.body) {
      status = c.body();
    } else {
      std::vector<std::string> args = c.args;
      args.insert(args.begin(), "dbench");
      std::vector<char*> argv;
      for (auto& a : args) {
        argv.push_back(a.data());
      }
      argv.push_back(nullptr);
      status = dbench::experiments::run_command_line(static_cast<int>(args.size()), argv.data());
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fuzz: unexpected exception: %s\n", e.what());
    status = 125;
  } catch (...) {
    std::fputs("fuzz: unexpected exception\n", stderr);
    status = 125;
  }
  std::fflush(nullptr);
  ::_exit(status);
}

/// Names, kinds, sizes and contents of every entry under `root` (links not followed).
std::string digest(const fs::path& root) {
  std::ostringstream out;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(root, fs::directory_options::none, ec), end; !ec && it != end;
       it.increment(ec)) {
    const auto status = it->symlink_status(ec);
    out << fs::relative(it->path(), root).string() << ' ' << static_cast<int>(status.type());
    if (status.type() == fs::file_type::symlink) {
      out << " -> " << fs::read_symlink(it->path(), ec).string();
    } else if (status.type() == fs::file_type::regular) {
      out << ' ' << dbench::testing::read_file(it->path());
    }
    out << '\n';
  }
  return out.str();
}

void write(const fs::path& file, const std::string& text) {
  std::ofstream(file, std::ios::binary) << text;
}

/// The fuzz's inputs, made once: each command's options, a checkpoint, a run's and a sweep's results.
struct Seeds {
  std::map<std::string, std::vector<Option>> commands;
  std::string checkpoint_file;  ///< rank 0's file of a small checkpoint, relative to its folder
  fs::path checkpoint_dir;      ///< the checkpoint folder it came from
  fs::path run_dir;             ///< a timing-only run's results
  fs::path sweep_dir;           ///< a timing-only sweep's results
  std::string profile;          ///< the MLP's profile file text
};

/// Runs `c` in `dir` and waits for it; for making the seeds.
Outcome run_now(const Case& c, const fs::path& dir) {
  const pid_t pid = start_case(c, dir);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return {WIFSIGNALED(status), false, WIFEXITED(status) ? WEXITSTATUS(status) : -1,
          dbench::testing::read_file(dir / ".output")};
}

Seeds make_seeds(const fs::path& root) {
  Seeds s;
  const fs::path dir = root / "seeds";
  fs::create_directories(dir);
  for (const char* command : {"graph", "graphs", "simulate", "train", "config", "sweep", "report",
                              "calibrate", "validate", "profile"}) {
    const auto help = run_now({"help", {command, "--help"}, {}}, dir);
    s.commands[command] = options_of(help.output);
    REQUIRE_MESSAGE(!s.commands[command].empty(), command << ": no options read from its --help");
  }
  write(dir / "base.toml", kBaseConfig);
  const auto run =
      run_now({"seed", {"simulate", "base.toml", "--timing-only", "-q", "--out", "run"}, {}}, dir);
  REQUIRE_MESSAGE(run.status == 0, run.output);
  s.run_dir = dir / "run";
  write(dir / "base-sweep.toml", kBaseSweep);
  const auto sweep = run_now({"seed", {"sweep", "base-sweep.toml", "--out", "sweep", "-j", "1"}, {}}, dir);
  REQUIRE_MESSAGE(sweep.status == 0, sweep.output);
  s.sweep_dir = dir / "sweep";
  dbench::runtime::WorkerState state;
  state.run_key = "fz";
  state.workers = 1;
  state.iterations_done = 3;
  state.params.assign(50, 0.5F);
  state.momentum.assign(50, 0.25F);
  state.trace.resize(3);
  state.observer_state = "rows";
  s.checkpoint_dir = dir / "checkpoints";
  dbench::runtime::write_checkpoint_part(s.checkpoint_dir, 3, state);
  dbench::runtime::publish_checkpoint(s.checkpoint_dir, 3);
  for (const auto& entry : fs::recursive_directory_iterator(s.checkpoint_dir)) {
    if (entry.is_regular_file() && s.checkpoint_file.empty()) {
      s.checkpoint_file = fs::relative(entry.path(), s.checkpoint_dir).string();
    }
  }
  REQUIRE(!s.checkpoint_file.empty());
  s.profile = dbench::models::profile_file_text(
      dbench::experiments::timing_profile(dbench::experiments::load_config(kBaseConfig)));
  return s;
}

/// Whether a command starts dbench again whatever its options.
bool starts_dbench(const std::string& command) {
  return command == "train" || command == "validate" || command == "calibrate" || command == "sweep";
}

/// A random command line for one command from its options and the hostile values.
std::vector<std::string> command_line(const std::string& command, const std::vector<Option>& options,
                                      std::mt19937_64& rng) {
  const auto& values = hostile_values();
  std::vector<std::string> args = {command};
  const int count = static_cast<int>(rng() % 5);
  for (int k = 0; k < count && !options.empty(); ++k) {
    const Option& o = options[rng() % options.size()];
    const std::string& value = values[rng() % values.size()];
    if (o.name.empty()) {
      args.push_back(rng() % 3 == 0 ? "base.toml" : value);
    } else if (!o.value) {
      args.push_back(o.name);
    } else if (rng() % 2 == 0) {
      args.push_back(o.name + "=" + value);
    } else {
      args.push_back(o.name);
      args.push_back(value);
    }
  }
  // Keep a run that the options leave valid short: the tiny config, or the embedded defaults cut to a few
  // iterations.
  if (command == "simulate" || command == "train" || command == "validate" || command == "calibrate") {
    if (rng() % 2 == 0) {
      args.insert(args.begin() + 1, "base.toml");
    } else {
      args.insert(args.begin() + 1, {"--set", "train.iterations=3", "--set", "train.eval_every=3"});
    }
  }
  return args;
}

/// The case with number `index`, from its own seed: which kind, and its inputs written into `dir`.
Case make_case(std::uint64_t index, const Seeds& seeds, const fs::path& dir) {
  std::mt19937_64 rng(index * 0x9E3779B97F4A7C15ULL + 1);
  write(dir / "base.toml", kBaseConfig);
  const auto kind = rng() % 100;
  if (kind < 40) {
    // The commands that start dbench again cost a program start (0.4 s of CPU) each: a quarter of the share
    // of the others.
    std::vector<std::string> names;
    for (const auto& [name, options] : seeds.commands) {
      const bool heavy = starts_dbench(name);
      for (int k = 0; k < (heavy ? 1 : 4); ++k) {
        names.push_back(name);
      }
    }
    const std::string& name = names[rng() % names.size()];
    return {"options of " + name, command_line(name, seeds.commands.at(name), rng), {}, starts_dbench(name)};
  }
  if (kind < 62) {
    write(dir / "c.toml", mutate(kBaseConfig, rng));
    static const std::vector<std::vector<std::string>> uses = {
        {"config", "c.toml"}, {"simulate", "c.toml", "--timing-only", "-q"}, {"simulate", "c.toml", "-q"}};
    return {"config file", uses[rng() % uses.size()], {}};
  }
  if (kind < 70) {
    write(dir / "s.toml", mutate(kBaseSweep, rng));
    // Most are checked and planned (--dry-run); some run, their runs forked or started as dbench.
    const bool run = rng() % 4 == 0;
    return {"sweep file", {"sweep", "s.toml", run ? "-j1" : "--dry-run", "--out", "sw"}, {}, run};
  }
  if (kind < 78) {
    const bool json = rng() % 4 == 0;
    std::string text = mutate(kBaseCalibration, rng);
    if (json) {
      text = "{\"gpu_flops_per_s\": " + hostile_values()[rng() % hostile_values().size()] + "}";
    }
    const std::string name = json ? "cal.json" : "cal.toml";
    write(dir / name, text);
    return {"calibration file",
            {"simulate", "base.toml", "--timing-only", "-q", "--set", "platform.preset=" + name},
            {}};
  }
  if (kind < 86) {
    write(dir / "p.toml", mutate(seeds.profile, rng));
    return {"profile file",
            {"simulate", "base.toml", "--timing-only", "-q", "--set", "platform.timing_model=p.toml"},
            {}};
  }
  if (kind < 94) {
    fs::copy(seeds.checkpoint_dir, dir / "ck", fs::copy_options::recursive);
    const fs::path ck = dir / "ck";
    // A rank's part or the LATEST pointer, damaged; read with the run's limits or none.
    std::vector<fs::path> files;
    for (const auto& entry : fs::recursive_directory_iterator(ck)) {
      if (entry.is_regular_file()) {
        files.push_back(entry.path());
      }
    }
    std::sort(files.begin(), files.end());
    const fs::path& file = rng() % 4 == 0 ? files[rng() % files.size()] : ck / seeds.checkpoint_file;
    write(file, damage(dbench::testing::read_file(file), rng));
    dbench::runtime::CheckpointLimits limits;
    if (rng() % 2 == 0) {
      limits.params = 50;
      limits.iterations = 10;
    }
    return {"checkpoint", {}, [ck, limits]() {
              try {
                const auto state = dbench::runtime::read_checkpoint(ck, 0, limits);
                return state.params.size() > (std::size_t{1} << 40) ? 3 : 0;
              } catch (const dbench::runtime::CheckpointError& e) {
                std::fprintf(stderr, "%s\n", e.what());
                return 1;
              }
            }};
  }
  // A results folder, a run's or a sweep's, with one of its files damaged.
  const bool sweep = rng() % 2 == 0;
  const fs::path target = dir / "res";
  fs::copy(sweep ? seeds.sweep_dir : seeds.run_dir, target, fs::copy_options::recursive);
  std::vector<fs::path> files;
  for (const auto& entry : fs::recursive_directory_iterator(target)) {
    const auto ext = entry.path().extension();
    if (entry.is_regular_file() && (ext == ".csv" || ext == ".json" || ext == ".toml")) {
      files.push_back(entry.path());
    }
  }
  std::sort(files.begin(), files.end());
  if (!files.empty()) {
    const fs::path& file = files[rng() % files.size()];
    write(file, mutate(dbench::testing::read_file(file), rng));
  }
  return {sweep ? "sweep results folder" : "run results folder", {"report", "res"}, {}};
}

std::uint64_t env_number(const char* name, std::uint64_t fallback) {
  const char* text = std::getenv(name);
  return text == nullptr || *text == '\0' ? fallback : std::stoull(text);
}

}  // namespace

TEST_SUITE("fuzz") {
  TEST_CASE("fuzz: generated commands and damaged files: no crash, no hang, nothing changed outside") {
    const std::uint64_t cases = env_number("DBENCH_FUZZ_CASES", 5000);
    const std::uint64_t first = env_number("DBENCH_FUZZ_SEED", 0);
    const auto budget = std::chrono::seconds(env_number("DBENCH_FUZZ_SECONDS", 360));
    TempDir temp;
    const fs::path root = temp.path();
    // Outside every case's folder: files a case must leave as they are.
    fs::create_directories(root / "outside" / "sub");
    write(root / "outside" / "precious.txt", "a user's file\n");
    write(root / "outside" / "sub" / "summary.csv", "workers\n1\n");
    const Seeds seeds = make_seeds(root);
    const std::string outside_before = digest(root / "outside");
    const std::string seeds_before = digest(root / "seeds");

    struct Running {
      std::uint64_t index;
      Case c;
      fs::path dir;
      pid_t pid;
      std::chrono::steady_clock::time_point started;
    };
    std::vector<Running> running;
    std::vector<std::string> failures;
    std::map<std::string, int> per_kind;
    std::map<int, int> per_status;
    const auto finish = [&](Running& r, int status, bool timed_out) {
      Outcome o;
      o.timed_out = timed_out;
      o.signalled = !timed_out && WIFSIGNALED(status);
      o.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
      o.output = dbench::testing::read_file(r.dir / ".output");
      ++per_kind[r.c.kind];
      ++per_status[o.status];
      std::string what;
      if (o.timed_out) {
        what = "still running after " + std::to_string(static_cast<int>(kCaseSeconds)) + " s";
      } else if (o.signalled) {
        what = "ended on signal " + std::to_string(WTERMSIG(status));
      } else if (o.status == 125 || o.output.find("unexpected exception") != std::string::npos) {
        what = "an unexpected exception";
      }
      if (!what.empty()) {
        failures.push_back("case " + std::to_string(r.index) + " (" + r.c.kind + "): " + what + ": " +
                           (r.c.args.empty() ? std::string("reader") : quoted(r.c.args)) + "\n" +
                           o.output.substr(0, 2000));
      }
      std::error_code ignored;
      fs::remove_all(r.dir, ignored);
    };
    const auto start = std::chrono::steady_clock::now();
    std::uint64_t end = first + cases;
    for (std::uint64_t i = first; i < end || !running.empty();) {
      if (i < end && std::chrono::steady_clock::now() - start > budget) {
        end = i;  // out of time: the cases started finish, no other starts
      }
      if (i < end && running.size() < 2) {
        const fs::path dir = root / "cases" / std::to_string(i);
        fs::create_directories(dir);
        make_case_folder(dir);
        Case c = make_case(i, seeds, dir);
        const pid_t pid = start_case(c, dir);
        running.push_back({i, std::move(c), dir, pid, std::chrono::steady_clock::now()});
        ++i;
        continue;
      }
      bool reaped = false;
      for (auto it = running.begin(); it != running.end(); ++it) {
        int status = 0;
        if (::waitpid(it->pid, &status, WNOHANG) == it->pid) {
          // The case's own children (workers, gnuplot) go with it.
          ::kill(-it->pid, SIGKILL);
          finish(*it, status, false);
          running.erase(it);
          reaped = true;
          break;
        }
        if (std::chrono::steady_clock::now() - it->started > std::chrono::duration<double>(kCaseSeconds)) {
          ::kill(-it->pid, SIGKILL);
          ::waitpid(it->pid, &status, 0);
          finish(*it, status, true);
          running.erase(it);
          reaped = true;
          break;
        }
      }
      if (!reaped) {
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
      }
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::string kinds;
    for (const auto& [kind, n] : per_kind) {
      kinds += " " + kind + ": " + std::to_string(n) + ";";
    }
    std::string statuses;
    for (const auto& [status, n] : per_status) {
      statuses += " " + std::to_string(status) + ": " + std::to_string(n) + ";";
    }
    const std::uint64_t ran = end - first;
    MESSAGE(ran << " of " << cases << " cases (seeds " << first << " to " << end - 1 << ") in " << seconds
                << " s;" << kinds << " exit statuses" << statuses);
    CHECK_MESSAGE(ran >= std::min(cases, kFewestCases), "only " << ran << " cases ran in the "
                                                                << budget.count()
                                                                << " s budget (DBENCH_FUZZ_SECONDS)");
    if (cases >= kFewestCases) {
      CHECK(per_kind.size() >= 16);  // every command's options and every file kind; not asked of a few cases
    }
    for (const auto& f : failures) {
      FAIL_CHECK(f);
    }
    CHECK_MESSAGE(digest(root / "outside") == outside_before, "a case changed files outside its folder");
    CHECK_MESSAGE(digest(root / "seeds") == seeds_before, "a case changed the seeds' files");
    std::vector<std::string> top;
    for (const auto& entry : fs::directory_iterator(root)) {
      top.push_back(entry.path().filename().string());
    }
    std::sort(top.begin(), top.end());
    CHECK(top == std::vector<std::string>{"cases", "outside", "seeds"});
    std::error_code ec;
    CHECK(fs::is_empty(root / "cases", ec));
  }
}
