// Throughput of one training iteration of N virtual replicas (MLP, `dbench simulate`'s engine) for each
// communication graph, against the floor measured in the same run: the iteration's GEMMs as a plain loop of
// cblas_sgemm on cache-resident operands (the arithmetic alone), plus one read and one write of every N x P
// matrix the iteration must touch, at the copy bandwidth of the same [N, P] buffers (the memory traffic
// alone). Run at two scales, it also compares the cost per replica.
#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/aligned_buffer.hpp"
#include "core/batched_mlp.hpp"
#include "core/denormals.hpp"
#include "core/mixing.hpp"
#include "core/numerics.hpp"
#include "core/parallel.hpp"
#include "core/replica_store.hpp"
#include "models/dataset.hpp"
#include "topology/generators.hpp"
#include "topology/graph_policy.hpp"

namespace {

namespace core = dbench::core;
namespace topology = dbench::topology;
using Clock = std::chrono::steady_clock;

constexpr double kFloorTarget = 1.3;
constexpr double kPerReplicaTarget = 1.1;

struct Options {
  std::size_t replicas = 1008;
  std::size_t scale_to = 4096;
  std::size_t batch = 16;
  std::size_t hidden = 64;
  int iterations = 10;
  int warmup = 2;
  unsigned threads = 0;
  /// Only the graph of this name; empty: all.
  std::string only;
};

/// One communication pattern: how the engine is driven, and which [N, P] matrices its iteration touches.
struct GraphCase {
  const char* name;
  std::unique_ptr<topology::GraphPolicy> policy;
  int buffers;
  const char* touched;
};

std::vector<GraphCase> graph_cases(int n) {
  using topology::GraphSequence;
  using topology::SequencePolicy;
  // D-PSGD fuses each replica's SGD step into its backward pass (no gradient matrix), then mixes into the
  // mixing target. Centralized replicas stay identical: their mean gradient is one large batch's, and one
  // copy of the parameters and momentum steps, so no [N, P] matrix is read or written.
  const char* gossip = "parameters, momentum, mixing target";
  std::vector<GraphCase> cases;
  cases.push_back(
      {"exponential", std::make_unique<SequencePolicy>(GraphSequence(topology::exponential(n))), 3, gossip});
  cases.push_back({"one-peer-exponential",
                   std::make_unique<SequencePolicy>(topology::one_peer_exponential(n)), 3, gossip});
  cases.push_back({"ring", std::make_unique<SequencePolicy>(GraphSequence(topology::ring(n))), 3, gossip});
  cases.push_back({"centralized", std::make_unique<topology::AllReducePolicy>(), 0,
                   "none: identical replicas share one copy"});
  return cases;
}

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

/// Uniform random floats and labels from a fixed seed: the benchmark measures arithmetic and memory traffic,
/// not learning.
dbench::models::Dataset random_dataset(std::int64_t samples, std::uint64_t seed) {
  dbench::models::Dataset d;
  d.size = samples;
  d.channels = 1;
  d.height = 28;
  d.width = 28;
  d.classes = 10;
  d.images.resize(static_cast<std::size_t>(samples * d.sample_elements()));
  d.labels.resize(static_cast<std::size_t>(samples));
  std::uint64_t state = seed;
  auto next = [&state] {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return state >> 33;
  };
  for (float& v : d.images) {
    v = static_cast<float>(next() % 256) / 255.0f;
  }
  for (std::int32_t& y : d.labels) {
    y = static_cast<std::int32_t>(next() % 10);
  }
  return d;
}

/// The floor's two measurements, with everything they touch allocated and first touched up front.
class Floor {
 public:
  Floor(const core::BatchedMlp& mlp, std::size_t replicas, std::size_t batch, unsigned threads)
      : mlp_(mlp),
        replicas_(replicas),
        batch_(batch),
        threads_(threads),
        inputs_(replicas * batch * mlp.inputs()),
        matrix_floats_(replicas * core::ReplicaStore::padded_stride(mlp.param_count())),
        from_(matrix_floats_),
        to_(matrix_floats_) {
    const std::size_t widest = *std::max_element(mlp.widths().begin(), mlp.widths().end());
    for (unsigned t = 0; t < threads; ++t) {
      Scratch& s = scratch_.emplace_back();
      s.params = core::AlignedBuffer(mlp.param_count());
      s.grads = core::AlignedBuffer(mlp.param_count());
      s.act = core::AlignedBuffer(batch * widest * mlp.widths().size());
      s.delta = core::AlignedBuffer(batch * widest);
      s.back = core::AlignedBuffer(batch * widest);
      mlp.init(s.params.span(), 1);
    }
    std::fill(inputs_.begin(), inputs_.end(), 0.5f);
  }

