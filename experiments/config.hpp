// The experiment configuration: typed structs with defaults, loaded from TOML and validated once, at load.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "models/input_file.hpp"

namespace dbench::experiments {

/// A config that cannot be read or is invalid; the message starts with the config's source name.
class ConfigError : public std::runtime_error {
 public:
  /// Wraps a complete, user-facing message (one line per problem found).
  explicit ConfigError(const std::string& message) : std::runtime_error(message) {}
};

/// One config key at fault, found by setup code (graph, policy, platform, data shapes); the loader reports it
/// like any other key. what() is "key: reason".
class ConfigKeyError : public std::invalid_argument {
 public:
  /// `key` is a config key such as "algorithm.torus_shape"; `reason` is one line.
  ConfigKeyError(std::string key, std::string reason)
      : std::invalid_argument(key + ": " + reason), key_(std::move(key)), reason_(std::move(reason)) {}

  /// The config key, e.g. "train.workers".
  const std::string& key() const noexcept { return key_; }
  /// Why its value cannot be used.
  const std::string& reason() const noexcept { return reason_; }

 private:
  std::string key_;
  std::string reason_;
};

/// [train]: what is trained — virtual replicas in sim, real workers in runtime.
struct TrainConfig {
  /// Trained model: mlp | lenet | resnet20 | resnet50.
  std::string model = "mlp";
  /// Data set: fashion-mnist | cifar10 | synthetic | imagenet-folder.
  std::string dataset = "fashion-mnist";
  /// Where the data set's files are; empty means the data set's default location.
  std::string data_dir;
  /// dataset = synthetic: training samples the teacher network labels (the test split has 10,000).
  int synthetic_samples = 60000;
  /// dataset = synthetic: seeds the teacher and the inputs; 0: the run's seed (a new task per seed).
  std::uint64_t synthetic_seed = 0;
  /// Views of every training image (fashion-mnist, cifar10): the training set is augment_copies x its images,
  /// copy 0 the image itself and every other a shifted, possibly flipped view (models::Augmentation),
  /// computed when a batch is gathered. Epochs and shards count the expanded set; the test set is not
  /// augmented. 1: no augmentation.
  int augment_copies = 1;
  /// Number of replicas (one per GPU in runtime).
  int workers = 16;
  /// Samples per replica per iteration; the global batch is workers * batch_per_worker.
  int batch_per_worker = 16;
  /// Number of SGD iterations; with `epochs` set, derived from it at load (config_budget.cpp).
  int iterations = 500;
  /// The budget in passes over the training set instead of iterations; 0: the budget is `iterations`.
  /// Exactly one of the two is given; iterations = ceil(epochs * train samples / global batch).
  double epochs = 0.0;
  /// Peak learning rate (after warm-up; before linear scaling when `linear_scaling` is on).
  double lr = 0.1;
  /// When true, the peak learning rate follows the global batch by `lr_scaling_rule` from
  /// lr_reference_batch (the key's name is the rule it first had).
  bool linear_scaling = false;
  /// How `linear_scaling` scales the learning rate: "linear", lr * global batch / lr_reference_batch (Goyal
  /// et al. 2017, which holds to about 8 k samples), or "sqrt", lr * sqrt(global batch /
  /// lr_reference_batch) (Krizhevsky 2014; Hoffer et al. 2017), which keeps SGD's noise scale and holds
  /// further without a layer-wise optimizer.
  std::string lr_scaling_rule = "linear";
  /// Global batch size at which `lr` was tuned; only used with `linear_scaling`.
  int lr_reference_batch = 256;
  /// Iterations of linear warm-up to the peak learning rate (from 0; from `lr` with linear_scaling, Goyal et
  /// al.'s gradual warm-up). With linear_scaling and no warm-up key given: min(5 epochs, half the run).
  int warmup_iterations = 0;
  /// The warm-up in epochs instead (0: given in iterations); derived into warmup_iterations at load.
  double warmup_epochs = 0.0;
  /// Decay after warm-up: constant | step | cosine.
  std::string lr_schedule = "constant";
  /// Iterations at which a step schedule multiplies the learning rate by lr_step_gamma.
  std::vector<int> lr_step_milestones;
  /// The milestones in epochs instead (empty: given in iterations); derived into lr_step_milestones at load.
  std::vector<double> lr_step_milestone_epochs;
  /// Factor applied at each step milestone.
  double lr_step_gamma = 0.1;
  /// Learning rate a cosine schedule decays to at the last iteration.
  double lr_min = 0.0;
  /// SGD momentum coefficient in [0, 1).
  double momentum = 0.9;
  /// Nesterov momentum instead of heavy-ball.
  bool nesterov = false;
  /// L2 weight decay coefficient.
  double weight_decay = 0.0;
  /// sgd | lars: LARS (You, Gitman, Ginsburg 2017) scales each weight tensor's step by its trust ratio
  /// lars_eta ||w|| / (||g|| + weight_decay ||w||); biases and batch-norm parameters step as with sgd.
  std::string optimizer = "sgd";
  /// LARS's trust coefficient eta.
  double lars_eta = 0.001;
  /// How the training set is split across replicas: iid | dirichlet.
  std::string partition = "iid";
  /// Concentration of the Dirichlet label distribution per replica; smaller is more heterogeneous.
  double dirichlet_alpha = 0.5;
  /// Metrics are computed every this many iterations.
  int eval_every = 50;
  /// The same in epochs instead (0: given in iterations); derived into eval_every (at least 1) at load.
  double eval_every_epochs = 0.0;
  /// Test samples used per evaluation of the averaged model; 0 means the whole test set.
  int eval_samples = 0;
  /// Test samples (a fixed subset) on which every replica is evaluated; kept small so N = 1008 stays cheap.
  int replica_eval_samples = 256;
  /// Hidden layer widths of the mlp model.
  std::vector<int> mlp_hidden = {64};

