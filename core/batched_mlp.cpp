#include "core/batched_mlp.hpp"

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "core/aligned_buffer.hpp"
#include "core/errors.hpp"
#include "core/parallel.hpp"
#include "core/row_gemm.hpp"
#include "core/sgd.hpp"

namespace dbench::core {
namespace {

// Evaluation walks the samples in chunks of this many rows; chunk sums are added in chunk order, so results
// do not depend on the thread count.
constexpr std::size_t kEvalRows = 256;

// train_shared() takes the samples of this many replicas (1.6 MB at batch 16 of 784 features) through one
// set of GEMMs; the chunks' gradients are summed in chunk order, so results do not depend on the thread
// count either.
constexpr std::size_t kSharedChunk = 32;

ParamLayout mlp_layout(const std::vector<std::size_t>& widths) {
  std::vector<std::pair<std::string, std::size_t>> tensors;
  for (std::size_t l = 1; l < widths.size(); ++l) {
    const std::string name = "fc" + std::to_string(l);
    tensors.emplace_back(name + ".weight", widths[l] * widths[l - 1]);
    tensors.emplace_back(name + ".bias", widths[l]);
  }
  return ParamLayout(tensors);
}

int blas_int(std::size_t v) {
  return static_cast<int>(v);
}

std::uint64_t next_random(std::uint64_t& state) {
  // splitmix64: a fixed, documented generator, so that an init seed means the same parameters everywhere.
  state += 0x9E3779B97F4A7C15ULL;
  std::uint64_t z = state;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

/// Features per sample of batches already gathered, inputs [N, batch, in] and labels [N, batch]; throws
/// ShapeError naming `what` when the sizes do not make whole batches.
std::size_t batch_features(std::span<const float> inputs, std::span<const std::int32_t> labels,
                           std::size_t batch, const char* what) {
  if (batch == 0 || labels.empty() || inputs.size() % labels.size() != 0 || labels.size() % batch != 0) {
    throw ShapeError(std::string(what) + ": " + std::to_string(inputs.size()) + " input values and " +
                     std::to_string(labels.size()) + " labels do not make batches of " +
                     std::to_string(batch));
  }
  return inputs.size() / labels.size();
}

}  // namespace

BatchFill contiguous_batches(std::span<const float> inputs, std::span<const std::int32_t> labels,
                             std::size_t batch) {
  const std::size_t in = batch_features(inputs, labels, batch, "contiguous_batches");
  return [inputs, labels, batch, in](std::size_t first, std::size_t count, float* x, std::int32_t* y) {
    if (count == 0) {
      return;
    }
    std::copy_n(inputs.data() + first * batch * in, count * batch * in, x);
    std::copy_n(labels.data() + first * batch, count * batch, y);
  };
}

BatchRows contiguous_batch_rows(std::span<const float> inputs, std::span<const std::int32_t> labels,
                                std::size_t batch) {
  const std::size_t in = batch_features(inputs, labels, batch, "contiguous_batch_rows");
  return
      [inputs, labels, batch, in](std::size_t first, std::size_t count, const float** rows, std::int32_t* y) {
        for (std::size_t k = first * batch; k < (first + count) * batch; ++k) {
          *rows++ = inputs.data() + k * in;
          *y++ = labels[k];
        }
      };
}

void use_single_threaded_blas() {
  if (openblas_get_num_threads() != 1) {
    openblas_set_num_threads(1);
  }
}

/// Per-thread activations and deltas, sized for `rows` samples.
struct BatchedMlp::Scratch {
  Scratch(const std::vector<std::size_t>& widths, std::size_t rows) {
    const std::size_t widest = *std::max_element(widths.begin() + 1, widths.end());
    for (std::size_t l = 1; l < widths.size(); ++l) {
      act.emplace_back(rows * widths[l]);
    }
    delta.resize(rows * widest);
    back.resize(rows * widest);
  }
  std::vector<std::vector<float>>
      act;                   // act[l - 1]: outputs of layer l (after ReLU, raw logits for the last)
  std::vector<float> delta;  // d loss / d pre-activation of the layer being differentiated
  std::vector<float> back;   // d loss / d input of that layer
};

/// One worker's buffers for a training call: activations for `samples` samples (as many as y holds), the
/// samples (or where they lie) and labels themselves, and `floats` more (a gradient, or chunk sums).
struct BatchedMlp::Workspace {
  Workspace(const std::vector<std::size_t>& widths, std::size_t samples, std::size_t floats, bool inputs)
      : scratch(widths, samples),
        x(inputs ? samples * widths.front() : 0),
        rows(inputs ? 0 : samples),
        y(samples),
        extra(floats) {}
  Scratch scratch;
  AlignedBuffer x;
  std::vector<const float*> rows;  // where the samples lie, when they are not copied to x
  std::vector<std::int32_t> y;
  AlignedBuffer extra;
};

/// Workspaces not in use. take() hands one out for the caller's use alone; the Lease gives it back.
class BatchedMlp::WorkspacePool {
 public:
  class Lease {
   public:
    Lease(WorkspacePool& pool, std::unique_ptr<Workspace> w) : pool_(pool), w_(std::move(w)) {}
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    ~Lease() { pool_.give_back(std::move(w_)); }
    Workspace& operator*() const { return *w_; }
    Workspace* operator->() const { return w_.get(); }

