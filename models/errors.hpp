#pragma once

#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

namespace dbench::models {

/// The run input an error is about, named for what it is and not for a config key or a flag: the command
/// layer names the key (the way topology's GraphInput is named).
enum class RunInput {
  model,             ///< the model trained
  dataset,           ///< the data set's name
  data_dir,          ///< the folder a data set is read from
  workers,           ///< the number of replicas (workers)
  batch_per_worker,  ///< each replica's batch size
  augment_copies,    ///< the views of each training image
  eval_every,        ///< the iterations between evaluations
  lr,                ///< the learning rate
};

/// The neutral name of an input ("workers", "batch per worker"), with no config section.
std::string_view run_input_name(RunInput input) noexcept;

/// What an error says about a run input: which one is at fault, if one is, and why, in words that name no
/// config key. Errors of models/, core/ and runtime/ carry it next to their standard exception base.
class InputFault {
 public:
  virtual ~InputFault();

  /// The input at fault; empty when the error is about no single input.
  std::optional<RunInput> input() const noexcept { return input_; }
  /// The reason alone, for callers that name the input themselves; the whole message when input() is empty.
  const std::string& reason() const noexcept { return reason_; }

 protected:
  InputFault(std::optional<RunInput> input, std::string reason);
  InputFault(const InputFault&) = default;
  InputFault& operator=(const InputFault&) = default;

 private:
  std::optional<RunInput> input_;
  std::string reason_;
};

/// "name: reason", the name from run_input_name: the message of an error about `input`.
std::string input_message(RunInput input, const std::string& reason);

/// A model specification that cannot be built (unknown name, impossible input shape).
class ModelError : public std::invalid_argument, public InputFault {
 public:
  /// An error about no single run input.
  explicit ModelError(const std::string& message) : std::invalid_argument(message), InputFault({}, message) {}
  /// An error about `input`; what() is input_message(input, reason).
  ModelError(RunInput input, const std::string& reason)
      : std::invalid_argument(input_message(input, reason)), InputFault(input, reason) {}
};

/// A data set that cannot be read: missing file, wrong magic number, truncated or inconsistent contents.
class DataError : public std::runtime_error, public InputFault {
 public:
  /// An error about no single run input.
  explicit DataError(const std::string& message) : std::runtime_error(message), InputFault({}, message) {}
  /// An error about `input`; what() is input_message(input, reason).
  DataError(RunInput input, const std::string& reason)
      : std::runtime_error(input_message(input, reason)), InputFault(input, reason) {}
};

/// A partition or sampler request that cannot be met (batch larger than a shard, bad alpha, no workers).
class PartitionError : public std::invalid_argument, public InputFault {
 public:
  /// An error about no single run input.
  explicit PartitionError(const std::string& message)
      : std::invalid_argument(message), InputFault({}, message) {}
  /// An error about `input`; what() is input_message(input, reason).
  PartitionError(RunInput input, const std::string& reason)
      : std::invalid_argument(input_message(input, reason)), InputFault(input, reason) {}
};

}  // namespace dbench::models
