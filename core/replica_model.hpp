// A model trained on N replicas at once, each with its own parameters (a row of the [N, P] matrix) and its
// own batch: the interface the numerics engine drives, whatever computes it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "core/batched_mlp.hpp"
#include "core/param_layout.hpp"
#include "core/replica_view.hpp"
#include "core/sgd.hpp"
#include "models/model_profile.hpp"

namespace dbench::core {

/// Forward and backward of N replicas of one model.
class ReplicaModel {
 public:
  virtual ~ReplicaModel() = default;
  /// The parameter tensors of one replica, in the LibTorch module's named_parameters() order.
  virtual const ParamLayout& layout() const = 0;
  /// Input features per sample (C x H x W).
  virtual std::size_t inputs() const = 0;
  /// Writes the common initial parameters of a replica, from `seed` alone.
  virtual void init(std::span<float> params, std::uint64_t seed) const = 0;
  /// Row i of `grads` = d(mean loss of replica i on its batch)/d(params_i); inputs [N, batch, in].
  virtual void train_step(ConstReplicaView params, std::span<const float> inputs,
                          std::span<const std::int32_t> labels, std::size_t batch, ReplicaView grads,
                          std::span<BatchStats> stats) const = 0;
  /// train_step followed by sgd.step where the model can fuse them, replica i's batch written by fill(i, 1)
  /// (false: not supported, nothing done). With a blocked view whose data is not null, the stepped
  /// parameters go there and the parameters are only read (BatchedMlp::train_sgd_step).
  virtual bool train_sgd_step(ReplicaView, const BatchFill&, std::size_t, Sgd&, double, ReplicaView,
                              std::span<BatchStats>, BlockedView) const {
    return false;
  }
  /// Centralized training's mean gradient over N = stats.size() replicas that all hold `params`, each on its
  /// own batch (where `rows` points), where the model computes it as one large batch (false: not supported,
  /// nothing done).
  virtual bool train_shared(std::span<const float>, const BatchRows&, std::size_t, std::span<float>,
                            std::span<BatchStats>) const {
    return false;
  }
  /// Loss and accuracy of one parameter vector on samples [M, in].
  virtual EvalResult evaluate(std::span<const float> params, std::span<const float> inputs,
                              std::span<const std::int32_t> labels) const = 0;
  /// evaluate() for every replica on the same samples.
  virtual std::vector<EvalResult> evaluate_replicas(ConstReplicaView params, std::span<const float> inputs,
                                                    std::span<const std::int32_t> labels) const = 0;
};

/// The replica model of a spec: the batched MLP kernels for "mlp", LibTorch grouped convolutions for "lenet"
/// (when built with LibTorch). Throws std::invalid_argument naming train.model for other models.
std::unique_ptr<ReplicaModel> make_replica_model(const models::ModelSpec& spec, unsigned threads);

}  // namespace dbench::core
