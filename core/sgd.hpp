// The local optimizer step of every replica: SGD with momentum, weight decay and Nesterov, as PyTorch's
// torch.optim.SGD computes it (dampening 0), optionally with LARS's layer-wise trust ratio.
#pragma once

#include <cstddef>
#include <span>
#include <string_view>
#include <vector>

#include "core/param_layout.hpp"
#include "core/replica_view.hpp"

namespace dbench::core {

/// SGD hyper-parameters that stay fixed over a run; the learning rate is given per step.
struct SgdConfig {
  /// Momentum factor mu (0: plain SGD, no momentum buffer used).
  double momentum = 0.0;
  /// L2 penalty lambda added to the gradient as lambda * x.
  double weight_decay = 0.0;
  /// Nesterov momentum (needs momentum > 0, as in PyTorch).
  bool nesterov = false;
  /// LARS (You, Gitman, Ginsburg 2017): each tensor's d = g + lambda x scaled by lars_trust_ratio().
  bool lars = false;
  /// LARS's trust coefficient eta (the paper's 0.001).
  double lars_eta = 0.001;
};

/// LARS's trust ratio of one tensor: eta ||w|| / (||g|| + lambda ||w||), or 1 where ||w|| or ||g|| is 0 (a
/// tensor initialised to zero, or one without gradient, steps as plain SGD would). The one formula every
/// engine uses, LibTorch's worker included.
double lars_trust_ratio(double eta, double weight_norm, double grad_norm, double weight_decay) noexcept;

/// Whether LARS scales tensor `name`'s step. Not for biases and batch-norm parameters (You et al. 2017 and
/// LARC leave them out: their norms are small or arbitrary, and a ratio from them stalls or blows up their
/// step): names ending in ".bias", and the weights of the normalisation layers this project's models name
/// bn* or downsample.1.
bool lars_adapts(std::string_view name) noexcept;

/// A weight matrix whose gradient Sgd computes itself while it steps, so that the gradient never goes through
/// memory: the [out, in] matrix at `offset` in a replica's parameters, element [o][k] with gradient
/// delta[0][o] a[0][k] + delta[1][o] a[1][k] + ... + delta[m - 1][o] a[m - 1][k], one chain of fused
/// multiply-adds in row order from zero: rows_weight_grad()'s order, and that of OpenBLAS's kernels for this
/// product, so the parameters keep their bits. delta is [m, out] and a is [m, in], rows contiguous. m == 0:
/// none.
struct OuterGradient {
  std::size_t offset = 0;
  std::size_t out = 0;
  std::size_t in = 0;
  std::size_t m = 0;
  const float* delta = nullptr;
  const float* a = nullptr;
};

/// Applies d = g + lambda x; buf = mu buf + d (buf = d at the first step); d = nesterov ? d + mu buf : buf;
/// x -= lr d to every element of every replica, in float, like PyTorch's CPU kernels. With LARS, d of each
/// tensor l is r_l g + (r_l lambda) x (r_l = lars_trust_ratio() of the replica's own x and g, in double, then
/// rounded to float; 1 where !lars_adapts()); the rest is unchanged.
class Sgd {
 public:
  /// Throws ValueError on a negative or non-finite hyper-parameter, Nesterov without momentum, or LARS (which
  /// needs the tensors: the other constructor). The AVX-512 kernel, used where the CPU has it unless
  /// `allow_avx512` is false, gives bitwise the portable kernel's results.
  explicit Sgd(SgdConfig config, unsigned threads = 1, bool allow_avx512 = true);
  /// The same for parameters laid out as `layout` (each step's rows are the whole layout), which LARS's
  /// per-tensor ratio needs; also throws ValueError on a LARS eta that is not finite and > 0.
  Sgd(SgdConfig config, const ParamLayout& layout, unsigned threads = 1, bool allow_avx512 = true);

  /// The hyper-parameters.
  const SgdConfig& config() const noexcept { return config_; }
  /// Steps taken since construction or reset(); the first one initialises the momentum buffers.
  std::size_t steps() const noexcept { return steps_; }
  /// Forgets the momentum: the next step overwrites the buffers instead of decaying them.
  void reset() noexcept { steps_ = 0; }

  /// One step with learning rate `lr` (rounded to float, as PyTorch does for float parameters); `momentum` is
  /// ignored when config().momentum is 0. Throws ShapeError when the views differ in shape.
  void step(double lr, ReplicaView params, ConstReplicaView grads, ReplicaView momentum);

