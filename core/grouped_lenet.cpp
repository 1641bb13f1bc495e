// LeNet on N replicas at once with LibTorch: the replicas' images are stacked along the channels (replica r
// owning channels [r*C, (r+1)*C)), each replica's convolutions run as a single model's would, and the fully
// connected layers as batched matrix products. Threads split the replicas, LibTorch on one thread in each,
// so every replica computes exactly what a runtime worker's single model computes, whatever the thread count.
#include <fmt/core.h>
#include <malloc.h>
#include <torch/torch.h>

#include <algorithm>
#include <cstring>
#include <mutex>

#include "core/batched_mlp.hpp"
#include "core/errors.hpp"
#include "core/parallel.hpp"
#include "core/replica_model.hpp"
#include "models/torch_models.hpp"

namespace dbench::core {
namespace {

/// Samples per evaluation chunk, and replicas per chunk when every replica sees the same samples: keeps the
/// replicated input under ~64 MB.
constexpr std::int64_t kEvalSamples = 1000;
constexpr std::int64_t kEvalReplicaFloats = 16'000'000;

class GroupedLeNet final : public ReplicaModel {
 public:
  GroupedLeNet(const models::ModelSpec& spec, unsigned threads) : spec_(spec), threads_(threads) {
    const models::ModelProfile profile = models::model_profile(spec);
    std::vector<std::pair<std::string, std::size_t>> tensors;
    for (const auto& t : profile.tensors) {
      tensors.emplace_back(t.name, static_cast<std::size_t>(t.elements));
      shapes_.push_back(t.shape);
    }
    layout_ = ParamLayout(tensors);
    pad_ = std::min(spec.input_height, spec.input_width) < 32 ? 2 : 0;
    inputs_ = static_cast<std::size_t>(spec.input_channels) * static_cast<std::size_t>(spec.input_height) *
              static_cast<std::size_t>(spec.input_width);
  }

  const ParamLayout& layout() const override { return layout_; }
  std::size_t inputs() const override { return inputs_; }

  void init(std::span<float> params, std::uint64_t seed) const override {
    // The LibTorch module's own initialisation, so that both engines start from the same weights.
    torch::manual_seed(seed);
    const auto module = models::make_torch_model(spec_);
    std::size_t t = 0;
    for (const auto& p : module->parameters()) {
      const auto& slice = layout_.tensors().at(t++);
      const auto values = p.detach().contiguous();
      std::memcpy(params.data() + slice.offset, values.data_ptr<float>(), slice.elements * sizeof(float));
    }
  }

  void train_step(ConstReplicaView params, std::span<const float> inputs,
                  std::span<const std::int32_t> labels, std::size_t batch, ReplicaView grads,
                  std::span<BatchStats> stats) const override {
    if (inputs.size() != params.rows * batch * inputs_ || labels.size() != params.rows * batch ||
        stats.size() != params.rows || grads.rows != params.rows || grads.cols != params.cols) {
      throw ShapeError("grouped lenet: inputs, labels, stats and gradients must match N replicas x batch");
    }
    // The threads split the replicas, each running LibTorch on one thread: a replica's arithmetic is then
    // the same whatever the thread count, and the same as a runtime worker's single model.
    use_single_threaded_blas();
    parallel_for(threads_, params.rows, [&](std::size_t begin, std::size_t end) {
      torch::set_num_threads(1);
      const std::size_t rows = end - begin;
      train_rows(ConstReplicaView{params.row_data(begin), rows, params.cols, params.stride},
                 inputs.subspan(begin * batch * inputs_, rows * batch * inputs_),
                 labels.subspan(begin * batch, rows * batch), batch,
                 ReplicaView{grads.row_data(begin), rows, grads.cols, grads.stride},
                 stats.subspan(begin, rows));
    });
  }

  void train_rows(ConstReplicaView params, std::span<const float> inputs,
                  std::span<const std::int32_t> labels, std::size_t batch, ReplicaView grads,
                  std::span<BatchStats> stats) const {
    const auto n = static_cast<std::int64_t>(params.rows);
    const auto b = static_cast<std::int64_t>(batch);
    torch::Tensor flat = leaf(params).set_requires_grad(true);
    const torch::Tensor x = images(inputs, n, b);         // [B, N*C, H, W]
    const torch::Tensor logits = forward(flat, x, n, b);  // [N, B, classes]
    const torch::Tensor y =
        torch::from_blob(const_cast<std::int32_t*>(labels.data()), {n * b}, torch::kInt32).to(torch::kInt64);
    const torch::Tensor per_sample = torch::nn::functional::cross_entropy(
        logits.reshape({n * b, -1}), y,
        torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kNone));
    // Sum over replicas of each replica's mean loss: its gradient w.r.t. row i is replica i's own gradient.
    const torch::Tensor loss = per_sample.sum() / static_cast<double>(b);
    const torch::Tensor grad = torch::autograd::grad({loss}, {flat})[0].contiguous();
    for (std::size_t i = 0; i < params.rows; ++i) {
      std::memcpy(grads.row_data(i), grad.data_ptr<float>() + i * params.cols, params.cols * sizeof(float));
    }
    const torch::Tensor replica_loss = per_sample.detach().view({n, b}).mean(1).contiguous();
    const torch::Tensor hits =
        (logits.detach().argmax(2).reshape({n * b}) == y).view({n, b}).sum(1).contiguous();
    for (std::int64_t i = 0; i < n; ++i) {
      stats[static_cast<std::size_t>(i)] = {replica_loss[i].item<float>(),
                                            static_cast<std::int32_t>(hits[i].item<std::int64_t>())};
    }
  }

