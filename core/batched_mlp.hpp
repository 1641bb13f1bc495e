// A multi-layer perceptron trained on N replicas at once: each replica has its own parameters and its own
// batch.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "core/param_layout.hpp"
#include "core/replica_view.hpp"

namespace dbench::core {

class Sgd;

/// Sets OpenBLAS (the process's BLAS, LibTorch's as well) to one thread: the replica models' own threads each
/// call BLAS on their own small matrices, so BLAS's threads would only oversubscribe the cores, and its
/// results would depend on how many cores the process may use.
void use_single_threaded_blas();

/// One replica's result on its training batch.
struct BatchStats {
  /// Mean softmax cross-entropy over the batch.
  float loss = 0.0f;
  /// Samples whose largest logit is the label.
  std::int32_t correct = 0;
};

/// Writes the training batches of replicas [first, first + count): count x batch samples' inputs to x and
/// their labels to y. Called from several threads at once, for disjoint ranges. A count of 0 writes nothing
/// (x and y may be null): it says that the calling thread will ask for replica `first` next, so that an
/// implementation may start loading that batch's samples while the thread computes.
using BatchFill = std::function<void(std::size_t first, std::size_t count, float* x, std::int32_t* y)>;

/// A BatchFill that copies from batches already gathered: inputs [N, batch, in], labels [N, batch] (which
/// must outlive it). Throws ShapeError when the sizes do not make whole batches.
BatchFill contiguous_batches(std::span<const float> inputs, std::span<const std::int32_t> labels,
                             std::size_t batch);

/// Points at the training samples of replicas [first, first + count): count x batch pointers, each to one
/// sample's inputs, to `rows`, and their labels to y. Called from several threads at once, for disjoint
/// ranges; the samples must stay where they are until the training call returns.
using BatchRows =
    std::function<void(std::size_t first, std::size_t count, const float** rows, std::int32_t* y)>;

/// A BatchRows over batches already gathered: inputs [N, batch, in], labels [N, batch] (which must outlive
/// it). Throws ShapeError when the sizes do not make whole batches.
BatchRows contiguous_batch_rows(std::span<const float> inputs, std::span<const std::int32_t> labels,
                                std::size_t batch);

/// Result of evaluating one parameter vector on a set of samples.
struct EvalResult {
  /// Mean softmax cross-entropy.
  double loss = 0.0;
  /// Samples whose largest logit is the label.
  std::size_t correct = 0;
  /// Samples evaluated.
  std::size_t samples = 0;

  /// correct / samples (0 without samples).
  double accuracy() const noexcept {
    return samples == 0 ? 0.0 : static_cast<double>(correct) / static_cast<double>(samples);
  }
};

/// Fully connected layers with ReLU between them and softmax cross-entropy on the last, widths
/// {in, hidden..., classes}. Parameters follow PyTorch's nn.Linear order and shapes: fc1.weight [w1, w0],
/// fc1.bias [w1], fc2.weight [w2, w1], ... so a flat vector matches torch's parameters() one to one.
class BatchedMlp {
 public:
  /// Throws ValueError unless there are at least two widths, all positive. `threads`: 0 means all.
  explicit BatchedMlp(std::vector<std::size_t> widths, unsigned threads = 1);

  /// Layer widths, input first.
  const std::vector<std::size_t>& widths() const noexcept { return widths_; }
  /// Features per sample.
  std::size_t inputs() const noexcept { return widths_.front(); }
  /// Number of classes.
  std::size_t classes() const noexcept { return widths_.back(); }
  /// Parameter tensors of one replica.
  const ParamLayout& layout() const noexcept { return layout_; }
  /// Parameters per replica P.
  std::size_t param_count() const noexcept { return layout_.size(); }
  /// Floating-point operations of one training sample (forward, weight and input gradients; GEMMs only).
  double train_flops_per_sample() const noexcept;

  /// PyTorch's nn.Linear default: weights and biases uniform in +-1/sqrt(fan_in), from `seed` alone.
  void init(std::span<float> params, std::uint64_t seed) const;

  /// Forward and backward for every replica i on its own batch: inputs [N, batch, in], labels [N, batch].
  /// Writes d(mean loss)/d(params) of replica i to row i of `grads` and its loss and hits to stats[i].
  /// Throws ShapeError on mismatched sizes and ValueError on a label outside [0, classes).
  void train_step(ConstReplicaView params, std::span<const float> inputs,
                  std::span<const std::int32_t> labels, std::size_t batch, ReplicaView grads,
                  std::span<BatchStats> stats) const;

