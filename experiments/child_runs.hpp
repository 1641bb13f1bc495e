// What calibrate and validate do alike with the dbench processes they start: run one and tell a refusal
// from a failure, read the machine's speed on fresh workers, and read a training run's time per iteration
// and its parts from the files it wrote; and the check of the lists of what they start runs for.
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/launcher.hpp"
#include "validation/comparison.hpp"
#include "validation/speed_watch.hpp"

namespace dbench::experiments {

/// Runs `command` (a child dbench, or mpirun starting dbench workers) and waits for it. A refusal (exit
/// status runtime::Refused::kExitStatus), which the child has said in one line, is rethrown as
/// runtime::Refused with nothing to add; another failure throws runtime::LaunchError
/// "CALLER: WHAT failed (exit status N); the messages above name the cause".
void run_child(const std::vector<std::string>& command, std::string_view caller, std::string_view what,
               runtime::Output output = runtime::Output::shown);

/// What a speed reading reads: the reference kernel, and where `model` is named that model's local step at
/// `batch` per worker under `config` and `overrides` (the config's batch where `batch` is 0).
struct SpeedCheck {
  std::string config;  // empty: the embedded defaults
  std::vector<std::string> overrides;
  std::string model;  // empty: the reference kernel only
  int batch = 0;
  std::filesystem::path file;  // where the reading is written
};

/// The arguments, after the executable, of the `dbench calibrate --speed-check` that reads `check` (with
/// --speed-step where it names a model) and says nothing but its errors; calibrate and validate both read
/// the machine's speed through it.
std::vector<std::string> speed_check_args(const SpeedCheck& check);

/// The machine's speed as the reference kernel (and, with --speed-step, the model's step) reads it on fresh
/// workers: runs `command`, a `dbench calibrate --speed-check SPEED_FILE` launch, through run_child and
/// returns the `reference_kernel_s` and `step_s` (0 where absent) it wrote.
validation::Speed fresh_speed_reading(const std::vector<std::string>& command,
                                      const std::filesystem::path& speed_file, std::string_view caller);

/// The seconds per iteration of a `dbench train` run in `run` and their parts (validation::mean_parts over
/// its trace_worker.csv): the first `warmup` iterations and those that evaluated (from its metrics.csv) are
/// left out.
validation::PartTimes run_parts(const std::filesystem::path& run, std::int64_t warmup);

/// Throws std::invalid_argument "OPTION: 'NAME' is given twice; WHY" for the first name of `names` that an
/// earlier one repeats: each entry's runs write under its name, so a second would run again over the first's.
void refuse_repeated(std::span<const std::string> names, std::string_view option, std::string_view why);

}  // namespace dbench::experiments
