// How `dbench calibrate` times a piece of work on many workers at once: rounds that start together and last
// until the slowest worker is done, every body timed in turn within a round, and the statistics kept of them;
// and dbench train's own loops, timed as runs in rounds of one run of every loop at every batch.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "runtime/communicator.hpp"
#include "validation/calibration.hpp"
#include "validation/comparison.hpp"

namespace dbench::validation {

/// Seconds (wall clock, steady) from `start` to now.
double seconds_since(std::chrono::steady_clock::time_point start);

/// The median of `values` (the mean of the two middle ones for an even count); `values` must not be empty.
double median(std::vector<double> values);

/// Per body, per round: seconds per call when every worker of `comm` calls the body back to back, as a run's
/// iterations follow each other. A timing starts together (an all-reduce as barrier) and lasts until its
/// slowest worker is done, so workers that share cores and memory bandwidth pay for each other (a worker
/// descheduled before its call counts too). Each round times every body in turn, so that a slow spell of a
/// shared machine falls on all of them alike; a timing makes at least `repeats` calls, and more until it
/// lasts 20 ms, so that it spans many of the scheduler's time slices. The first round is untimed; 7 timed
/// rounds follow, so each body gets 7 values. Every worker must call it with the same bodies and `repeats`.
std::vector<std::vector<double>> interleaved_rounds(runtime::Communicator& comm, int repeats,
                                                    std::span<const std::function<void()>> bodies);

/// The median over interleaved_rounds' rounds of one body's seconds per call.
double seconds_per_call(runtime::Communicator& comm, int repeats, const std::function<void()>& body);

/// Appends batch size `batch` to `result` from interleaved_rounds over three bodies: (0) the step alone,
/// (1) the communication round alone, (2) the step followed by the round. In seconds per call:
/// - `seconds`: the step in the training loop, the fastest round's max(step alone, loop - round alone);
/// - `seconds_alone`: the median of the step alone;
/// - `gossip_seconds`: the median of the round alone.
/// The step in the loop is taken round by round (each round's three timings share its conditions); a loop no
/// slower than its parts is noise around a step that the round does not slow. The fastest round is kept:
/// workers sharing cores fall now and then into a slower order of turns that lasts several rounds (the MLP on
/// 4 workers sharing 2 cores: 360 instead of 200 us per step and round), which the training runs of dbench
/// validate have not shown.
void record_batch(ModelCalibration& result, int batch, const std::vector<std::vector<double>>& rounds);

/// Iterations of a loop's run at least (and about 0.5 s as the kernels timed them, 2000 at most).
inline constexpr std::int64_t kLoopIterations = 300;

/// Seconds per iteration of one run of dbench train's loop with the given overrides, and its parts.
using LoopRun = std::function<PartTimes(const std::vector<std::string>& overrides)>;

/// CPU workers: times dbench train's own loop on a ring, on the one-peer exponential graph and with the
/// all-reduce at each batch of `m` (and, with `exponential`, on the directed exponential graph) on `workers`
/// workers, each run `runs` times by `run`, each part the median over them (a shared machine has slow
/// spells). The runs go in rounds, one run of every loop at every batch a round, so that each median spans
/// the whole phase, as validate's medians over its rounds do: timed batch by batch, a spell of a few seconds
/// shifts one batch's figures against its neighbours', and the line between them that charges the batch a
/// config trains at.
/// `each_part`, where set, runs each batch's part of each round (round `round` from 0, batch size `batch`):
/// it calls `measure`, once or again, and a call replaces what an earlier call of the same part measured.
/// Calibrate brackets each part (a few runs, some seconds) by readings of the machine's speed and runs a part
/// again where it drifted, so that a slow spell re-runs the part it spoiled rather than every loop.
/// Replaces what an earlier attempt measured.
using RoundPart = std::function<void(int round, double batch, const std::function<void()>& measure)>;
void time_training_loops(const std::string& model, int workers, bool exponential, int runs,
                         const LoopRun& run, ModelCalibration& m, const RoundPart& each_part = {});

}  // namespace dbench::validation
