// ResNet-50 training throughput on one GPU: compute alone (the reference) against compute plus the NCCL
// all-reduce of every gradient through the runtime's communicator, in the same run. Synthetic ImageNet-shaped
// data (224 x 224 x 3, 1000 classes). Prints the skip marker and exits 0 where no GPU is visible.
//   bench_gpu_resnet50 [--batch B] [--iterations N] [--out FILE.json]
#include <fmt/core.h>
#include <torch/torch.h>

#include <chrono>
#include <fstream>
#include <memory>
#include <string>

#include "models/torch_models.hpp"
#include "runtime/communicator.hpp"
#include "runtime/nccl_communicator.hpp"

namespace {

using Clock = std::chrono::steady_clock;

struct Options {
  std::int64_t batch = 64;
  int iterations = 30;
  std::string out;
};

/// Seconds per iteration of `iterations` training steps after a warm-up; `allreduce` all-reduces the
/// gradients between backward and the optimizer step when non-null, as dbench train's worker does: one call
/// on the flat gradient buffer every parameter's gradient is a view of (models::flatten_parameters).
double time_training(dbench::models::Classifier& model, torch::optim::SGD& sgd,
                     const dbench::models::FlatParameters& flat, const torch::Tensor& images,
                     const torch::Tensor& labels, int iterations, dbench::runtime::Communicator* allreduce) {
  auto step = [&] {
    flat.grads.zero_();
    const torch::Tensor loss = torch::nn::functional::cross_entropy(model.forward(images), labels);
    loss.backward();
    if (allreduce != nullptr) {
      // The communicator runs on its own stream: the gradients must be complete before it reads them.
      torch::cuda::synchronize();
      allreduce->allreduce(
          std::span<float>(flat.grads.data_ptr<float>(), static_cast<std::size_t>(flat.grads.numel())),
          dbench::runtime::ReduceOp::sum);
    }
    sgd.step();
  };
  for (int i = 0; i < 5; ++i) {
    step();
  }
  torch::cuda::synchronize();
  const auto start = Clock::now();
  for (int i = 0; i < iterations; ++i) {
    step();
  }
  torch::cuda::synchronize();
  return std::chrono::duration<double>(Clock::now() - start).count() / iterations;
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string key = argv[i];
    if (key == "--batch") {
      options.batch = std::stoll(argv[i + 1]);
    } else if (key == "--iterations") {
      options.iterations = std::stoi(argv[i + 1]);
    } else if (key == "--out") {
      options.out = argv[i + 1];
    } else {
      fmt::print(stderr, "bench_gpu_resnet50: unknown option {}\n", key);
      return 2;
    }
  }
  try {
    if (!torch::cuda::is_available()) {
      fmt::print(
          "[dbench-skip] no CUDA device visible to LibTorch (or a CPU-only LibTorch): nothing to measure\n");
      return 0;
    }
    torch::manual_seed(1);
    at::globalContext().setBenchmarkCuDNN(true);
    const torch::Device device(torch::kCUDA, 0);
    auto model = dbench::models::make_torch_model({"resnet50", 3, 224, 224, 1000, {}});
    model->to(device);
    model->train();
    const dbench::models::FlatParameters flat = dbench::models::flatten_parameters(*model);
    torch::optim::SGD sgd(model->parameters(), torch::optim::SGDOptions(0.1).momentum(0.9));
    const torch::Tensor images = torch::randn({options.batch, 3, 224, 224}, torch::TensorOptions(device));
    const torch::Tensor labels =
        torch::randint(1000, {options.batch}, torch::TensorOptions(device).dtype(torch::kLong));

    const double compute = time_training(*model, sgd, flat, images, labels, options.iterations, nullptr);
    dbench::runtime::SingleWorkerCommunicator bootstrap;
    dbench::runtime::NcclCommunicator nccl(bootstrap);
    const double with_nccl = time_training(*model, sgd, flat, images, labels, options.iterations, &nccl);

    const auto b = static_cast<double>(options.batch);
    fmt::print("ResNet-50, batch {} on {} ({} iterations after 5 warm-up):\n", options.batch, "GPU 0",
               options.iterations);
    fmt::print("  compute only (reference)        {:8.4f} s/iteration  {:8.1f} images/s\n", compute,
               b / compute);
    fmt::print("  compute + NCCL gradient all-reduce {:8.4f} s/iteration  {:8.1f} images/s\n", with_nccl,
               b / with_nccl);
    fmt::print("  ratio (with all-reduce / reference throughput): {:.3f}\n", compute / with_nccl);
    if (!options.out.empty()) {
      std::ofstream(options.out) << fmt::format(
          "{{\n  \"model\": \"resnet50\",\n  \"batch\": {},\n  \"iterations\": {},\n"
          "  \"compute_seconds_per_iteration\": {},\n  \"compute_images_per_second\": {},\n"
          "  \"nccl_seconds_per_iteration\": {},\n  \"nccl_images_per_second\": {},\n  \"ratio\": {}\n}}\n",
          options.batch, options.iterations, compute, b / compute, with_nccl, b / with_nccl,
          compute / with_nccl);
    }
    return 0;
  } catch (const std::exception& e) {
    fmt::print(stderr, "bench_gpu_resnet50: {}\n", e.what());
    return 1;
  }
}