  friend bool operator==(const TrainConfig&, const TrainConfig&) = default;
};

/// [algorithm]: how replicas are kept in agreement.
struct AlgorithmConfig {
  /// centralized (all-reduce every iteration) | dpsgd (gossip with neighbours).
  std::string kind = "dpsgd";
  /// A graph or graph policy name (ring, torus, exponential, ada, ...), validated by the topology library.
  std::string graph = "exponential";
  /// Torus side lengths; empty lets the topology library choose a near-square shape.
  std::vector<int> torus_shape;
  /// Neighbours per node for graphs with a free degree; 0 means the graph's own default.
  int degree = 0;
  /// Edge probability of an erdos-renyi graph.
  double probability = 0.1;
  /// Periodic global averaging: every this many iterations the parameters are averaged globally; 0: never.
  int global_every = 0;
  /// graph = "switch": the stages' graphs, comma-separated ("allreduce", "global-average" allowed).
  std::string switch_graphs = "exponential,one-peer-exponential";
  /// graph = "switch": the iteration at which each stage starts (the first is 0).
  std::vector<int> switch_at = {0, 250};
  /// graph = "ada": the ladder from sparse to dense, comma-separated: "<exchange>:<H>" (local steps, or
  /// gossip on a graph kind, between global averages of the parameters every H iterations) and
  /// "global-average" (every iteration: D-PSGD on the complete graph at the cost of an all-reduce).
  std::string ada_ladder = "local:2,global-average";
  /// graph = "ada": below this spread ratio (consensus distance before a global average over the one-step
  /// spread) Ada goes sparser.
  double ada_low = 2.5;
  /// graph = "ada": above this spread ratio Ada goes denser.
  double ada_high = 5.0;
  /// graph = "ada": global averages between two measurements of the one-step spread.
  int ada_probe_every = 8;
  /// graph = "ada": iterations on a rung before it may be left.
  int ada_min_dwell = 0;
  /// graph = "ada": consecutive measurements below ada_low before going sparser.
  int ada_patience = 2;
  /// graph = "ada": the rung of iteration 0: "sparsest", "densest" or one of the ladder's names.
  std::string ada_start = "densest";
  /// graph = "ada": drop every rung that a denser rung beats on simulated seconds per iteration on the
  /// configured [platform] (timing_model at timing_batch_per_gpu), so Ada optimises time to accuracy.
  bool ada_cost_aware = false;
  /// graph = "ada", cost-aware: the fraction of the cheapest denser rung's seconds per iteration a rung must
  /// save to be kept. Sparser rungs cost iterations (local steps between averages every other iteration
  /// took 0.96-1.10x centralized training's iterations to its accuracy with shared momentum, 1.12-1.48x
  /// without), so a rung that saves less than that loses time even though each of its iterations is cheaper.
  double ada_min_saving = 0.10;
  /// graph = "ada": at every global average, every replica's momentum becomes the shared momentum rebuilt
  /// from the averaged parameters' displacement since the previous average (no bytes sent), instead of its
  /// own. Local momentum buffers drift apart between averages and spread the replicas after every one.
  bool ada_shared_momentum = false;

