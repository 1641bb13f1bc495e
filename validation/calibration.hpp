// A calibration of "this machine" from micro-benchmarks on its real workers: the measurements, their fits,
// and the platform file the simulator reads (experiments::read_calibration) for one model.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "validation/fits.hpp"
#include "validation/speed_watch.hpp"

namespace dbench::validation {

/// One model's local training step (forward, backward, SGD, the per-iteration all-reduce of the loss) timed
/// at several batch sizes while every worker computes at once (so workers sharing cores and memory bandwidth
/// slow each other as they do in training).
struct ModelCalibration {
  std::string model;              ///< "mlp", "lenet", ...
  double flops_per_sample = 0.0;  ///< forward + backward, ModelProfile's convention
  /// Bytes of its parameters (floats): what a gossip message and an all-reduce of its gradient carry. The
  /// links are timed at this size too, and the model's platform file takes their cost there as measured.
  double parameter_bytes = 0.0;
  std::vector<double> batches;  ///< batch sizes measured
  /// Per batch: the step the platform is fitted to. On CPU workers, dbench train's own ring loop
  /// (ring_loop_seconds) less the communication the platform charges a ring's iteration; elsewhere the step
  /// in the training loop as kernel_seconds times it.
  std::vector<double> seconds;
  /// Per batch: a step followed by a gossip round, less the round alone, round by round, the fastest of the
  /// rounds, each timed until the slowest worker is done.
  std::vector<double> kernel_seconds;
  /// Per batch, CPU workers: seconds per iteration of dbench train on a ring and with the all-reduce (the
  /// median of runs; per iteration the mean over workers, warm-up and evaluations left out, as validate
  /// measures a run). Empty where not measured.
  std::vector<double> ring_loop_seconds;
  std::vector<double> allreduce_loop_seconds;
  /// Per batch, CPU workers: the parts of those loops' iterations as their traces split them (the median
  /// run's): the local step, and the communication (waiting for and moving the neighbours' data, mixing it;
  /// the gradient's all-reduce with its widening and summing).
  std::vector<double> ring_loop_compute_s;
  std::vector<double> ring_loop_comm_s;
  std::vector<double> allreduce_loop_compute_s;
  std::vector<double> allreduce_loop_comm_s;
  /// Per batch, CPU workers: the communication of dbench train's loop on the one-peer exponential graph (one
  /// message a round where the ring sends two), which separates a round's fixed cost from its messages'.
  std::vector<double> one_peer_loop_comm_s;
  /// Per batch, CPU workers sharing cores: the communication of dbench train's loop on the directed
  /// exponential graph, whose in-neighbours share a worker's core where the ring's do not (4 workers on 2
  /// cores: half of them), with as many messages as the ring. Empty where not measured.
  std::vector<double> exponential_loop_comm_s;
  /// The all-reduce of the model's gradient as centralized training pays it in its loop: the median over
  /// batches of the centralized loop's communication less the turns of workers sharing a core; 0 where not
  /// measured.
  double allreduce_in_loop_s = 0.0;
  /// What a centralized step computes beyond the ring's (its update a pass of its own): the median over
  /// batches of the two loops' compute; the platform's gradient_step_overhead_s.
  double gradient_step_overhead_s = 0.0;
  /// The links as the ring's loop paid them: the intra-node link whose simulated ring exchange equals the
  /// median over batches of the ring loop's communication less the turns of workers sharing a core. Zero
  /// bandwidth where not measured (the exchange's fit is used).
  AlphaBetaFit link_in_loop;
  double ring_exchange_in_loop_s = 0.0;  ///< that exchange, the target of link_in_loop
  /// A gossip round's fixed cost (the platform's collective_latency_s) that, with link_in_loop, gives both
  /// the ring's and the one-peer graph's exchange as their loops paid them; 0 where they do not separate.
  double round_latency_s = 0.0;
  /// Steps a worker waits each iteration for those sharing its core (the platform's shared_core_turns): the
  /// slope of the ring loop's communication against the step over the batches, within [0, workers per core
  /// - 1]. Workers whose short steps take turns whole wait about one step per other worker; steps longer than
  /// the scheduler's time slice run interleaved, and their sharing shows in the step instead.
  double shared_core_turns = 0.0;
  /// The steps a worker does not wait for in-neighbours on its own core (the platform's same_core_relief):
  /// per batch, the ring loop's communication less the exponential graph's, over the step and the two graphs'
  /// shares of such in-neighbours apart; the median, within [0, workers per core - 1]. 0 where not measured.
  double same_core_relief = 0.0;
  /// The steps spared where all of a worker's in-neighbours share its core (the platform's
  /// same_core_relief_whole): per batch, the one-peer loop's communication beyond its simulated exchange,
  /// over the step, is the mean wait over its rounds (in-neighbours on the other core and on the worker's
  /// own, alternately); the relief that gives it, the median, within [0, workers per core - 1]. Unset where
  /// no relief is fitted.
  std::optional<double> same_core_relief_whole;
  std::vector<double> seconds_alone;   ///< per batch: the step timed back to back with itself, for reference
  std::vector<double> gossip_seconds;  ///< per batch: the ring gossip round of the parameters, timed alone
  ComputeFit fit;                      ///< seconds = overhead_s + batch * flops_per_sample / flops_per_s
  /// The config's batch per worker (`step_batch`) and, where it lies between two timed batches, the line
  /// through their steps (fit_compute_between): what the platform file charges a step. Unset: `fit`.
  double step_batch = 0.0;
  std::optional<ComputeFit> step_between;
  /// The compute model the platform file charges: step_between where set, else fit.
  const ComputeFit& platform_step() const { return step_between ? *step_between : fit; }
  /// The machine's speed for this model's own kernels while its loops were timed: the step alone at
  /// `speed_step_batch` (the config's batch per worker) on fresh workers, the median of the readings taken
  /// before, between and after the loops' rounds (validation::step_reading_seconds). validate compares its
  /// own readings with it. 0: not read (a LibTorch worker, or an older calibration).
  double speed_step_s = 0.0;
  int speed_step_batch = 0;
};

/// One communication pattern timed over message sizes and its alpha-beta fit.
struct LinkCalibration {
  std::string pattern;          ///< what was timed, e.g. "ping-pong between ranks 0 and 1"
  std::vector<double> bytes;    ///< message sizes (per worker)
  std::vector<double> seconds;  ///< per size: median over repetitions of the slowest worker
  AlphaBetaFit fit;             ///< seconds = alpha_s + bytes / bandwidth_Bps
};

/// Everything `dbench calibrate` measured and fitted on N workers of one machine.
struct Calibration {
  int workers = 0;  ///< workers that ran together (the platform's GPUs per node)
  /// Most workers pinned to one core: they take turns on it (see ModelCalibration::shared_core_turns).
  int workers_per_core = 1;
  /// The cores the workers are pinned to round-robin (rank r on the r mod cores-th), the platform's
  /// cores_per_node; 0 where they are not pinned so.
  int cores = 0;
  std::string host;  ///< where it ran
  /// What ran the models: "cpu-worker" (dbench train's CPU workers), "cpu" or "cuda:N" (its LibTorch worker).
  std::string device = "cpu-worker";
  std::vector<ModelCalibration> models;
  /// Two workers, the others idle: the link alone. Empty (no sizes) for a single worker, as is `exchange`.
  LinkCalibration point_to_point;
  /// Every worker sends to the next, receives from the previous and mixes what it received, at once: the link
  /// class the platform's intra-node links take their latency and bandwidth from (training's messages are
  /// concurrent, and on CPU workers the receiver's pass over the message is part of its cost).
  LinkCalibration exchange;
  /// The mean of a float gradient over every worker, summed in double, as centralized training takes it
  /// (bytes of floats: what the simulator counts).
  LinkCalibration allreduce;
  /// One all-reduce of a single double: every iteration of `dbench train` pays it (the divergence check); the
  /// step's timing includes it, so it is part of each model's fitted overhead. Reported for reference.
  double small_allreduce_s = 0.0;
  /// The reference kernel's seconds per call over the calibration (the median of its readings,
  /// SpeedWatch::settled), every reading taken around the measurements, and the drift from the first that
  /// counted as the same machine: validate compares its own readings with reference_kernel_s.
  double reference_kernel_s = 0.0;
  std::vector<SpeedReading> speed_readings;
  double drift_tolerance = 0.0;
};

/// `link`'s fit with its bandwidth set so that the line passes through the time measured at `bytes`, its
/// fitted latency kept; the fit itself when `bytes` was not measured or the measurement is not above the
/// latency.
AlphaBetaFit anchored_fit(const LinkCalibration& link, double bytes);
/// `fit` with its bandwidth set so that the line passes through `seconds` at `bytes`, its latency kept; `fit`
/// itself when `seconds` is not above the latency.
AlphaBetaFit anchored_fit(const AlphaBetaFit& fit, double bytes, double seconds);
/// Seconds of `fit` at `bytes`.
double fit_seconds(const AlphaBetaFit& fit, double bytes);

/// Looks up a model's calibration; throws std::invalid_argument naming the calibrated models.
const ModelCalibration& model_calibration(const Calibration& calibration, const std::string& model);

/// The platform file for `model`, in the format experiments::read_calibration reads: one node of
/// `workers` GPUs (base "custom", star fabric), the model's fitted rate, its fitted overhead as
/// iteration_overhead_s, the exchange fit as the intra-node links (a message crosses two
/// GPU ports: latency alpha/2 each) and the all-reduce fit as the measured all-reduce. Both lines keep
/// their fitted latency and pass through what was measured at the model's parameter size (anchored_fit), so
/// the messages the model's training sends cost what they were measured to. Fitted values and residuals
/// follow as comments.
std::string platform_toml(const Calibration& calibration, const ModelCalibration& model);

/// The whole calibration (measurements, fits, residuals) as JSON.
nlohmann::json to_json(const Calibration& calibration);

/// Reads to_json's output back (the measurements and fits).
Calibration calibration_from_json(const nlohmann::json& json);

/// Latency of one GPU port of the platform: a message between two GPUs of a node crosses two.
double port_latency_s(const AlphaBetaFit& exchange);

}  // namespace dbench::validation