  /// train_step fused with each replica's local SGD step (D-PSGD), replica i's batch written by fill(i, 1):
  /// the batch and the replica's gradient go to per-thread buffers that stay in cache and `sgd` applies the
  /// gradient at rate `lr` right away; ends with sgd.finish_step(). Same result as train_step then sgd.step,
  /// without writing and re-reading the batches or an [N, P] gradient matrix. With `stepped` (data not
  /// null), the stepped parameters go there, column block by column block (Sgd::step_replica_into), and
  /// `params` is only read.
  void train_sgd_step(ReplicaView params, const BatchFill& fill, std::size_t batch, Sgd& sgd, double lr,
                      ReplicaView momentum, std::span<BatchStats> stats, BlockedView stepped = {}) const;

  /// Centralized training's mean gradient while every replica holds the same `params`: the mean over the N
  /// replicas (N = stats.size()) of each one's gradient on its own batch, which is the gradient of one batch
  /// of N x batch samples. The batches go 32 replicas at a time through one set of GEMMs; the first layer's
  /// read the samples where `rows` points (row_gemm.hpp), so they are never copied. The chunks' sums are
  /// added in order, so the result does not depend on the thread count. It differs from train_step's rows
  /// averaged by allreduce_mean() in rounding only. Replica i's loss and hits go to stats[i]. Throws
  /// ShapeError on mismatched sizes and ValueError on a label outside [0, classes).
  void train_shared(std::span<const float> params, const BatchRows& rows, std::size_t batch,
                    std::span<float> mean_grad, std::span<BatchStats> stats) const;

  /// Loss and accuracy of one parameter vector (e.g. the replica average) on samples [M, in] with labels [M].
  EvalResult evaluate(std::span<const float> params, std::span<const float> inputs,
                      std::span<const std::int32_t> labels) const;

  /// evaluate() for every replica, in parallel over replicas.
  std::vector<EvalResult> evaluate_replicas(ConstReplicaView params, std::span<const float> inputs,
                                            std::span<const std::int32_t> labels) const;

 private:
  struct Scratch;
  struct Workspace;
  class WorkspacePool;
  void check_params(std::size_t cols, const char* what) const;
  void check_batch(ConstReplicaView params, std::span<const float> inputs,
                   std::span<const std::int32_t> labels, std::size_t batch, std::span<BatchStats> stats,
                   const char* what) const;
  /// Forward, loss and backward of one replica's batch; the gradient goes to `grads`, except the first
  /// layer's weights' without `first_weight` (the step computes it from the scratch's delta and x).
  BatchStats train_replica(const float* params, const float* x, const std::int32_t* y, std::size_t batch,
                           Scratch& s, float* grads, bool first_weight = true) const;
  std::size_t check_samples(std::span<const float> inputs, std::span<const std::int32_t> labels,
                            const char* what) const;
  /// Logits of `rows` samples into scratch, keeping hidden activations for backward. The samples are x
  /// [rows, in], or where `x_rows` points when it is given (then `wt` holds the first layer's weights
  /// transposed by transpose_weights()).
  void forward(const float* params, const float* x, std::size_t rows, Scratch& s,
               const float* const* x_rows = nullptr, const float* wt = nullptr) const;
  /// Adds loss and hits of `rows` samples to the sums; leaves d(mean loss)/d(logits) in scratch when `grad`.
  /// Rows [first, first + rows) of the scratch's logits; `labels` points at row first's label.
  void softmax_xent(const std::int32_t* labels, std::size_t first, std::size_t rows, std::size_t mean_over,
                    bool grad, Scratch& s, double& loss_sum, std::size_t& correct) const;
  /// The gradient of `rows` samples' summed loss after forward(); samples as forward() takes them. Without
  /// `first_weight` the first layer's weight gradient is left out: the scratch's delta then holds that
  /// layer's delta, from which it follows (OuterGradient).
  void backward(const float* params, const float* x, std::size_t rows, Scratch& s, float* grads,
                const float* const* x_rows = nullptr, bool first_weight = true) const;
  void check_labels(std::span<const std::int32_t> labels, const char* what) const;
  EvalResult evaluate_range(const float* params, const float* inputs, const std::int32_t* labels,
                            std::size_t begin, std::size_t end, Scratch& s) const;

  std::vector<std::size_t> widths_;
  unsigned threads_;
  ParamLayout layout_;
  std::vector<std::size_t> weight_offset_;  // per layer l >= 1 (index l - 1)
  std::vector<std::size_t> bias_offset_;
  // Training buffers kept from call to call, so that no iteration allocates, faults in and zeroes them again
  // (a batch of samples per thread in train_sgd_step(), and 6.5 MB of chunk sums in train_shared() at 1008
  // replicas). Shared by copies of this object; each call takes buffers for its own use only.
  std::shared_ptr<WorkspacePool> pool_;
};

}  // namespace dbench::core
