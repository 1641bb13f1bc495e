// `dbench sweep SWEEP.toml`: every run of a grid as its own `dbench simulate` process (a crash stays in its
// run, and SimGrid is one per process), J at a time, resumable, then summary.csv and the report. A
// timing-only sweep's runs are this process forked rather than the program started again (see
// sweep_children.cpp); sweep_progress.cpp shows how far it is.
#include <fmt/core.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

#include "core/parallel.hpp"
#include "experiments/commands.hpp"
#include "experiments/sweep.hpp"
#include "experiments/sweep_children.hpp"
#include "experiments/sweep_progress.hpp"
#include "experiments/timing_setup.hpp"
#include "report/report.hpp"
#include "results/atomic_file.hpp"
#include "results/results_dir.hpp"
#include "results/sweep_lock.hpp"
#include "runtime/stop_signals.hpp"

namespace dbench::experiments {
namespace {

namespace fs = std::filesystem;

struct SweepOptions {
  std::string sweep;
  std::string out;
  int jobs = 1;
  std::string shard;
  unsigned threads = 0;
  bool no_report = false;
  bool dry_run = false;
  bool quiet = false;
};

// overrides[0] names the run after its id, then come [set]'s, then the axes'.
std::string overrides_text(const SweepRun& run, std::size_t first, std::size_t last) {
  std::string text;
  for (std::size_t i = first; i < std::min(last, run.overrides.size()); ++i) {
    text += text.empty() ? "" : " ";
    text += run.overrides[i];
  }
  return text;
}

// `out` may take the sweep: a new or empty folder, or a sweep folder (its marker), whose own entries are
// neither links nor of the wrong kind (see results::check_sweep_folder). Throws naming --out.
void check_sweep_out(const fs::path& out, std::span<const SweepRun> runs) {
  std::vector<fs::path> directories{"runs", "logs", "configs", "plots"};
  std::vector<fs::path> files{"summary.csv", "sweep.toml", "report.md", "report.html",
                              results::kSweepLockName};
  for (const auto& run : runs) {
    directories.push_back(fs::path("runs") / run.id);
    files.push_back(fs::path("logs") / (run.id + ".log"));
    files.push_back(fs::path("configs") / (run.id + ".toml"));
  }
  try {
    results::check_sweep_folder(out, directories, files);
  } catch (const results::ResultsDirError& e) {
    throw std::runtime_error(fmt::format("--out: {}", e.what()));
  }
}

void run_sweep(const SweepOptions& options) {
  // Everything is checked before anything is written: the shard, the sweep, every run's config.
  const Shard shard = options.shard.empty() ? Shard{} : parse_shard(options.shard);
  const SweepConfig sweep = load_sweep_file(options.sweep);
  const std::vector<SweepRun> runs = expand_sweep(sweep);
  const fs::path out = options.out.empty() ? fs::path("results") / sweep.name : fs::path(options.out);
  check_sweep_out(out, runs);

  std::vector<std::size_t> selected;
  for (const auto& run : runs) {
    if (shard.contains(run.index)) {
      selected.push_back(run.index);
    }
  }
  const std::string shard_text =
      shard.count > 1 ? fmt::format(" (shard {}/{}: {} runs)", shard.index_1, shard.count, selected.size())
                      : "";

  const std::string timing_text = sweep.timing_only ? " (timing only)" : "";

  if (options.dry_run) {
    fmt::print("sweep {}: {} runs{}{}, base {}; out {}\n", sweep.name, runs.size(), timing_text, shard_text,
               sweep.base.empty() ? std::string("<defaults>") : sweep.base.string(), out.string());
    const std::size_t axes_from = 1 + sweep.set.size();
    if (!sweep.set.empty()) {
      fmt::print("every run: {}\n", overrides_text(runs.front(), 1, axes_from));
    }
    std::size_t width = 0;
    for (const std::size_t r : selected) {
      width = std::max(width, runs[r].id.size());
    }
    for (const std::size_t r : selected) {
      const RunCheck check = check_run(out / "runs" / runs[r].id, runs[r].config, sweep.timing_only);
      fmt::print("{:<{}}  {}{}\n", runs[r].id, width,
                 overrides_text(runs[r], axes_from, runs[r].overrides.size()),
                 check.finished         ? "  (finished)"
                 : check.reason.empty() ? ""
                                        : fmt::format("  (to recompute: {})", check.reason));
    }
    return;
  }

  // Held until the sweep ends: a second sweep into the folder would run every run again beside this one.
  std::optional<results::SweepLock> lock;
  try {
    results::claim_sweep_folder(out);
    lock.emplace(out, shard.index_1, shard.count);
  } catch (const results::ResultsDirError& e) {
    throw std::runtime_error(fmt::format("--out: {}", e.what()));
  }
  std::error_code ec;
  for (const char* sub : {"runs", "logs", "configs"}) {
    fs::create_directories(out / sub, ec);
    if (ec) {
      throw std::runtime_error(
          fmt::format("--out {}: cannot create '{}': {}", out.string(), (out / sub).string(), ec.message()));
    }
  }
  const int jobs = std::max(1, options.jobs);
  const unsigned cores = core::available_cpus();
  const unsigned threads =
      options.threads > 0 ? options.threads : std::max(1U, cores / static_cast<unsigned>(jobs));
  const bool terminal = ::isatty(STDERR_FILENO) != 0;

  std::vector<std::size_t> queue;
  std::vector<std::string> recompute_reasons(runs.size());
  std::size_t finished_before = 0;
  GraphStatsCache cache;
  // Summaries of the runs finished before, read once here and reused for summary.csv at the end.
  std::vector<std::optional<results::SummaryRow>> earlier(runs.size());
  for (const std::size_t r : selected) {
    RunCheck check = check_run(out / "runs" / runs[r].id, runs[r].config, sweep.timing_only);
    if (check.finished) {
      // A finished run whose files summary.csv is made from cannot be read (a damaged metrics.csv) is run
      // again, rather than failing every rerun of the sweep at its end.
      try {
        earlier[r] = summarize_run(out / "runs" / runs[r].id, sweep.target_accuracy, cache);
      } catch (const std::exception& e) {
        check = {false, fmt::format("its files cannot be summarized: {}", e.what())};
      }
    }
    if (check.finished) {
      ++finished_before;
      append_to_log(out / "logs" / (runs[r].id + ".log"),
                    "dbench sweep: skipped, finished earlier (summary.json and the same config.toml)");
      if (!options.quiet && !terminal) {
        fmt::print(stderr, "skipped {} (finished earlier)\n", runs[r].id);
      }
    } else {
      // A directory that is there but not a finished run of this config (damaged, incomplete or from another
      // config) is run again, and the user is told which and why.
      if (!check.reason.empty() && !options.quiet) {
        fmt::print(stderr, "recomputing {}: {}\n", runs[r].id, check.reason);
      }
      recompute_reasons[r] = check.reason;
      queue.push_back(r);
    }
  }
  // Longest first: the big runs start early instead of leaving one job alone at the end.
  std::stable_sort(queue.begin(), queue.end(),
                   [&runs](std::size_t a, std::size_t b) { return runs[a].cost() > runs[b].cost(); });
  if (!options.quiet) {
    fmt::print(stderr,
               "sweep {}: {} runs{}{}, {} finished earlier, {} to run; -j {}, {} thread{} each; out {}\n",
               sweep.name, runs.size(), timing_text, shard_text, finished_before, queue.size(), jobs, threads,
               threads == 1 ? "" : "s", out.string());
  }
  // Each run's log says it too; here each different one once.
  std::set<std::string> caveats;
  for (const std::size_t r : queue) {
    if (std::string caveat = calibration_caveat(runs[r].config);
        !caveat.empty() && caveats.insert(caveat).second) {
      fmt::print(stderr, "warning: {}\n", caveat);
    }
  }

  std::vector<std::string> failures(runs.size());
  {
    SweepProgress progress(selected.size(), finished_before, terminal, options.quiet, jobs);
    const BlockedSignals signals;
    SweepChildren children(out, threads, sweep.timing_only);
    std::size_t next = 0;
    double queued_cost = 0.0;
    for (const std::size_t r : queue) {
      queued_cost += runs[r].cost();
    }
    while (next < queue.size() || !children.running().empty()) {
      while (next < queue.size() && children.running().size() < static_cast<std::size_t>(jobs)) {
        children.spawn(runs[queue[next]], recompute_reasons[queue[next]]);
        queued_cost -= runs[queue[next]].cost();
        ++next;
      }
      progress.update(runs, children.running(), queued_cost);
      const int signal = signals.wait(terminal ? 0.5 : 2.0);
      if (signal == SIGINT || signal == SIGTERM || signal == SIGHUP) {
        const auto stopped = children.stop_all();
        progress.close();
        const std::string name = runtime::signal_name(signal);
        for (const std::size_t r : stopped) {
          append_to_log(out / "logs" / (runs[r].id + ".log"),
                        fmt::format("dbench sweep: stopped ({})", name));
        }
        throw std::runtime_error(fmt::format(
            "interrupted by {}: stopped {} running run{}; finished runs are kept, the same command resumes",
            name, stopped.size(), stopped.size() == 1 ? "" : "s"));
      }
      for (const auto& [child, status] : children.reap()) {
        const SweepRun& run = runs[child.run];
        const double seconds = std::chrono::duration<double>(SweepClock::now() - child.started).count();
        std::string failure = exit_reason(status);
        if (failure.empty()) {
          if (const RunCheck check = check_run(out / "runs" / run.id, run.config, sweep.timing_only);
              !check.finished) {
            failure = fmt::format("exited without a finished results directory: {}",
                                  check.reason.empty() ? "none was written" : check.reason);
          }
        }
        const fs::path log = out / "logs" / (run.id + ".log");
        if (!failure.empty()) {
          append_to_log(log, fmt::format("dbench sweep: failed ({})", failure));
        }
        failures[child.run] = failure;
        progress.finished(runs, child.run, seconds, failure, log, children.running(), queued_cost);
      }
    }
    progress.update(runs, children.running(), 0.0);
    progress.close();
  }

  // summary.csv lists every run of the grid, whichever shard ran it.
  std::vector<results::SummaryRow> summaries;
  std::vector<RunStatus> statuses;
  std::vector<std::string> failed;
  std::size_t done = 0;
  for (const auto& run : runs) {
    const fs::path run_dir = out / "runs" / run.id;
    if (earlier[run.index]) {
      summaries.push_back(std::move(*earlier[run.index]));
      statuses.push_back(RunStatus::done);
      ++done;
      continue;
    }
    if (run_finished(run_dir, run.config, sweep.timing_only)) {
      try {
        summaries.push_back(summarize_run(run_dir, sweep.target_accuracy, cache));
        statuses.push_back(RunStatus::done);
        ++done;
        continue;
      } catch (const std::exception& e) {
        failures[run.index] = e.what();
      }
    }
    summaries.push_back(pending_summary(run.config));
    statuses.push_back(failures[run.index].empty() ? RunStatus::pending : RunStatus::failed);
    if (!failures[run.index].empty()) {
      failed.push_back(run.id);
      fmt::print(stderr, "failed: {}: {} (log: {})\n", run.id, failures[run.index],
                 (out / "logs" / (run.id + ".log")).string());
    }
  }
  results::write_file_atomically(out / "summary.csv", summary_csv(sweep, runs, summaries, statuses));
  results::write_file_atomically(out / "sweep.toml", sweep.text);
  const std::size_t pending = runs.size() - done - failed.size();
  fmt::print("summary: {} ({} done, {} failed, {} pending)\n", (out / "summary.csv").string(), done,
             failed.size(), pending);
  // The report of a sharded sweep is the merge's: shards that end together would otherwise both write it,
  // and one that ends first would show the others' runs as pending.
  if (shard.count > 1) {
    const std::string merge = fmt::format("dbench sweep {} --out {}", options.sweep, out.string());
    if (pending > 0) {
      fmt::print(
          "shard {}/{}: {} of the grid's runs are not finished here yet; once every shard has ended, "
          "merge them into summary.csv and the report with: {}\n",
          shard.index_1, shard.count, pending, merge);
    } else {
      fmt::print("shard {}/{}: every run of the grid is finished; write the report with: {}\n", shard.index_1,
                 shard.count, merge);
    }
  }
  std::fflush(stdout);

  if (!options.no_report && shard.count == 1) {
    try {
      const report::ReportResult written = report::write_report(out);
      for (const auto& left_out : written.left_out) {
        fmt::print(stderr, "report: left out {}: {}\n", left_out.what, left_out.reason);
      }
      fmt::print("report: {}\n", written.html.string());
    } catch (const std::exception& e) {
      std::fflush(stdout);
      fmt::print(stderr, "warning: no report: {}\n", e.what());
    }
  }
  if (!failed.empty()) {
    std::string list;
    for (const auto& id : failed) {
      list += list.empty() ? "" : ", ";
      list += id;
    }
    std::fflush(stdout);
    throw std::runtime_error(fmt::format("{} of {} runs failed: {} (logs in {})", failed.size(), runs.size(),
                                         list, (out / "logs").string()));
  }
}

}  // namespace

void add_sweep_command(CLI::App& app) {
  auto options = std::make_shared<SweepOptions>();
  auto* cmd = app.add_subcommand(
      "sweep", "Run a grid of simulations (in parallel, resumable), then write summary.csv and the report");
  cmd->add_option("sweep", options->sweep, "Sweep config (TOML): base config, [set] overrides and the [grid]")
      ->required();
  cmd->add_option("--out", options->out, "Sweep directory (default: results/<name>)")
      ->check(non_empty_path());
  cmd->add_option("-j,--jobs", options->jobs, "Runs at once")
      ->check(number_in(1, 1024))
      ->capture_default_str();
  cmd->add_option("--shard", options->shard,
                  "i/N: run only the grid runs with index % N == i-1 (e.g. one job-array task each)");
  cmd->add_option("--threads", options->threads, "Compute threads per run (0: cores / jobs)")
      ->capture_default_str();
  cmd->add_flag("--no-report", options->no_report, "Write summary.csv but no report");
  cmd->add_flag("--dry-run", options->dry_run, "Print the runs (id and overrides) and exit");
  cmd->add_flag("--quiet,-q", options->quiet, "No progress output");
  cmd->callback([options] { run_sweep(*options); });
}

}  // namespace dbench::experiments
