// Errors thrown by the numerics on virtual replicas; each message names the argument and what to change. An
// error about a run input carries it as models::RunInput (input()), and the command layer names the key.
#pragma once

#include <stdexcept>
#include <string>

#include "models/errors.hpp"

namespace dbench::core {

using models::RunInput;

/// Buffers, views or layouts whose shapes do not fit together (replica count, parameter count, batch size).
class ShapeError : public std::invalid_argument, public models::InputFault {
 public:
  /// An error about no single run input.
  explicit ShapeError(const std::string& message) : std::invalid_argument(message), InputFault({}, message) {}
  /// An error about `input`; what() is models::input_message(input, reason).
  ShapeError(RunInput input, const std::string& reason)
      : std::invalid_argument(models::input_message(input, reason)), InputFault(input, reason) {}
};

/// A mixing matrix in compressed rows that is malformed (offsets not increasing, a source out of range).
class MixingError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

/// A hyper-parameter or input value out of its range (negative momentum, a label outside the classes).
class ValueError : public std::invalid_argument, public models::InputFault {
 public:
  /// An error about no single run input.
  explicit ValueError(const std::string& message) : std::invalid_argument(message), InputFault({}, message) {}
  /// An error about `input`; what() is models::input_message(input, reason).
  ValueError(RunInput input, const std::string& reason)
      : std::invalid_argument(models::input_message(input, reason)), InputFault(input, reason) {}
};

/// Training produced a NaN or infinite loss; the run stops (a checkpoint already written is kept). Its input
/// is the learning rate: what() is the reason and the advice to lower it.
class DivergenceError : public std::runtime_error, public models::InputFault {
 public:
  /// `reason` says where the loss stopped being finite.
  explicit DivergenceError(const std::string& reason)
      : std::runtime_error(reason + "; lower the learning rate"), InputFault(RunInput::lr, reason) {}
};

}  // namespace dbench::core