   private:
    WorkspacePool& pool_;
    std::unique_ptr<Workspace> w_;
  };

  /// A workspace for `rows` samples (with room for their inputs unless `inputs` is false) and at least
  /// `floats` extra floats, reused when one of that shape is free.
  Lease take(const std::vector<std::size_t>& widths, std::size_t rows, std::size_t floats,
             bool inputs = true) {
    const std::size_t input_floats = inputs ? rows * widths.front() : 0;
    {
      const std::lock_guard lock(mutex_);
      for (auto it = free_.begin(); it != free_.end(); ++it) {
        if ((*it)->y.size() == rows && (*it)->x.size() == input_floats && (*it)->extra.size() >= floats) {
          std::unique_ptr<Workspace> w = std::move(*it);
          free_.erase(it);
          return Lease(*this, std::move(w));
        }
      }
    }
    return Lease(*this, std::make_unique<Workspace>(widths, rows, floats, inputs));
  }

 private:
  // A few shapes (one per kind of call) times the thread count: more are dropped rather than kept.
  static constexpr std::size_t kMaxFree = 64;

  void give_back(std::unique_ptr<Workspace> w) noexcept {
    const std::lock_guard lock(mutex_);
    if (free_.size() < kMaxFree) {
      free_.push_back(std::move(w));
    }
  }

