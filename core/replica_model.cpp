#include "core/replica_model.hpp"

#include <fmt/core.h>

#include <stdexcept>

#include "core/errors.hpp"

namespace dbench::core {

#ifdef DBENCH_HAVE_TORCH
std::unique_ptr<ReplicaModel> make_grouped_lenet(const models::ModelSpec& spec, unsigned threads);
#endif

namespace {

/// The MLP through the batched GEMM kernels, which also fuse the SGD step.
class MlpReplicas final : public ReplicaModel {
 public:
  MlpReplicas(std::vector<std::size_t> widths, unsigned threads) : mlp_(std::move(widths), threads) {}
  const ParamLayout& layout() const override { return mlp_.layout(); }
  std::size_t inputs() const override { return mlp_.inputs(); }
  void init(std::span<float> params, std::uint64_t seed) const override { mlp_.init(params, seed); }
  void train_step(ConstReplicaView params, std::span<const float> inputs,
                  std::span<const std::int32_t> labels, std::size_t batch, ReplicaView grads,
                  std::span<BatchStats> stats) const override {
    mlp_.train_step(params, inputs, labels, batch, grads, stats);
  }
  bool train_sgd_step(ReplicaView params, const BatchFill& fill, std::size_t batch, Sgd& sgd, double lr,
                      ReplicaView momentum, std::span<BatchStats> stats, BlockedView stepped) const override {
    mlp_.train_sgd_step(params, fill, batch, sgd, lr, momentum, stats, stepped);
    return true;
  }
  bool train_shared(std::span<const float> params, const BatchRows& rows, std::size_t batch,
                    std::span<float> mean_grad, std::span<BatchStats> stats) const override {
    mlp_.train_shared(params, rows, batch, mean_grad, stats);
    return true;
  }
  EvalResult evaluate(std::span<const float> params, std::span<const float> inputs,
                      std::span<const std::int32_t> labels) const override {
    return mlp_.evaluate(params, inputs, labels);
  }
  std::vector<EvalResult> evaluate_replicas(ConstReplicaView params, std::span<const float> inputs,
                                            std::span<const std::int32_t> labels) const override {
    return mlp_.evaluate_replicas(params, inputs, labels);
  }

 private:
  BatchedMlp mlp_;
};

}  // namespace

std::unique_ptr<ReplicaModel> make_replica_model(const models::ModelSpec& spec, unsigned threads) {
  if (spec.name == "mlp") {
    std::vector<std::size_t> widths;
    widths.push_back(static_cast<std::size_t>(spec.input_channels) *
                     static_cast<std::size_t>(spec.input_height) *
                     static_cast<std::size_t>(spec.input_width));
    for (int w : spec.mlp_hidden) {
      widths.push_back(static_cast<std::size_t>(w));
    }
    widths.push_back(static_cast<std::size_t>(spec.classes));
    return std::make_unique<MlpReplicas>(std::move(widths), threads);
  }
  if (spec.name == "lenet") {
#ifdef DBENCH_HAVE_TORCH
    return make_grouped_lenet(spec, threads);
#else
    throw ValueError(RunInput::model, "'lenet' needs DBench built with LibTorch (install libtorch-dev)");
#endif
  }
  throw ValueError(
      RunInput::model,
      fmt::format("the simulator's numerics train 'mlp' and 'lenet'; '{}' runs in the runtime engine",
                  spec.name));
}

}  // namespace dbench::core
