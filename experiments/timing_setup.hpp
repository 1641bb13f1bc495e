// Turns the [platform] section of a config into the simulator's timing inputs.
#pragma once

#include <filesystem>
#include <string>

#include "experiments/config.hpp"
#include "models/model_profile.hpp"
#include "sim/platform.hpp"
#include "sim/timing.hpp"

namespace dbench::experiments {

/// The machine of [platform]: the preset or calibration file, with every key set to a non-zero value on top;
/// throws sim::PlatformError naming the key, or ConfigError for an unreadable calibration file.
sim::PlatformSpec platform_spec(const ExperimentConfig& config);

/// Reads a calibration file (.toml or .json): `base` names a preset (default "custom"), every other key is
/// a [platform] key (gpu_flops_per_s, nic_bandwidth_Bps, fabric, ...) that replaces the base's value.
/// Its `fitted_model` and `fitted_batch_per_gpu` say what the step was fitted to; they time nothing.
sim::PlatformSpec read_calibration(const std::filesystem::path& path);

/// Where platform.preset is a calibration file fitted to another model (`fitted_model`) or batch
/// (`fitted_batch_per_gpu`) than platform.timing_model and platform.timing_batch_per_gpu: one line saying
/// which, that the step is then read off constants measured elsewhere, and the calibration that would measure
/// it. Empty where they agree or the file does not say.
std::string calibration_caveat(const ExperimentConfig& config);

/// The model whose compute and communication are timed: platform.timing_model at its usual input (ResNet-50
/// on 224x224x3 with 1000 classes, ResNet-20 and LeNet on their data sets' shapes, the MLP of [train]).
models::ModelProfile timing_profile(const ExperimentConfig& config);

/// All-reduce algorithm and buckets of [platform]; fidelity and SimGrid options come from the command line.
sim::TimingOptions timing_options(const ExperimentConfig& config);

/// Everything the timing needs from a config: platform, GPUs (train.workers), the timed model and batch, the
/// all-reduce options; fidelity and SimGrid options stay at their defaults for the caller to set.
sim::TimingSpec make_timing_spec(const ExperimentConfig& config);

}  // namespace dbench::experiments