  std::mutex mutex_;
  std::vector<std::unique_ptr<Workspace>> free_;
};

BatchedMlp::BatchedMlp(std::vector<std::size_t> widths, unsigned threads)
    : widths_(std::move(widths)), threads_(threads), pool_(std::make_shared<WorkspacePool>()) {
  if (widths_.size() < 2) {
    throw ValueError("BatchedMlp: needs at least an input and an output width, got " +
                     std::to_string(widths_.size()) + " widths");
  }
  for (std::size_t w : widths_) {
    if (w == 0 || w > (std::size_t{1} << 24)) {
      throw ValueError("BatchedMlp: layer width " + std::to_string(w) + " out of range [1, 2^24]");
    }
  }
  layout_ = mlp_layout(widths_);
  for (const TensorSlice& t : layout_.tensors()) {
    (t.name.ends_with(".weight") ? weight_offset_ : bias_offset_).push_back(t.offset);
  }
}

double BatchedMlp::train_flops_per_sample() const noexcept {
  double flops = 0.0;
  for (std::size_t l = 1; l < widths_.size(); ++l) {
    const double mac = static_cast<double>(widths_[l] * widths_[l - 1]);
    // Forward and weight gradient everywhere; the input gradient is not needed for the first layer.
    flops += 2.0 * mac * (l == 1 ? 2.0 : 3.0);
  }
  return flops;
}

void BatchedMlp::init(std::span<float> params, std::uint64_t seed) const {
  check_params(params.size(), "BatchedMlp::init");
  std::uint64_t state = seed;
  for (std::size_t l = 1; l < widths_.size(); ++l) {
    const float bound = 1.0f / std::sqrt(static_cast<float>(widths_[l - 1]));
    auto fill = [&](std::size_t offset, std::size_t count) {
      for (std::size_t k = 0; k < count; ++k) {
        const float u = static_cast<float>(next_random(state) >> 40) * 0x1.0p-24f;
        params[offset + k] = bound * (2.0f * u - 1.0f);
      }
    };
    fill(weight_offset_[l - 1], widths_[l] * widths_[l - 1]);
    fill(bias_offset_[l - 1], widths_[l]);
  }
}

void BatchedMlp::check_params(std::size_t cols, const char* what) const {
  if (cols != layout_.size()) {
    throw ShapeError(std::string(what) + ": parameter vectors have " + std::to_string(cols) +
                     " elements, the MLP has " + std::to_string(layout_.size()));
  }
}

std::size_t BatchedMlp::check_samples(std::span<const float> inputs, std::span<const std::int32_t> labels,
                                      const char* what) const {
  const std::size_t m = labels.size();
  if (inputs.size() != m * widths_.front()) {
    throw ShapeError(std::string(what) + ": " + std::to_string(inputs.size()) + " input values for " +
                     std::to_string(m) + " labels of " + std::to_string(widths_.front()) + " features each");
  }
  check_labels(labels, what);
  return m;
}

void BatchedMlp::check_labels(std::span<const std::int32_t> labels, const char* what) const {
  const auto classes_i = static_cast<std::int64_t>(classes());
  for (std::size_t k = 0; k < labels.size(); ++k) {
    if (labels[k] < 0 || labels[k] >= classes_i) {
      throw ValueError(std::string(what) + ": label " + std::to_string(labels[k]) + " at sample " +
                       std::to_string(k) + " is outside [0, " + std::to_string(classes()) + ")");
    }
  }
}

void BatchedMlp::forward(const float* params, const float* x, std::size_t rows, Scratch& s,
                         const float* const* x_rows, const float* wt) const {
  const float* a = x;
  const std::size_t layers = widths_.size() - 1;
  for (std::size_t l = 1; l <= layers; ++l) {
    const std::size_t in = widths_[l - 1];
    const std::size_t out = widths_[l];
    float* z = s.act[l - 1].data();
    const float* bias = params + bias_offset_[l - 1];
    if (l == 1 && x_rows != nullptr) {
      rows_linear(x_rows, rows, in, wt, out, bias, z);
    } else {
      for (std::size_t r = 0; r < rows; ++r) {
        std::copy_n(bias, out, z + r * out);
      }
      // z = a W^T + b with W stored [out, in], as nn.Linear does.
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, blas_int(rows), blas_int(out), blas_int(in), 1.0f,
                  a, blas_int(in), params + weight_offset_[l - 1], blas_int(in), 1.0f, z, blas_int(out));
    }
    if (l < layers) {
      for (std::size_t k = 0; k < rows * out; ++k) {
        z[k] = std::max(z[k], 0.0f);
      }
    }
    a = z;
  }
}

void BatchedMlp::softmax_xent(const std::int32_t* labels, std::size_t first, std::size_t rows,
                              std::size_t mean_over, bool grad, Scratch& s, double& loss_sum,
                              std::size_t& correct) const {
  const std::size_t c = classes();
  const float* logits = s.act.back().data() + first * c;
  const float scale = 1.0f / static_cast<float>(mean_over);
  for (std::size_t r = 0; r < rows; ++r) {
    const float* z = logits + r * c;
    const auto y = static_cast<std::size_t>(labels[r]);
    const std::size_t top = static_cast<std::size_t>(std::max_element(z, z + c) - z);
    const float zmax = z[top];
    // The exponentials go where the gradient will be (or to a row of their own), so each is computed once.
    float* e = grad ? s.delta.data() + (first + r) * c : s.back.data();
    float sum = 0.0f;
    for (std::size_t k = 0; k < c; ++k) {
      e[k] = std::exp(z[k] - zmax);
      sum += e[k];
    }
    // log-sum-exp around the maximum, so that large logits do not overflow.
    loss_sum += static_cast<double>(zmax + std::log(sum) - z[y]);
    correct += top == y ? 1 : 0;
    if (grad) {
      for (std::size_t k = 0; k < c; ++k) {
        e[k] = e[k] / sum * scale;
      }
      e[y] -= scale;
    }
  }
}

void BatchedMlp::backward(const float* params, const float* x, std::size_t rows, Scratch& s, float* grads,
                          const float* const* x_rows, bool first_weight) const {
  for (std::size_t l = widths_.size() - 1; l >= 1; --l) {
    const std::size_t in = widths_[l - 1];
    const std::size_t out = widths_[l];
    const float* a = l == 1 ? x : s.act[l - 2].data();
    const float* delta = s.delta.data();
    // dW = delta^T a: [out, rows] x [rows, in].
    if (l == 1 && !first_weight) {
      // Left to the step (OuterGradient).
    } else if (l == 1 && x_rows != nullptr) {
      rows_weight_grad(x_rows, rows, delta, out, in, grads + weight_offset_[l - 1]);
    } else {
      cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, blas_int(out), blas_int(in), blas_int(rows), 1.0f,
                  delta, blas_int(out), a, blas_int(in), 0.0f, grads + weight_offset_[l - 1], blas_int(in));
    }
    float* db = grads + bias_offset_[l - 1];
    std::copy_n(delta, out, db);
    for (std::size_t r = 1; r < rows; ++r) {
      for (std::size_t k = 0; k < out; ++k) {
        db[k] += delta[r * out + k];
      }
    }
    if (l == 1) {
      break;
    }
    // d a = delta W: [rows, out] x [out, in]; then through the ReLU (a > 0 exactly where its input was > 0).
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, blas_int(rows), blas_int(in), blas_int(out), 1.0f,
                delta, blas_int(out), params + weight_offset_[l - 1], blas_int(in), 0.0f, s.back.data(),
                blas_int(in));
    for (std::size_t k = 0; k < rows * in; ++k) {
      s.delta[k] = a[k] > 0.0f ? s.back[k] : 0.0f;
    }
  }
}