  friend bool operator==(const AlgorithmConfig&, const AlgorithmConfig&) = default;
};

/// [platform]: the machine on which time is simulated.
struct PlatformConfig {
  /// frontier | summit | dgx-h100 | dgx-h100-campus | commodity | custom, or the path of a calibration file
  /// (.toml or .json).
  std::string preset = "frontier";
  /// Model profile whose compute and communication are timed: mlp | lenet | resnet20 | resnet50.
  std::string timing_model = "resnet50";
  /// Per-GPU batch used for the compute time.
  int timing_batch_per_gpu = 32;
  /// GPUs per node; 0 keeps the preset's value (required > 0 for custom).
  int gpus_per_node = 0;
  /// Effective compute rate of one GPU in FLOP/s; 0 keeps the preset's value (required > 0 for custom).
  double gpu_flops_per_s = 0.0;
  /// The rate for a timing model that computes in bf16 / fp16; 0 keeps the preset's (gpu_flops_per_s).
  double gpu_flops_per_s_bf16 = 0.0;
  double gpu_flops_per_s_fp16 = 0.0;
  /// Bandwidth between GPUs of one node in bytes/s; 0 keeps the preset's value (required > 0 for custom).
  double intra_node_bandwidth_Bps = 0.0;
  /// Latency between GPUs of one node in seconds; 0 keeps the preset's value (required > 0 for custom).
  double intra_node_latency_s = 0.0;
  /// Bandwidth of one NIC in bytes/s; 0 keeps the preset's value (required > 0 for custom).
  double nic_bandwidth_Bps = 0.0;
  /// Latency of a NIC in seconds (crossed leaving and entering a node); 0 keeps the preset's value (required
  /// > 0 for custom).
  double nic_latency_s = 0.0;
  /// NICs per node; 0 keeps the preset's value (custom: 1).
  int nics_per_node = 0;
  /// Switch fabric between the nodes: star | fat-tree | dragonfly | torus | multi-building; empty keeps the
  /// preset's (custom: fat-tree).
  std::string fabric;
  /// Bandwidth of every fabric link in bytes/s; 0 keeps the preset's value (custom: the node's NICs together,
  /// a non-blocking fabric).
  double switch_bandwidth_Bps = 0.0;
  /// Latency of one fabric hop in seconds; 0 keeps the preset's value (custom: none).
  double switch_latency_s = 0.0;
  /// Nodes per leaf switch (fat-tree) or per router (dragonfly); 0 keeps the preset's value (custom: 16).
  int nodes_per_switch = 0;
  /// Multi-building fabric: buildings the nodes are spread over; 0 keeps the preset's value (custom: 1).
  int buildings = 0;
  /// Multi-building fabric: one building's uplink to the others in bytes/s; 0 keeps the preset's value.
  double inter_building_bandwidth_Bps = 0.0;
  /// Multi-building fabric: latency of one building's uplink in seconds (a message between buildings crosses
  /// two); 0 keeps the preset's value.
  double inter_building_latency_s = 0.0;
  /// Fixed seconds per iteration besides the FLOPs; 0 keeps the preset's value (custom: none).
  double iteration_overhead_s = 0.0;
  /// Achieved fraction of the GPU ports' line rate, in (0, 1]; 0 keeps the preset's value (custom: 1).
  double intra_node_efficiency = 0.0;
  /// Achieved fraction of the NICs' and fabric links' line rate, in (0, 1]; 0 keeps the preset's (custom: 1).
  double network_efficiency = 0.0;
  /// Start of every collective and gossip round in seconds; 0 keeps the preset's value (custom: none).
  double collective_latency_s = 0.0;
  /// The bulk protocol's handshake per all-reduce step in seconds; 0 keeps the preset's value (custom: none).
  double bulk_step_latency_s = 0.0;
  /// In-switch reduction (NVLS): its achieved fraction of the GPU port's line rate; 0 keeps the preset's
  /// value (custom: none).
  double nvls_efficiency = 0.0;
  double collnet_efficiency = 0.0;
  /// A GPU's compute in a multi-GPU job over its compute alone, >= 1; 0 keeps the preset's value (1: none).
  double multi_gpu_slowdown = 0.0;
  /// Coefficient of variation of each GPU's per-iteration compute (lognormal, mean 1); 0: none.
  double compute_jitter_cv = 0.0;
  /// Probability that a GPU's iteration is also slowed by compute_tail_factor; 0: none.
  double compute_tail_probability = 0.0;
  /// See compute_tail_probability, >= 1; 0 keeps the preset's value (1).
  double compute_tail_factor = 0.0;
  /// GPUs persistently slowed by straggler_factor (a choice seeded by the config's seed); 0: none.
  int stragglers = 0;
  /// See stragglers, >= 1; 0 keeps the preset's value (1).
  double straggler_factor = 0.0;
  /// A measured all-reduce: latency in seconds; 0 keeps the preset's value (none: simulated).
  double allreduce_latency_s = 0.0;
  /// A measured all-reduce: bytes/s; 0 keeps the preset's value (none: simulated over the links).
  double allreduce_bandwidth_Bps = 0.0;
  /// All-reduce of centralized training and global averages: ring | hierarchical | tree | nvls | collnet |
  /// auto (per size, the fastest the platform has).
  std::string allreduce = "auto";
  /// Gradient bucket in bytes, all-reduced while the backward pass runs; 0: the whole gradient after it.
  int bucket_bytes = 0;

