#include "core/collectives.hpp"

#include <algorithm>
#include <string>
#include <vector>

#include "core/errors.hpp"
#include "core/parallel.hpp"
#include "core/sgd.hpp"
#include "core/simd.hpp"

namespace dbench::core {
namespace {

// Columns per block: the block's slices of all replicas stay in L2 between the summing and the writing pass.
constexpr std::size_t kBlockCols = 256;
// Columns per block of the fused all-reduce and step, which re-reads nothing but the block's mean: long row
// slices (8 KB) stream at close to copy bandwidth where short ones do not.
constexpr std::size_t kStepBlockCols = 2048;

/// acc[j] += x[j] in double.
void accumulate(const float* x, double* acc, std::size_t len) {
  for (std::size_t j = 0; j < len; ++j) {
    acc[j] += static_cast<double>(x[j]);
  }
}

#if defined(DBENCH_SIM_X86)

/// accumulate() eight doubles at a time: the same exact conversions and additions, so the same sums.
DBENCH_AVX512 void accumulate_avx512(const float* x, double* acc, std::size_t len) {
  std::size_t j = 0;
  for (; j + 8 <= len; j += 8) {
    _mm512_storeu_pd(acc + j,
                     _mm512_add_pd(_mm512_loadu_pd(acc + j), _mm512_cvtps_pd(_mm256_loadu_ps(x + j))));
  }
  for (; j < len; ++j) {
    acc[j] += static_cast<double>(x[j]);
  }
}

#endif

/// mean[0 .. c1 - c0) = column means of columns [c0, c1), summed in replica order.
void column_mean(ConstReplicaView v, std::size_t c0, std::size_t c1, bool avx512, double* acc, float* mean) {
  const std::size_t len = c1 - c0;
  std::fill_n(acc, len, 0.0);
  for (std::size_t i = 0; i < v.rows; ++i) {
#if defined(DBENCH_SIM_X86)
    if (avx512) {
      accumulate_avx512(v.row_data(i) + c0, acc, len);
      continue;
    }
#endif
    accumulate(v.row_data(i) + c0, acc, len);
  }
  const auto n = static_cast<double>(v.rows);
  for (std::size_t j = 0; j < len; ++j) {
    mean[j] = static_cast<float>(acc[j] / n);
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
  const bool avx512 = cpu_has_avx512f();
  for_column_blocks(threads, values.cols, [&](std::size_t c0, std::size_t c1, double* acc, float* mean) {
    column_mean(values, c0, c1, avx512, acc, mean);
    for (std::size_t i = 0; i < values.rows; ++i) {
      std::copy_n(mean, c1 - c0, values.row_data(i) + c0);
    }
  });
}

void allreduce_mean_step(Sgd& sgd, double lr, ReplicaView params, ConstReplicaView grads,
                         ReplicaView momentum, unsigned threads) {
  const bool use_momentum = sgd.config().momentum != 0.0;
  if (grads.rows != params.rows || grads.cols != params.cols ||
      (use_momentum && (momentum.rows != params.rows || momentum.cols != params.cols))) {
    throw ShapeError("allreduce_mean_step: parameters are " + std::to_string(params.rows) + "x" +
                     std::to_string(params.cols) + ", gradients " + std::to_string(grads.rows) + "x" +
                     std::to_string(grads.cols) + ", momentum " + std::to_string(momentum.rows) + "x" +
                     std::to_string(momentum.cols));
  }
  if (sgd.config().lars && params.rows > 0) {
    // LARS's ratio needs each tensor's whole mean gradient before any of it steps: averaged, then stepped.
    std::vector<float> mean(params.cols);
    replica_average(grads, mean, threads);
    parallel_for(threads, params.rows, [&](std::size_t r0, std::size_t r1) {
      for (std::size_t i = r0; i < r1; ++i) {
        sgd.step_replica(lr, params.row(i), mean, use_momentum ? momentum.row(i) : std::span<float>());
      }
    });
  } else if (params.rows > 0) {
    const bool avx512 = cpu_has_avx512f();
    const std::size_t blocks = (params.cols + kStepBlockCols - 1) / kStepBlockCols;
    parallel_for(threads, blocks, [&](std::size_t b0, std::size_t b1) {
      std::vector<double> acc(kStepBlockCols);
      std::vector<float> mean(kStepBlockCols);
      for (std::size_t b = b0; b < b1; ++b) {
        const std::size_t c0 = b * kStepBlockCols;
        const std::size_t len = std::min(params.cols, c0 + kStepBlockCols) - c0;
        column_mean(grads, c0, c0 + len, avx512, acc.data(), mean.data());
        const std::span<const float> g(mean.data(), len);
        for (std::size_t i = 0; i < params.rows; ++i) {
          sgd.step_replica(lr, params.row(i).subspan(c0, len), g,
                           use_momentum ? momentum.row(i).subspan(c0, len) : std::span<float>());
        }
      }
    });
  }
  sgd.finish_step();
}

void replica_average(ConstReplicaView values, std::span<float> average, unsigned threads) {
  if (average.size() != values.cols) {
    throw ShapeError("replica_average: output has " + std::to_string(average.size()) +
                     " elements, replicas have " + std::to_string(values.cols));
  }
  if (values.rows == 0) {
    throw ShapeError("replica_average: no replicas to average");
  }
  const bool avx512 = cpu_has_avx512f();
  for_column_blocks(threads, values.cols, [&](std::size_t c0, std::size_t c1, double* acc, float* mean) {
    column_mean(values, c0, c1, avx512, acc, mean);
    std::copy_n(mean, c1 - c0, average.data() + c0);
  });
}

}  // namespace dbench::core