void BatchedMlp::check_batch(ConstReplicaView params, std::span<const float> inputs,
                             std::span<const std::int32_t> labels, std::size_t batch,
                             std::span<BatchStats> stats, const char* what) const {
  check_params(params.cols, what);
  const std::size_t n = params.rows;
  if (batch == 0) {
    throw ShapeError(std::string(what) + ": batch must be at least 1");
  }
  if (labels.size() != n * batch || stats.size() != n) {
    throw ShapeError(std::string(what) + ": " + std::to_string(n) + " replicas of batch " +
                     std::to_string(batch) + " need " + std::to_string(n * batch) + " labels and " +
                     std::to_string(n) + " stats, got " + std::to_string(labels.size()) + " and " +
                     std::to_string(stats.size()));
  }
  check_samples(inputs, labels, what);
}

BatchStats BatchedMlp::train_replica(const float* params, const float* x, const std::int32_t* y,
                                     std::size_t batch, Scratch& s, float* grads, bool first_weight) const {
  forward(params, x, batch, s);
  double loss = 0.0;
  std::size_t correct = 0;
  softmax_xent(y, 0, batch, batch, true, s, loss, correct);
  backward(params, x, batch, s, grads, nullptr, first_weight);
  return {static_cast<float>(loss / static_cast<double>(batch)), static_cast<std::int32_t>(correct)};
}

void BatchedMlp::train_step(ConstReplicaView params, std::span<const float> inputs,
                            std::span<const std::int32_t> labels, std::size_t batch, ReplicaView grads,
                            std::span<BatchStats> stats) const {
  check_batch(params, inputs, labels, batch, stats, "BatchedMlp::train_step");
  if (grads.rows != params.rows || grads.cols != params.cols) {
    throw ShapeError("BatchedMlp::train_step: gradients are " + std::to_string(grads.rows) + "x" +
                     std::to_string(grads.cols) + ", parameters " + std::to_string(params.rows) + "x" +
                     std::to_string(params.cols));
  }
  use_single_threaded_blas();
  const std::size_t in = widths_.front();
  parallel_for(threads_, params.rows, [&](std::size_t r0, std::size_t r1) {
    const auto w = pool_->take(widths_, batch, params.cols);
    // Each gradient is built in cache and then written out past it: nothing reads it before the optimizer.
    float* grad = w->extra.data();
    for (std::size_t i = r0; i < r1; ++i) {
      stats[i] = train_replica(params.row_data(i), inputs.data() + i * batch * in, labels.data() + i * batch,
                               batch, w->scratch, grad);
      copy_past_cache(grads.row_data(i), grad, grads.cols);
    }
  });
}