  /// Bytes of one [N, P] matrix (rows padded as the replica store pads them).
  double matrix_bytes() const { return static_cast<double>(matrix_floats_ * sizeof(float)); }

  /// Seconds of every replica's training GEMMs (forward, weight and input gradients, the shapes of
  /// BatchedMlp's step) on its own inputs, with parameters and gradients in per-thread buffers that stay in
  /// cache: the arithmetic of an iteration without its [N, P] traffic.
  double gemm_seconds() {
    // Replicas from one range per thread, a thread that finishes early taking the tail of another's, as the
    // engine's local step takes them.
    core::StealingRanges ranges(replicas_, threads_);
    const auto t0 = Clock::now();
    core::parallel_for(threads_, threads_, [&](std::size_t w, std::size_t) {
      ranges.for_each(w, [&](std::size_t i, std::size_t) {
        gemms(inputs_.data() + i * batch_ * mlp_.inputs(), scratch_[w]);
      });
    });
    return seconds_since(t0);
  }

  /// Seconds to copy one [N, P] matrix into another, the matrix split over the threads (one read and one
  /// write of every byte): with memcpy and with streaming stores. glibc's memcpy writes through the cache
  /// below a size it derives from the last-level cache, which costs a read of every destination line; the
  /// floor takes the faster of the two, the best bandwidth this machine gives.
  std::pair<double, double> copy_seconds() {
    const double plain = timed_copy(
        [](float* to, const float* from, std::size_t n) { std::memcpy(to, from, n * sizeof(float)); });
    return {plain, timed_copy(core::copy_past_cache)};
  }

 private:
  struct Scratch {
    core::AlignedBuffer params, grads, act, delta, back;
  };

  template <class Copy>
  double timed_copy(Copy&& copy) {
    // 1 MB chunks (whole 64-byte lines, so that streaming stores stay aligned), spread over the threads as
    // the engine spreads its work.
    constexpr std::size_t kChunkFloats = std::size_t{1} << 18;
    const std::size_t chunks = (matrix_floats_ + kChunkFloats - 1) / kChunkFloats;
    const auto t0 = Clock::now();
    core::parallel_for_each_stealing(threads_, chunks, [&](std::size_t c, std::size_t) {
      const std::size_t begin = c * kChunkFloats;
      copy(to_.data() + begin, from_.data() + begin, std::min(matrix_floats_, begin + kChunkFloats) - begin);
    });
    return seconds_since(t0);
  }

