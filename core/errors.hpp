// Errors thrown by the numerics on virtual replicas; each message names the argument and what to change.
#pragma once

#include <stdexcept>

namespace dbench::core {

/// Buffers, views or layouts whose shapes do not fit together (replica count, parameter count, batch size).
class ShapeError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

/// A mixing matrix in compressed rows that is malformed (offsets not increasing, a source out of range).
class MixingError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

/// A hyper-parameter or input value out of its range (negative momentum, a label outside the classes).
class ValueError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

/// Training produced a NaN or infinite loss; the run stops (a checkpoint already written is kept).
class DivergenceError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace dbench::core