  EvalResult evaluate(std::span<const float> params, std::span<const float> inputs,
                      std::span<const std::int32_t> labels) const override {
    const ConstReplicaView one{params.data(), 1, params.size(), params.size()};
    return evaluate_replicas(one, inputs, labels).front();
  }

  std::vector<EvalResult> evaluate_replicas(ConstReplicaView params, std::span<const float> inputs,
                                            std::span<const std::int32_t> labels) const override {
    std::vector<EvalResult> results(params.rows);
    use_single_threaded_blas();
    // As in train_step: the threads split the replicas, LibTorch runs on one thread in each.
    parallel_for(threads_, params.rows, [&](std::size_t begin, std::size_t end) {
      torch::set_num_threads(1);
      evaluate_rows(ConstReplicaView{params.row_data(begin), end - begin, params.cols, params.stride}, inputs,
                    labels, std::span(results).subspan(begin, end - begin));
    });
    return results;
  }

 private:
  void evaluate_rows(ConstReplicaView params, std::span<const float> inputs,
                     std::span<const std::int32_t> labels, std::span<EvalResult> results) const {
    torch::NoGradGuard no_grad;
    const auto samples = static_cast<std::int64_t>(labels.size());
    const std::int64_t per_chunk = std::max<std::int64_t>(
        1, kEvalReplicaFloats / std::max<std::int64_t>(
                                    1, std::min(samples, kEvalSamples) * static_cast<std::int64_t>(inputs_)));
    for (std::size_t first = 0; first < params.rows; first += static_cast<std::size_t>(per_chunk)) {
      const std::size_t count = std::min(params.rows - first, static_cast<std::size_t>(per_chunk));
      const ConstReplicaView chunk{params.row_data(first), count, params.cols, params.stride};
      const torch::Tensor flat = leaf(chunk);
      const auto n = static_cast<std::int64_t>(count);
      for (std::int64_t s0 = 0; s0 < samples; s0 += kEvalSamples) {
        const std::int64_t m = std::min(kEvalSamples, samples - s0);
        // The same samples for every replica of the chunk: [M, C, H, W] repeated along the channels.
        const torch::Tensor x =
            torch::from_blob(const_cast<float*>(inputs.data()) + s0 * static_cast<std::int64_t>(inputs_),
                             {m, spec_.input_channels, spec_.input_height, spec_.input_width})
                .repeat({1, n, 1, 1});
        const torch::Tensor logits = forward(flat, x, n, m);  // [n, M, classes]
        const torch::Tensor y =
            torch::from_blob(const_cast<std::int32_t*>(labels.data()) + s0, {m}, torch::kInt32)
                .to(torch::kInt64);
        const torch::Tensor per_sample = torch::nn::functional::cross_entropy(
            logits.reshape({n * m, -1}), y.repeat({n}),
            torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kNone));
        const torch::Tensor loss = per_sample.view({n, m}).to(torch::kFloat64).sum(1).contiguous();
        const torch::Tensor hits = (logits.argmax(2) == y.unsqueeze(0)).sum(1).contiguous();
        for (std::int64_t i = 0; i < n; ++i) {
          auto& r = results[first + static_cast<std::size_t>(i)];
          r.loss += loss[i].item<double>();
          r.correct += static_cast<std::size_t>(hits[i].item<std::int64_t>());
          r.samples += static_cast<std::size_t>(m);
        }
      }
    }
    for (auto& r : results) {
      r.loss = r.samples == 0 ? 0.0 : r.loss / static_cast<double>(r.samples);
    }
  }

  /// The [N, P] rows as a tensor sharing their memory (no copy; rows may be padded).
  static torch::Tensor leaf(ConstReplicaView params) {
    return torch::from_blob(const_cast<float*>(params.data),
                            {static_cast<std::int64_t>(params.rows), static_cast<std::int64_t>(params.cols)},
                            {static_cast<std::int64_t>(params.stride), 1}, torch::kFloat32);
  }