  void gemms(const float* x, Scratch& s) const {
    const auto& w = mlp_.widths();
    const auto& tensors = mlp_.layout().tensors();
    const std::size_t widest = *std::max_element(w.begin(), w.end());
    const int b = static_cast<int>(batch_);
    for (std::size_t l = 1; l < w.size(); ++l) {
      const float* a = l == 1 ? x : s.act.data() + (l - 1) * batch_ * widest;
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, b, int(w[l]), int(w[l - 1]), 1.0f, a,
                  int(w[l - 1]), s.params.data() + tensors[2 * (l - 1)].offset, int(w[l - 1]), 0.0f,
                  s.act.data() + l * batch_ * widest, int(w[l]));
    }
    for (std::size_t l = w.size() - 1; l >= 1; --l) {
      const float* a = l == 1 ? x : s.act.data() + (l - 1) * batch_ * widest;
      cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, int(w[l]), int(w[l - 1]), b, 1.0f, s.delta.data(),
                  int(w[l]), a, int(w[l - 1]), 0.0f, s.grads.data() + tensors[2 * (l - 1)].offset,
                  int(w[l - 1]));
      if (l == 1) {
        break;
      }
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, b, int(w[l - 1]), int(w[l]), 1.0f,
                  s.delta.data(), int(w[l]), s.params.data() + tensors[2 * (l - 1)].offset, int(w[l - 1]),
                  0.0f, s.back.data(), int(w[l - 1]));
    }
  }

  const core::BatchedMlp& mlp_;
  std::size_t replicas_;
  std::size_t batch_;
  unsigned threads_;
  std::vector<float> inputs_;
  std::size_t matrix_floats_;
  core::AlignedBuffer from_;
  core::AlignedBuffer to_;
  std::vector<Scratch> scratch_;
};

/// Mean seconds per iteration of one graph at one scale, and of its floor's parts.
struct Measured {
  std::string name;
  const char* touched = "";
  int buffers = 0;
  double iteration = 0.0;
  /// The iteration's parts (VirtualReplicas::last_step_seconds()).
  double local = 0.0;
  double communication = 0.0;
  /// Off-diagonal terms of W per replica, on average (0 without gossip).
  double terms_per_replica = 0.0;
  double gemm = 0.0;
  double copy = 0.0;
  double memcpy = 0.0;

  double floor() const { return gemm + buffers * copy; }
};

/// MiB of this process's memory in transparent huge pages (Linux), -1 where that is not reported.
double huge_page_mib() {
  std::ifstream in("/proc/self/smaps_rollup");
  std::string key;
  double kib = 0.0;
  while (in >> key) {
    if (key == "AnonHugePages:" && in >> kib) {
      return kib / 1024.0;
    }
    in.ignore(1 << 12, '\n');
  }
  return -1.0;
}