  friend bool operator==(const PlatformConfig&, const PlatformConfig&) = default;
};

/// A whole experiment: what is trained, how replicas agree, and where time is simulated.
struct ExperimentConfig {
  /// Run name; letters, digits, '.', '_' and '-' so that it can name a directory.
  std::string name = "experiment";
  /// Free text kept with the results.
  std::string description;
  /// Seed of every random choice (initialisation, data order, partition, random graphs).
  std::uint64_t seed = 1;
  /// [train] section.
  TrainConfig train;
  /// [algorithm] section.
  AlgorithmConfig algorithm;
  /// [platform] section.
  PlatformConfig platform;

  friend bool operator==(const ExperimentConfig&, const ExperimentConfig&) = default;
};

/// How much of a config load_config checks.
enum class Validation {
  full,         ///< every key, cross-key rule and what setup code would refuse (graph, platform, shards)
  keys_only,    ///< every key and cross-key rule; for a sweep's base, which its grid completes
  timing_only,  ///< as full, less the data set's checks: a timing-only run reads no data
};

/// Parses, overrides and validates a TOML config; throws ConfigError naming `source_name` and the key.
///
/// Each override is `section.key=value` (or `key=value` for a top-level key); the value is read as a TOML
/// value, and a bare word that is not valid TOML as a string. Overrides are applied before validation, so
/// an override of an unknown key is rejected like a key in the file. Full validation also builds, running
/// nothing, what `dbench simulate` and `train` build (check_setup), so that a config it accepts runs.
ExperimentConfig load_config(std::string_view toml_text, std::span<const std::string> overrides = {},
                             std::string_view source_name = "<config>",
                             Validation validation = Validation::full);

/// Reads and loads a config file; its path is the source name of every error.
ExperimentConfig load_config_file(const std::filesystem::path& path,
                                  std::span<const std::string> overrides = {},
                                  Validation validation = Validation::full);

/// Largest file the loader reads (configs, sweep files, calibration files): far above any real one.
inline constexpr std::size_t kMaxConfigBytes = models::kMaxInputFileBytes;

/// The text of a file the loader reads, `what` naming it in errors ("config", "sweep config"); throws
/// ConfigError naming the path when it is not a regular file, cannot be read or exceeds kMaxConfigBytes.
std::string read_config_text(const std::filesystem::path& path, std::string_view what);

/// Checks ranges, cross-key rules and what setup code would refuse (graph, platform, shards) of a config
/// built in code; throws ConfigError naming the key.
void validate(const ExperimentConfig& config, std::string_view source_name = "<config>");

/// The fully resolved config, every key included, as TOML that load_config reads back to an equal value.
std::string to_toml(const ExperimentConfig& config);

/// Samples of one iteration over all replicas: workers x batch_per_worker.
std::int64_t global_batch(const TrainConfig& train);

/// Peak learning rate after the linear scaling rule (equal to `lr` when the rule is off).
double peak_lr(const TrainConfig& train);

/// The learning rate warm-up starts from: `lr` under linear scaling when that is below the peak (Goyal et
/// al.'s gradual warm-up), else 0.
double warmup_start_lr(const TrainConfig& train);

/// Samples in the training split of the configured data set, each of its train.augment_copies views of an
/// image counted; nullopt for imagenet-folder, whose size is the folder's.
std::optional<std::int64_t> train_samples(const TrainConfig& train);

/// Iterations that make `epochs` passes over `samples` training samples at the configured global batch:
/// ceil(epochs * samples / (workers * batch_per_worker)).
std::int64_t iterations_for_epochs(const TrainConfig& train, double epochs, std::int64_t samples);

/// The warm-up the linear scaling rule gets when no warm-up key is given (Goyal et al.: 5 epochs, here at
/// most half the run); 0 without linear scaling, when the global batch is not above lr_reference_batch, or
/// when the data set's size is unknown.
int default_warmup_iterations(const TrainConfig& train);

/// The [train] keys that load_config derived from another (iterations from epochs, ...), each with the key it
/// came from: ("train.iterations", "train.epochs"), ...
std::vector<std::pair<std::string, std::string>> derived_train_keys(const TrainConfig& train);

}  // namespace dbench::experiments