void BatchedMlp::train_sgd_step(ReplicaView params, const BatchFill& fill, std::size_t batch, Sgd& sgd,
                                double lr, ReplicaView momentum, std::span<BatchStats> stats,
                                BlockedView stepped) const {
  check_params(params.cols, "BatchedMlp::train_sgd_step");
  if (batch == 0 || stats.size() != params.rows) {
    throw ShapeError("BatchedMlp::train_sgd_step: " + std::to_string(params.rows) +
                     " replicas need as many stats (got " + std::to_string(stats.size()) +
                     ") and a batch of at least 1");
  }
  const bool use_momentum = sgd.config().momentum != 0.0;
  if (use_momentum && (momentum.rows != params.rows || momentum.cols != params.cols)) {
    throw ShapeError("BatchedMlp::train_sgd_step: momentum buffers are " + std::to_string(momentum.rows) +
                     "x" + std::to_string(momentum.cols) + ", parameters " + std::to_string(params.rows) +
                     "x" + std::to_string(params.cols));
  }
  if (!std::isfinite(lr)) {
    throw ValueError("BatchedMlp::train_sgd_step: learning rate must be finite, got " + std::to_string(lr));
  }
  if (stepped.data != nullptr && (stepped.rows != params.rows || stepped.cols != params.cols)) {
    throw ShapeError("BatchedMlp::train_sgd_step: the stepped parameters' blocked matrix is " +
                     std::to_string(stepped.rows) + "x" + std::to_string(stepped.cols) + ", parameters " +
                     std::to_string(params.rows) + "x" + std::to_string(params.cols));
  }
  use_single_threaded_blas();
  const std::size_t in = widths_.front();
  const Sgd& step = sgd;
  // Replicas from one range per thread, a thread that finishes early taking the tail of another's
  // (StealingRanges): on a machine whose cores are not equally fast (other load, hybrid cores) fixed shares
  // left the faster one idle for up to a fifth of the step.
  const std::size_t workers = std::min<std::size_t>(resolve_threads(threads_), params.rows);
  StealingRanges ranges(params.rows, workers);
  parallel_for(threads_, workers, [&](std::size_t worker, std::size_t) {
    const auto w = pool_->take(widths_, batch, params.cols);
    const std::span<float> grad(w->extra.data(), params.cols);
    // Each replica's batch is gathered here, where its GEMMs read it from cache.
    const std::span<const float> x(w->x.data(), batch * in);
    // The first layer's weight gradient, delta1^T x, computed by the step itself where it can: it never goes
    // through memory, and its arithmetic runs while the momentum streams.
    const OuterGradient first{.offset = weight_offset_[0],
                              .out = widths_[1],
                              .in = in,
                              .m = batch,
                              .delta = w->scratch.delta.data(),
                              .a = x.data()};
    const bool fused = step.computes(first, stepped.data != nullptr ? stepped.width : 0);
    ranges.for_each(worker, [&](std::size_t i, std::size_t next) {
      fill(i, 1, w->x.data(), w->y.data());
      check_samples(x, w->y, "BatchedMlp::train_sgd_step");
      // The replica this thread computes next is already taken: its samples load while this one's GEMMs run.
      if (next != kNoIndex) {
        fill(next, 0, nullptr, nullptr);
      }
      stats[i] =
          train_replica(params.row_data(i), x.data(), w->y.data(), batch, w->scratch, grad.data(), !fused);
      // The next replica's parameters load as this one's step streams: its forward pass reads them first.
      const std::span<float> buf = use_momentum ? momentum.row(i) : std::span<float>();
      const std::span<const float> ahead =
          next != kNoIndex ? std::span<const float>(params.row(next)) : std::span<const float>();
      const OuterGradient& outer = fused ? first : OuterGradient{};
      if (stepped.data != nullptr) {
        step.step_replica_into(lr, params.row(i), grad, buf, stepped, i, ahead, outer);
      } else {
        step.step_replica(lr, params.row(i), grad, buf, ahead, outer);
      }
    });
  });
  sgd.finish_step();
}

