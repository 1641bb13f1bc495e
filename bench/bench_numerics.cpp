// Throughput of one D-PSGD iteration on N virtual replicas (MLP, exponential graph) against a reference
// measured in the same run: the same GEMMs as a plain loop of cblas_sgemm over the replicas, plus the
// mixing's memory traffic as a plain streaming pass (each replica reads its d+1 neighbours' rows and writes
// its own).
#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "core/batched_mlp.hpp"
#include "core/mixing.hpp"
#include "core/numerics.hpp"
#include "core/parallel.hpp"
#include "core/replica_store.hpp"
#include "core/sgd.hpp"
#include "models/dataset.hpp"
#include "topology/generators.hpp"
#include "topology/graph_policy.hpp"

namespace {

using dbench::core::BatchedMlp;
using Clock = std::chrono::steady_clock;

struct Options {
  std::size_t replicas = 1008;
  std::size_t batch = 16;
  std::size_t hidden = 64;
  int iterations = 10;
  int warmup = 2;
  unsigned threads = 0;
  std::size_t block_cols = 0;
};

/// Mean seconds per iteration of each part, and of the reference's parts.
struct Timings {
  double compute = 0.0;
  double optimizer = 0.0;
  double mixing = 0.0;
  double gemm = 0.0;
  double stream = 0.0;
  double loss = 0.0;
};

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

/// The reference compute: per replica, exactly the GEMM calls (shapes and operands) of one training step.
void gemm_loop(const BatchedMlp& mlp, dbench::core::ConstReplicaView params, const std::vector<float>& inputs,
               std::size_t batch, dbench::core::ReplicaView grads, unsigned threads) {
  const auto& w = mlp.widths();
  const auto& tensors = mlp.layout().tensors();
  dbench::core::parallel_for(threads, params.rows, [&](std::size_t r0, std::size_t r1) {
    const std::size_t widest = *std::max_element(w.begin(), w.end());
    std::vector<float> act(batch * widest * w.size());
    std::vector<float> delta(batch * widest);
    std::vector<float> back(batch * widest);
    for (std::size_t i = r0; i < r1; ++i) {
      const float* x = inputs.data() + i * batch * w[0];
      for (std::size_t l = 1; l < w.size(); ++l) {
        const float* a = l == 1 ? x : act.data() + (l - 1) * batch * widest;
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, int(batch), int(w[l]), int(w[l - 1]), 1.0f, a,
                    int(w[l - 1]), params.row_data(i) + tensors[2 * (l - 1)].offset, int(w[l - 1]), 0.0f,
                    act.data() + l * batch * widest, int(w[l]));
      }
      for (std::size_t l = w.size() - 1; l >= 1; --l) {
        const float* a = l == 1 ? x : act.data() + (l - 1) * batch * widest;
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, int(w[l]), int(w[l - 1]), int(batch), 1.0f,
                    delta.data(), int(w[l]), a, int(w[l - 1]), 0.0f,
                    grads.row_data(i) + tensors[2 * (l - 1)].offset, int(w[l - 1]));
        if (l == 1) {
          break;
        }
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, int(batch), int(w[l - 1]), int(w[l]), 1.0f,
                    delta.data(), int(w[l]), params.row_data(i) + tensors[2 * (l - 1)].offset, int(w[l - 1]),
                    0.0f, back.data(), int(w[l - 1]));
      }
    }
  });
}

