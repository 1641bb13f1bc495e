#pragma once

#include <stdexcept>

namespace dbench::models {

/// A model specification that cannot be built (unknown name, impossible input shape).
class ModelError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

/// A data set that cannot be read: missing file, wrong magic number, truncated or inconsistent contents.
class DataError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// A partition or sampler request that cannot be met (batch larger than a shard, bad alpha, no workers).
class PartitionError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

}  // namespace dbench::models