  /// Tensor t of every replica, shaped [N * shape[0], shape[1:]...] for grouped convolutions and biases.
  torch::Tensor stacked(const torch::Tensor& flat, std::size_t t, std::int64_t n) const {
    const auto& slice = layout_.tensors()[t];
    std::vector<std::int64_t> shape = shapes_[t];
    shape[0] *= n;
    return flat.narrow(1, static_cast<std::int64_t>(slice.offset), static_cast<std::int64_t>(slice.elements))
        .reshape(shape);
  }

  /// Tensor t of every replica, shaped [N, shape...] for batched products.
  torch::Tensor batched(const torch::Tensor& flat, std::size_t t, std::int64_t n) const {
    const auto& slice = layout_.tensors()[t];
    std::vector<std::int64_t> shape = {n};
    shape.insert(shape.end(), shapes_[t].begin(), shapes_[t].end());
    return flat.narrow(1, static_cast<std::int64_t>(slice.offset), static_cast<std::int64_t>(slice.elements))
        .reshape(shape);
  }

  /// Per-replica batches [N, B, C, H, W] regrouped as [B, N*C, H, W]: replica r's channels are group r.
  torch::Tensor images(std::span<const float> inputs, std::int64_t n, std::int64_t b) const {
    return torch::from_blob(const_cast<float*>(inputs.data()),
                            {n, b, spec_.input_channels, spec_.input_height, spec_.input_width})
        .permute({1, 0, 2, 3, 4})
        .reshape({b, n * spec_.input_channels, spec_.input_height, spec_.input_width});
  }

  /// Convolution t (weight t, bias t + 1) of every replica on x [B, N*C, H, W]: one ordinary convolution per
  /// replica, not one grouped convolution, so that each replica's arithmetic is exactly a single model's (a
  /// grouped kernel sums in another order, and replicas would drift from the runtime's workers by rounding).
  torch::Tensor convolution(const torch::Tensor& flat, const torch::Tensor& x, std::size_t t, std::int64_t n,
                            const std::vector<std::int64_t>& pad) const {
    const std::vector<std::int64_t> one = {1, 1};
    // Split (not narrowed one by one): autograd joins the pieces' gradients once instead of widening each
    // to the whole tensor.
    const auto images = x.chunk(n, 1);
    const auto weights = stacked(flat, t, n).chunk(n, 0);
    const auto biases = stacked(flat, t + 1, n).chunk(n, 0);
    std::vector<torch::Tensor> out;
    out.reserve(static_cast<std::size_t>(n));
    for (std::int64_t r = 0; r < n; ++r) {
      const auto i = static_cast<std::size_t>(r);
      out.push_back(torch::conv2d(images[i], weights[i], biases[i], one, pad));
    }
    return n == 1 ? out.front() : torch::cat(out, 1);
  }

  /// Logits [N, B, classes] of input x [B, N*C, H, W]; the same layers as models' LeNet.
  torch::Tensor forward(const torch::Tensor& flat, const torch::Tensor& x, std::int64_t n,
                        std::int64_t b) const {
    const std::vector<std::int64_t> pad = {pad_, pad_};
    const std::vector<std::int64_t> none = {0, 0};
    auto h = convolution(flat, x, 0, n, pad);
    h = torch::max_pool2d(torch::relu(h), 2);
    h = convolution(flat, h, 2, n, none);
    h = torch::max_pool2d(torch::relu(h), 2);   // [B, N*16, h, w]
    h = h.reshape({b, n, -1}).transpose(0, 1);  // [N, B, features]: each replica's own flatten order
    for (std::size_t layer = 0; layer < 3; ++layer) {
      const auto w = batched(flat, 4 + 2 * layer, n);     // [N, out, in]
      const auto bias = batched(flat, 5 + 2 * layer, n);  // [N, out]
      h = torch::baddbmm(bias.unsqueeze(1), h, w.transpose(1, 2));
      if (layer < 2) {
        h = torch::relu(h);
      }
    }
    return h;
  }

  models::ModelSpec spec_;
  unsigned threads_;
  ParamLayout layout_;
  std::vector<std::vector<std::int64_t>> shapes_;
  std::int64_t pad_ = 0;
  std::size_t inputs_ = 0;
};

}  // namespace

std::unique_ptr<ReplicaModel> make_grouped_lenet(const models::ModelSpec& spec, unsigned threads) {
  // Every step allocates the same tensors, up to hundreds of MB at 256 replicas. By default glibc gives each
  // one above 128 KB-32 MB a fresh mmap whose pages the kernel zeroes on first touch, and hands freed heap
  // back to the system: half of a 256-replica run's time. Blocks up to 32 MB now stay in the heap for reuse
  // (256 replicas, 12 iterations: 20.3 s to 18.4 s, system time 12.5 s to 7.5 s; same results).
  static std::once_flag once;
  std::call_once(once, [] {
    mallopt(M_MMAP_THRESHOLD, 32 << 20);
    mallopt(M_TRIM_THRESHOLD, 1 << 30);
  });
  return std::make_unique<GroupedLeNet>(spec, threads);
}

}  // namespace dbench::core
