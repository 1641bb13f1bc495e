#include "core/replica_metrics.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "core/errors.hpp"
#include "core/parallel.hpp"

namespace dbench::core {
namespace {

// A segment is the unit of work and of partial sums: up to kSegmentCols columns of one tensor. Segments
// depend only on the layout, so the reduction order (segment order) does not depend on the thread count.
constexpr std::size_t kSegmentCols = 4096;
// Independent partial sums per row, so that the compiler can vectorise double reductions without reordering.
constexpr std::size_t kLanes = 8;

struct Segment {
  std::size_t tensor;
  std::size_t c0;
  std::size_t c1;
};

struct SegmentSums {
  std::vector<double> sumsq;  // per replica: sum of x^2 over the segment
  double distance = 0.0;      // sum over replicas and columns of (x - mean)^2
};

/// Sum of squares and of squared distances to `mean` over one row slice, in kLanes fixed lanes.
void row_sums(const float* x, const double* mean, std::size_t len, double& sumsq, double& dist) {
  double sq[kLanes] = {};
  double ds[kLanes] = {};
  std::size_t j = 0;
  for (; j + kLanes <= len; j += kLanes) {
    for (std::size_t l = 0; l < kLanes; ++l) {
      const auto v = static_cast<double>(x[j + l]);
      const double d = v - mean[j + l];
      sq[l] += v * v;
      ds[l] += d * d;
    }
  }
  for (std::size_t l = 0; j < len; ++j, ++l) {
    const auto v = static_cast<double>(x[j]);
    const double d = v - mean[j];
    sq[l] += v * v;
    ds[l] += d * d;
  }
  double s = 0.0;
  double t = 0.0;
  for (std::size_t l = 0; l < kLanes; ++l) {
    s += sq[l];
    t += ds[l];
  }
  sumsq += s;
  dist += t;
}

}  // namespace

ReplicaMetrics compute_replica_metrics(ConstReplicaView params, const ParamLayout& layout, unsigned threads) {
  if (layout.size() != params.cols) {
    throw ShapeError("compute_replica_metrics: layout has " + std::to_string(layout.size()) +
                     " elements, replicas have " + std::to_string(params.cols));
  }
  if (params.rows == 0) {
    throw ShapeError("compute_replica_metrics: no replicas");
  }
  const std::size_t n = params.rows;
  const std::size_t t_count = layout.tensor_count();
  std::vector<Segment> segments;
  for (std::size_t t = 0; t < t_count; ++t) {
    const TensorSlice& s = layout.tensors()[t];
    for (std::size_t c = s.offset; c < s.offset + s.elements; c += kSegmentCols) {
      segments.push_back({t, c, std::min(s.offset + s.elements, c + kSegmentCols)});
    }
  }
  // Columns per chunk: N slices of a chunk fit in ~1 MB of L2 for the second (distance) pass.
  const std::size_t chunk =
      std::clamp<std::size_t>((std::size_t{1} << 20) / (n * sizeof(float)), 16, kSegmentCols);

  ReplicaMetrics m;
  m.replicas = n;
  m.tensors = t_count;
  m.average.assign(params.cols, 0.0f);
  std::vector<SegmentSums> sums(segments.size());
  parallel_for_each_index(threads, segments.size(), [&](std::size_t s) {
    SegmentSums& out = sums[s];
    out.sumsq.assign(n, 0.0);
    std::vector<double> mean(chunk);
    for (std::size_t c0 = segments[s].c0; c0 < segments[s].c1; c0 += chunk) {
      const std::size_t len = std::min(chunk, segments[s].c1 - c0);
      std::fill_n(mean.begin(), len, 0.0);
      for (std::size_t i = 0; i < n; ++i) {
        const float* x = params.row_data(i) + c0;
        for (std::size_t j = 0; j < len; ++j) {
          mean[j] += static_cast<double>(x[j]);
        }
      }
      for (std::size_t j = 0; j < len; ++j) {
        mean[j] /= static_cast<double>(n);
        m.average[c0 + j] = static_cast<float>(mean[j]);
      }
      for (std::size_t i = 0; i < n; ++i) {
        row_sums(params.row_data(i) + c0, mean.data(), len, out.sumsq[i], out.distance);
      }
    }
  });

  std::vector<double> sumsq(n * t_count, 0.0);
  m.consensus_per_tensor.assign(t_count, 0.0);
  for (std::size_t s = 0; s < segments.size(); ++s) {
    const std::size_t t = segments[s].tensor;
    for (std::size_t i = 0; i < n; ++i) {
      sumsq[i * t_count + t] += sums[s].sumsq[i];
    }
    m.consensus_per_tensor[t] += sums[s].distance;
  }
  m.norms.resize(n * t_count);
  for (std::size_t k = 0; k < sumsq.size(); ++k) {
    m.norms[k] = std::sqrt(sumsq[k]);
  }
  m.norm_variance.assign(t_count, 0.0);
  for (std::size_t t = 0; t < t_count; ++t) {
    double mean_norm = 0.0;
    for (std::size_t i = 0; i < n; ++i) {
      mean_norm += m.norms[i * t_count + t];
    }
    mean_norm /= static_cast<double>(n);
    double var = 0.0;
    for (std::size_t i = 0; i < n; ++i) {
      const double d = m.norms[i * t_count + t] - mean_norm;
      var += d * d;
    }
    m.norm_variance[t] = var / static_cast<double>(n);
    m.consensus_per_tensor[t] /= static_cast<double>(n);
    m.consensus_distance += m.consensus_per_tensor[t];
  }
  return m;
}

}  // namespace dbench::core