  /// One replica's part of a step, for passes that apply the step while the gradient is still in cache; after
  /// every replica's part, finish_step(). `buf` may be empty without momentum. `ahead`, empty or of x's size,
  /// is what the caller reads next (the next replica's parameters): its lines are prefetched into the cache
  /// as the step streams, where the AVX-512 kernel runs, so that its first reads do not wait on memory.
  /// With `outer` (see computes()), the elements of outer's matrix are stepped with the gradient computed
  /// from it, and g is not read there. Throws ShapeError on size mismatch or an `outer` it cannot compute.
  void step_replica(double lr, std::span<float> x, std::span<const float> g, std::span<float> buf,
                    std::span<const float> ahead = {}, const OuterGradient& outer = {}) const;
  /// step_replica() with the stepped parameters written to row `row` of `out`, a column-blocked matrix (the
  /// input mix() reads without copying it), instead of back to x, which is only read. Same values as
  /// step_replica(); where the AVX-512 kernel runs, the output's whole vectors go past the caches (for
  /// slices on a 64-byte line) and are fenced before it returns. The step still ends with finish_step().
  /// `outer` as for step_replica(). Throws ShapeError on size mismatch or a row outside `out`.
  void step_replica_into(double lr, std::span<const float> x, std::span<const float> g, std::span<float> buf,
                         BlockedView out, std::size_t row, std::span<const float> ahead = {},
                         const OuterGradient& outer = {}) const;
  /// Whether step_replica() and step_replica_into() (blocks `width` columns wide; 0 for step_replica()) can
  /// take `outer`: where the AVX-512 kernel runs, with outer's offset, `in` and `width` multiples of 16 (each
  /// vector of the matrix within one block), and without LARS (whose ratio needs the whole gradient before
  /// the step). Elsewhere the caller computes the gradient into g.
  bool computes(const OuterGradient& outer, std::size_t width) const noexcept;
  /// Ends a step made of step_replica() calls (the next one decays the momentum instead of initialising it).
  void finish_step() noexcept { ++steps_; }

 private:
  /// One tensor with LARS's ratio.
  struct LarsTensor {
    std::size_t offset = 0;
    std::size_t elements = 0;
    bool adapts = true;
  };

  /// Elements [0, n) of a row (x, g, buf and ahead at the range's start, out where it goes); with LARS,
  /// scaled by `scale` (the gradient) and `scale` lambda (the decay).
  void apply(double lr, const float* x, float* out, const float* g, float* buf, std::size_t n,
             const float* ahead, bool stream, float scale = 1.0f) const;
  /// Columns [c0, c1) of a row (x, g, buf and ahead at the row's start; out where column c0 goes): one
  /// apply() without LARS, one per tensor in the range with it, each with its `scales` entry.
  void apply_range(double lr, const float* x, float* out, const float* g, float* buf, std::size_t c0,
                   std::size_t c1, const float* ahead, bool stream, std::span<const float> scales) const;
  /// LARS's ratio of every tensor of a row (1 where the tensor does not adapt); empty without LARS.
  std::vector<float> lars_scales(std::span<const float> x, std::span<const float> g) const;
  /// step_replica_into() after its checks (step_replica() in place is one block as wide as the row): the
  /// columns outside outer's matrix from g, the matrix from outer; with `stream`, whole output vectors on
  /// a 64-byte line go past the caches.
  void step_row(double lr, std::span<const float> x, std::span<const float> g, std::span<float> buf,
                BlockedView out, std::size_t row, std::span<const float> ahead, const OuterGradient& outer,
                bool stream) const;
  /// The elements of `outer` (computes() holds) stepped into row `row` of `out`.
  void apply_outer(double lr, const float* x, float* buf, const OuterGradient& outer, BlockedView out,
                   std::size_t row, const float* ahead, bool stream) const;
  /// Throws ShapeError unless `outer` lies within n parameters and computes(outer, width).
  void check_outer(const OuterGradient& outer, std::size_t n, std::size_t width, const char* what) const;

  SgdConfig config_;
  std::vector<LarsTensor> tensors_;
  std::size_t row_size_ = 0;
  unsigned threads_;
  bool avx512_;
  std::size_t steps_ = 0;
};

}  // namespace dbench::core