std::vector<Measured> run_scale(const Options& o, std::size_t n, unsigned threads) {
  const core::BatchedMlp mlp({784, o.hidden, 10}, threads);
  Floor floor(mlp, n, o.batch, threads);
  // Two batches per replica's shard, so that the sampler reshuffles during the run as it does in training.
  const auto train = random_dataset(static_cast<std::int64_t>(n * o.batch * 2), 12345);
  const auto test = random_dataset(64, 54321);
  core::NumericsSpec spec;
  spec.model.mlp_hidden = {static_cast<int>(o.hidden)};
  spec.workers = static_cast<int>(n);
  spec.batch_per_worker = static_cast<int>(o.batch);
  spec.iterations = o.iterations + o.warmup;
  spec.sgd = {.momentum = 0.9, .weight_decay = 1e-4, .nesterov = true};
  spec.threads = threads;

  const double flops = mlp.train_flops_per_sample() * static_cast<double>(n * o.batch);
  std::printf(
      "%zu replicas x MLP 784-%zu-10 (P = %zu, an [N, P] matrix is %.0f MB), batch %zu, %u threads, "
      "%d iterations after %d warm-up per graph\n",
      n, o.hidden, mlp.param_count(), floor.matrix_bytes() * 1e-6, o.batch, threads, o.iterations, o.warmup);
  std::vector<Measured> out;
  for (GraphCase& c : graph_cases(static_cast<int>(n))) {
    if (!o.only.empty() && o.only != c.name) {
      continue;
    }
    Measured m{c.name, c.touched, c.buffers};
    // Gossip's own arithmetic, at least one multiply-add per term of W per parameter: outside the floor.
    const topology::ScheduleStep first = c.policy->graph_for(0, nullptr);
    double mixing_flops = 0.0;
    if (first.graph != nullptr) {
      const core::MixingMatrix w = core::to_mixing_matrix(*first.graph);
      mixing_flops = 2.0 * static_cast<double>(w.rows().from.size()) * static_cast<double>(mlp.param_count());
      m.terms_per_replica = static_cast<double>(core::off_diagonal_terms(w.rows())) / static_cast<double>(n);
    }
    core::VirtualReplicas engine(spec, train, test);
    // The reference runs inside every iteration, so that both see the same machine load.
    for (int it = -o.warmup; it < o.iterations; ++it) {
      const std::int64_t t = it + o.warmup;
      const topology::ScheduleStep step = c.policy->graph_for(t, nullptr);
      auto t0 = Clock::now();
      engine.step(t, step, false);
      const double iteration = seconds_since(t0);
      const core::VirtualReplicas::StepSeconds parts = engine.last_step_seconds();
      const double gemm = floor.gemm_seconds();
      const auto [memcpy_s, streaming_s] = floor.copy_seconds();
      if (it >= 0) {
        m.iteration += iteration / o.iterations;
        m.local += parts.local / o.iterations;
        m.communication += parts.communication / o.iterations;
        m.gemm += gemm / o.iterations;
        m.copy += std::min(memcpy_s, streaming_s) / o.iterations;
        m.memcpy += memcpy_s / o.iterations;
      }
    }
    const double hp = huge_page_mib();
    if (hp >= 0.0) {
      std::printf("  (%.0f MiB of this process in huge pages while running %s)\n", hp, c.name);
    }
    const double ratio = m.iteration / m.floor();
    std::printf("%s\n", c.name);
    std::printf(
        "  iteration      %8.4f s  (VirtualReplicas::step: batch gather, local step, communication)\n",
        m.iteration);
    std::printf("    local step   %8.4f s  (gather, forward, backward, SGD step%s)\n", m.local,
                first.communication == topology::Communication::all_reduce ? ", gradient all-reduce" : "");
    if (m.communication > 0.0) {
      std::printf("    communication %7.4f s  (after the local step: %s)\n", m.communication,
                  m.terms_per_replica > 0.0 ? "gossip mixing" : "global average");
    }
    std::printf("  floor          %8.4f s  = sgemm loop + %d x copy of an [N, P] matrix (%s)\n", m.floor(),
                m.buffers, c.touched);
    std::printf("    sgemm loop   %8.4f s  %6.1f GFLOP/s (%.2f GFLOP, operands in cache)\n", m.gemm,
                flops / m.gemm * 1e-9, flops * 1e-9);
    std::printf(
        "    copy         %8.4f s  %6.1f GB/s (bytes read + bytes written; faster of memcpy and streaming "
        "stores)\n",
        m.copy, 2.0 * floor.matrix_bytes() / m.copy * 1e-9);
    std::printf("  ratio iteration / floor: %.2f (target <= %.1f) %s\n", ratio, kFloorTarget,
                ratio <= kFloorTarget ? "met" : "NOT met");
    if (mixing_flops > 0.0) {
      const double mixing = mixing_flops / flops * m.gemm;
      std::printf(
          "  (not in the floor: gossip's own arithmetic, %.2f GFLOP = one multiply-add per term of W per "
          "parameter,\n   %.4f s at the sgemm loop's rate; with it the floor would be %.4f s and the ratio "
          "%.2f)\n",
          mixing_flops * 1e-9, mixing, m.floor() + mixing, m.iteration / (m.floor() + mixing));
    }
    std::printf("  (memcpy alone: %.1f GB/s; with its copy the floor would be %.4f s and the ratio %.2f)\n",
                2.0 * floor.matrix_bytes() / m.memcpy * 1e-9, m.gemm + m.buffers * m.memcpy,
                m.iteration / (m.gemm + m.buffers * m.memcpy));
    out.push_back(std::move(m));
  }
  return out;
}