void BatchedMlp::train_shared(std::span<const float> params, const BatchRows& rows, std::size_t batch,
                              std::span<float> mean_grad, std::span<BatchStats> stats) const {
  check_params(params.size(), "BatchedMlp::train_shared");
  check_params(mean_grad.size(), "BatchedMlp::train_shared");
  const std::size_t n = stats.size();
  if (batch == 0 || n == 0) {
    throw ShapeError("BatchedMlp::train_shared: needs at least one replica and a batch of at least 1");
  }
  use_single_threaded_blas();
  const std::size_t cols = params.size();
  const std::size_t chunks = (n + kSharedChunk - 1) / kSharedChunk;
  // The chunks' sums: a workspace of no samples, all extra.
  const auto sums = pool_->take(widths_, 0, chunks * cols);
  // The first layer's weights transposed once for every chunk's rows_linear().
  const auto wt = pool_->take(widths_, 0, transposed_stride(widths_[1]) * widths_[0]);
  transpose_weights(params.data() + weight_offset_[0], widths_[1], widths_[0], wt->extra.data());
  parallel_for(threads_, chunks, [&](std::size_t c0, std::size_t c1) {
    const std::size_t samples = std::min(n, kSharedChunk) * batch;
    const auto w = pool_->take(widths_, samples, 0, false);
    const float** x_rows = w->rows.data();
    std::int32_t* y = w->y.data();
    for (std::size_t c = c0; c < c1; ++c) {
      const std::size_t first = c * kSharedChunk;
      const std::size_t count = std::min(n, first + kSharedChunk) - first;
      rows(first, count, x_rows, y);
      check_labels(std::span<const std::int32_t>(y, count * batch), "BatchedMlp::train_shared");
      forward(params.data(), nullptr, count * batch, w->scratch, x_rows, wt->extra.data());
      for (std::size_t i = 0; i < count; ++i) {
        double loss = 0.0;
        std::size_t correct = 0;
        softmax_xent(y + i * batch, i * batch, batch, batch, true, w->scratch, loss, correct);
        stats[first + i] = {static_cast<float>(loss / static_cast<double>(batch)),
                            static_cast<std::int32_t>(correct)};
      }
      backward(params.data(), nullptr, count * batch, w->scratch, sums->extra.data() + c * cols, x_rows);
    }
  });
  // The chunks' sums added in chunk order, column ranges over the threads.
  parallel_for(threads_, cols, [&](std::size_t j0, std::size_t j1) {
    for (std::size_t j = j0; j < j1; ++j) {
      double total = 0.0;
      for (std::size_t c = 0; c < chunks; ++c) {
        total += static_cast<double>(sums->extra.data()[c * cols + j]);
      }
      mean_grad[j] = static_cast<float>(total / static_cast<double>(n));
    }
  });
}

EvalResult BatchedMlp::evaluate_range(const float* params, const float* inputs, const std::int32_t* labels,
                                      std::size_t begin, std::size_t end, Scratch& s) const {
  EvalResult r;
  forward(params, inputs + begin * widths_.front(), end - begin, s);
  softmax_xent(labels + begin, 0, end - begin, 1, false, s, r.loss, r.correct);
  r.samples = end - begin;
  return r;
}

EvalResult BatchedMlp::evaluate(std::span<const float> params, std::span<const float> inputs,
                                std::span<const std::int32_t> labels) const {
  check_params(params.size(), "BatchedMlp::evaluate");
  const std::size_t m = check_samples(inputs, labels, "BatchedMlp::evaluate");
  use_single_threaded_blas();
  const std::size_t chunks = (m + kEvalRows - 1) / kEvalRows;
  std::vector<EvalResult> parts(chunks);
  parallel_for(threads_, chunks, [&](std::size_t c0, std::size_t c1) {
    Scratch s(widths_, kEvalRows);
    for (std::size_t c = c0; c < c1; ++c) {
      parts[c] = evaluate_range(params.data(), inputs.data(), labels.data(), c * kEvalRows,
                                std::min(m, (c + 1) * kEvalRows), s);
    }
  });
  EvalResult total;
  for (const EvalResult& p : parts) {
    total.loss += p.loss;
    total.correct += p.correct;
    total.samples += p.samples;
  }
  if (total.samples > 0) {
    total.loss /= static_cast<double>(total.samples);
  }
  return total;
}

std::vector<EvalResult> BatchedMlp::evaluate_replicas(ConstReplicaView params, std::span<const float> inputs,
                                                      std::span<const std::int32_t> labels) const {
  check_params(params.cols, "BatchedMlp::evaluate_replicas");
  const std::size_t m = check_samples(inputs, labels, "BatchedMlp::evaluate_replicas");
  use_single_threaded_blas();
  std::vector<EvalResult> results(params.rows);
  parallel_for(threads_, params.rows, [&](std::size_t r0, std::size_t r1) {
    Scratch s(widths_, std::min(m, kEvalRows));
    for (std::size_t i = r0; i < r1; ++i) {
      EvalResult total;
      for (std::size_t b = 0; b < m; b += kEvalRows) {
        const EvalResult p = evaluate_range(params.row_data(i), inputs.data(), labels.data(), b,
                                            std::min(m, b + kEvalRows), s);
        total.loss += p.loss;
        total.correct += p.correct;
        total.samples += p.samples;
      }
      if (total.samples > 0) {
        total.loss /= static_cast<double>(total.samples);
      }
      results[i] = total;
    }
  });
  return results;
}

}  // namespace dbench::core
