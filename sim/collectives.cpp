#include "sim/collectives.hpp"

#include <algorithm>
#include <string>

#include "sim/errors.hpp"
#include "sim/parallel.hpp"

namespace dbench::sim {
namespace {

// Columns per block: the block's slices of all replicas stay in L2 between the summing and the writing pass.
constexpr std::size_t kBlockCols = 256;

/// mean[0 .. c1 - c0) = column means of columns [c0, c1).
void column_mean(ConstReplicaView v, std::size_t c0, std::size_t c1, double* acc, float* mean) {
  const std::size_t len = c1 - c0;
  std::fill_n(acc, len, 0.0);
  for (std::size_t i = 0; i < v.rows; ++i) {
    const float* x = v.row_data(i) + c0;
    for (std::size_t j = 0; j < len; ++j) {
      acc[j] += static_cast<double>(x[j]);
    }
  }
  const double inv = 1.0 / static_cast<double>(v.rows);
  for (std::size_t j = 0; j < len; ++j) {
    mean[j] = static_cast<float>(acc[j] * inv);
  }
}

template <class Body>
void for_column_blocks(unsigned threads, std::size_t cols, Body&& body) {
  const std::size_t blocks = (cols + kBlockCols - 1) / kBlockCols;
  parallel_for(threads, blocks, [&](std::size_t b0, std::size_t b1) {
    double acc[kBlockCols];
    float mean[kBlockCols];
    for (std::size_t b = b0; b < b1; ++b) {
      const std::size_t c0 = b * kBlockCols;
      body(c0, std::min(cols, c0 + kBlockCols), acc, mean);
    }
  });
}

}  // namespace

void allreduce_mean(ReplicaView values, unsigned threads) {
  if (values.rows == 0) {
    return;
  }
  for_column_blocks(threads, values.cols, [&](std::size_t c0, std::size_t c1, double* acc, float* mean) {
    column_mean(values, c0, c1, acc, mean);
    for (std::size_t i = 0; i < values.rows; ++i) {
      std::copy_n(mean, c1 - c0, values.row_data(i) + c0);
    }
  });
}

void replica_average(ConstReplicaView values, std::span<float> average, unsigned threads) {
  if (average.size() != values.cols) {
    throw ShapeError("replica_average: output has " + std::to_string(average.size()) +
                     " elements, replicas have " + std::to_string(values.cols));
  }
  if (values.rows == 0) {
    throw ShapeError("replica_average: no replicas to average");
  }
  for_column_blocks(threads, values.cols, [&](std::size_t c0, std::size_t c1, double* acc, float* mean) {
    column_mean(values, c0, c1, acc, mean);
    std::copy_n(mean, c1 - c0, average.data() + c0);
  });
}

}  // namespace dbench::sim