bool parse(int argc, char** argv, Options& o) {
  for (int k = 1; k < argc; ++k) {
    const std::string_view a = argv[k];
    if (a == "-h" || a == "--help" || k + 1 >= argc) {
      return false;
    }
    if (a == "--graph") {
      o.only = argv[++k];
      const auto names = graph_cases(4);
      if (std::none_of(names.begin(), names.end(), [&](const GraphCase& c) { return o.only == c.name; })) {
        std::fprintf(stderr, "bench_numerics: --graph: unknown graph '%s'\n", o.only.c_str());
        return false;
      }
      continue;
    }
    const auto v = std::strtoull(argv[++k], nullptr, 10);
    if (a == "--replicas") {
      o.replicas = v;
    } else if (a == "--scale-to") {
      o.scale_to = v;
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
    } else {
      return false;
    }
  }
  return o.replicas > 0 && o.batch > 0 && o.hidden > 0 && o.iterations > 0 && o.warmup >= 0;
}

}  // namespace

int main(int argc, char** argv) {
  dbench::core::flush_denormals();  // as dbench computes
  Options o;
  if (!parse(argc, argv, o)) {
    std::fprintf(stderr,
                 "usage: bench_numerics [--replicas N (1008)] [--scale-to M (4096; 0: only N)] [--batch B]\n"
                 "                      [--hidden H] [--iterations I] [--warmup W] [--threads T (0: all)]\n"
                 "                      [--graph exponential|one-peer-exponential|ring|centralized]\n");
    return 2;
  }
  const unsigned threads = core::resolve_threads(o.threads);
  std::printf("bench_numerics: each graph's iteration against its floor, measured in the same iterations\n");
  const std::vector<Measured> base = run_scale(o, o.replicas, threads);
  if (o.scale_to == 0) {
    return 0;
  }
  const std::vector<Measured> scaled = run_scale(o, o.scale_to, threads);
  const auto per_replica_us = [](double seconds, std::size_t n) {
    return seconds / static_cast<double>(n) * 1e6;
  };
  std::printf("cost per replica, %zu against %zu replicas\n", o.scale_to, o.replicas);
  for (std::size_t g = 0; g < base.size() && g < scaled.size(); ++g) {
    const double a = per_replica_us(base[g].iteration, o.replicas);
    const double b = per_replica_us(scaled[g].iteration, o.scale_to);
    std::printf(
        "  %-21s %6.1f us against %6.1f us: %.2f (target <= %.2f) %s; floor %.1f us against %.1f us\n",
        base[g].name.c_str(), b, a, b / a, kPerReplicaTarget, b / a <= kPerReplicaTarget ? "met" : "NOT met",
        per_replica_us(scaled[g].floor(), o.scale_to), per_replica_us(base[g].floor(), o.replicas));
    const double local_a = per_replica_us(base[g].local, o.replicas);
    const double local_b = per_replica_us(scaled[g].local, o.scale_to);
    std::printf("    local step    %6.1f us against %6.1f us: %.2f\n", local_b, local_a, local_b / local_a);
    const double comm_a = per_replica_us(base[g].communication, o.replicas);
    const double comm_b = per_replica_us(scaled[g].communication, o.scale_to);
    if (comm_a > 0.0 && comm_b > 0.0) {
      std::printf("    communication %6.1f us against %6.1f us: %.2f", comm_b, comm_a, comm_b / comm_a);
      if (base[g].terms_per_replica > 0.0) {
        // Gossip reads every neighbour's parameters for each replica: its work per replica grows with the
        // degree, which the exponential graph raises with log2 N.
        std::printf(" (neighbours read per replica: %.1f against %.1f)", scaled[g].terms_per_replica,
                    base[g].terms_per_replica);
      }
      std::printf("\n");
    }
  }
  return 0;
}