bool parse(int argc, char** argv, Options& o) {
  for (int k = 1; k < argc; ++k) {
    const std::string_view a = argv[k];
    if (a == "-h" || a == "--help" || k + 1 >= argc) {
      return false;
    }
    const auto v = std::strtoull(argv[++k], nullptr, 10);
    if (a == "--replicas") {
      o.replicas = v;
    } else if (a == "--batch") {
      o.batch = v;
    } else if (a == "--hidden") {
      o.hidden = v;
    } else if (a == "--iterations") {
      o.iterations = static_cast<int>(v);
    } else if (a == "--warmup") {
      o.warmup = static_cast<int>(v);
    } else if (a == "--threads") {
      o.threads = static_cast<unsigned>(v);
    } else if (a == "--block-cols") {
      o.block_cols = v;
    } else {
      return false;
    }
  }
  return o.replicas > 0 && o.batch > 0 && o.hidden > 0 && o.iterations > 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (!parse(argc, argv, o)) {
    std::fprintf(
        stderr,
        "usage: bench_numerics [--replicas N] [--batch B] [--hidden H] [--iterations I] [--warmup W]\n"
        "                      [--threads T (0: all)] [--block-cols C (0: auto)]\n");
    return 2;
  }
  const unsigned threads = dbench::core::resolve_threads(o.threads);
  const std::size_t n = o.replicas;
  const BatchedMlp mlp({784, o.hidden, 10}, threads);
  dbench::core::ReplicaStore store(n, mlp.layout());
  mlp.init(store.replica(0), 1);
  store.broadcast_params(0);
  const dbench::core::MixingMatrix w =
      dbench::core::to_mixing_matrix(dbench::topology::exponential(static_cast<int>(n)));
  const std::size_t degree = w.entries() / n - 1;

  // Random data: the benchmark measures arithmetic and memory traffic, not learning.
  std::vector<float> inputs(n * o.batch * mlp.inputs());
  std::vector<std::int32_t> labels(n * o.batch);
  std::uint64_t state = 12345;
  auto next = [&state] {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return state >> 33;
  };
  for (float& v : inputs) {
    v = static_cast<float>(next() % 256) / 255.0f;
  }
  for (std::int32_t& y : labels) {
    y = static_cast<std::int32_t>(next() % mlp.classes());
  }
  std::vector<dbench::core::BatchStats> stats(n);
  const dbench::core::MixOptions mix_options{.block_cols = o.block_cols, .threads = threads};
  const dbench::core::MixOptions streaming{.block_cols = store.param_count(), .threads = threads};
  const double lr = 0.05;

  // One phase per way of running the local step; the reference runs inside every iteration, so that both see
  // the same machine load (other processes share these cores).
  auto run_phase = [&](bool fused) {
    dbench::core::Sgd sgd({.momentum = 0.9, .weight_decay = 1e-4, .nesterov = true}, threads);
    Timings t;
    for (int it = -o.warmup; it < o.iterations; ++it) {
      auto t0 = Clock::now();
      double compute = 0.0;
      double opt = 0.0;
      if (fused) {
        mlp.train_sgd_step(store.params(), inputs, labels, o.batch, sgd, lr, store.momentum(), stats);
        compute = seconds_since(t0);
      } else {
        mlp.train_step(store.params(), inputs, labels, o.batch, store.grads(), stats);
        compute = seconds_since(t0);
        t0 = Clock::now();
        sgd.step(lr, store.params(), store.grads(), store.momentum());
        opt = seconds_since(t0);
      }
      t0 = Clock::now();
      dbench::core::mix(w.rows(), store.params(), store.mix_target(), mix_options);
      store.swap_mixed();
      const double mixing = seconds_since(t0);
      t0 = Clock::now();
      gemm_loop(mlp, store.params(), inputs, o.batch, store.grads(), threads);
      const double gemm = seconds_since(t0);
      t0 = Clock::now();
      dbench::core::mix(w.rows(), store.params(), store.mix_target(), streaming);
      const double stream = seconds_since(t0);
      if (it >= 0) {
        t.compute += compute / o.iterations;
        t.optimizer += opt / o.iterations;
        t.mixing += mixing / o.iterations;
        t.gemm += gemm / o.iterations;
        t.stream += stream / o.iterations;
      }
    }
    double loss = 0.0;
    for (const auto& b : stats) {
      loss += b.loss;
    }
    t.loss = loss / static_cast<double>(n);
    return t;
  };
  const Timings separate = run_phase(false);
  const Timings fused = run_phase(true);

  const double flops = mlp.train_flops_per_sample() * static_cast<double>(n * o.batch);
  const double row_bytes = static_cast<double>(store.param_count()) * sizeof(float);
  const double stream_bytes = static_cast<double>((degree + 2) * n) * row_bytes;
  const double mixing_bytes = 2.0 * static_cast<double>(n) * row_bytes;
  std::printf(
      "bench_numerics: %zu replicas x MLP 784-%zu-10 (P = %zu), batch %zu, exponential graph (d = %zu), "
      "%u threads, %d iterations after %d warm-up per phase\n",
      n, o.hidden, store.param_count(), o.batch, degree, threads, o.iterations, o.warmup);
  auto report = [&](const char* name, const Timings& t) {
    const double total = t.compute + t.optimizer + t.mixing;
    const double reference = t.gemm + t.stream;
    std::printf("%s (mean loss on random labels %.4f)\n", name, t.loss);
    std::printf("  iteration         %8.4f s\n", total);
    std::printf("    compute         %8.4f s  %6.1f GFLOP/s (%.2f GFLOP)%s\n", t.compute,
                flops / t.compute * 1e-9, flops * 1e-9, t.optimizer == 0.0 ? ", SGD step fused in" : "");
    if (t.optimizer > 0.0) {
      std::printf("    optimizer       %8.4f s  %6.1f GB/s (5 passes over N x P)\n", t.optimizer,
                  5.0 * static_cast<double>(n) * row_bytes / t.optimizer * 1e-9);
    }
    std::printf(
        "    mixing          %8.4f s  %6.1f GB/s moved (N x P read + written once), %.1f GB/s equivalent\n",
        t.mixing, mixing_bytes / t.mixing * 1e-9, stream_bytes / t.mixing * 1e-9);
    std::printf("  reference         %8.4f s\n", reference);
    std::printf("    sgemm loop      %8.4f s  %6.1f GFLOP/s\n", t.gemm, flops / t.gemm * 1e-9);
    std::printf("    streaming pass  %8.4f s  %6.1f GB/s ((d+1) N P reads + N P writes = %.2f GB)\n",
                t.stream, stream_bytes / t.stream * 1e-9, stream_bytes * 1e-9);
    std::printf("  ratio iteration / reference: %.2f (target <= 2); mixing / streaming pass: %.2f\n",
                total / reference, t.mixing / t.stream);
    std::printf("  target 0.3 s per iteration: %s\n", total <= 0.3 ? "met" : "NOT met");
  };
  report("train_step + Sgd::step + mix", separate);
  report("train_sgd_step (fused) + mix", fused);

  // The whole engine as `dbench simulate` runs it: Fashion-MNIST batches gathered from each replica's shard,
  // the fused local step and the topology library's exponential graph, against the same reference.
  try {
    const auto train = dbench::models::read_fashion_mnist(dbench::models::Split::train);
    const auto test = dbench::models::read_fashion_mnist(dbench::models::Split::test);
    dbench::core::NumericsSpec spec;
    spec.model.mlp_hidden = {static_cast<int>(o.hidden)};
    spec.workers = static_cast<int>(n);
    spec.batch_per_worker = static_cast<int>(o.batch);
    spec.iterations = o.iterations + o.warmup;
    spec.sgd = {.momentum = 0.9, .weight_decay = 1e-4, .nesterov = true};
    spec.threads = threads;
    dbench::core::VirtualReplicas engine(spec, train, test);
    dbench::topology::SequencePolicy policy(
        dbench::topology::GraphSequence(dbench::topology::exponential(static_cast<int>(n))));
    double engine_s = 0.0;
    double reference_s = 0.0;
    for (int it = -o.warmup; it < o.iterations; ++it) {
      auto t0 = Clock::now();
      engine.step(it + o.warmup, policy.graph_for(it + o.warmup, nullptr), false);
      const double step = seconds_since(t0);
      t0 = Clock::now();
      gemm_loop(mlp, store.params(), inputs, o.batch, store.grads(), threads);
      dbench::core::mix(w.rows(), store.params(), store.mix_target(), streaming);
      const double reference = seconds_since(t0);
      if (it >= 0) {
        engine_s += step / o.iterations;
        reference_s += reference / o.iterations;
      }
    }
    std::printf("VirtualReplicas::step on Fashion-MNIST (data gather + fused step + mix)\n");
    std::printf("  iteration         %8.4f s\n  reference         %8.4f s\n", engine_s, reference_s);
    std::printf("  ratio iteration / reference: %.2f (target <= 2)\n  target 0.3 s per iteration: %s\n",
                engine_s / reference_s, engine_s <= 0.3 ? "met" : "NOT met");
  } catch (const std::exception& e) {
    std::printf("VirtualReplicas::step: skipped (%s)\n", e.what());
  }
  return 0;
}
