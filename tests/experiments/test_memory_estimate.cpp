// A run that cannot fit in memory is refused before its first large allocation, naming the key to change.
#include <doctest/doctest.h>
#include <fmt/core.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <string_view>

#include "experiments/config.hpp"
#include "experiments/memory_estimate.hpp"
#include "support/approx.hpp"
#include "support/run_dbench.hpp"
#include "support/temp_dir.hpp"

using dbench::testing::one_line;

namespace {

namespace de = dbench::experiments;
namespace fs = std::filesystem;
using dbench::testing::run_dbench;
using dbench::testing::TempDir;

}  // namespace

TEST_CASE("experiments::memory_estimate: the replica matrices are the [N, P] float matrices the run needs") {
  de::ExperimentConfig config;
  config.train.workers = 1008;
  config.train.iterations = 100;
  config.train.eval_every = 50;
  const de::NumericsShape mlp{50890, 784, 4};  // 784-64-10: 784 x 64 + 64 + 64 x 10 + 10
  // Gossip on the MLP: parameters, momentum and the mixing buffer.
  const auto estimate = de::simulate_memory(config, &mlp, false);
  const auto& matrices = estimate.largest();
  CHECK(matrices.key == "train.workers");
  CHECK(matrices.bytes == dbench::testing::approx((3.0 * 1008 + 1) * 50890 * 4));
  CHECK(estimate.total_bytes() > matrices.bytes);
  // Besides them, mostly Fashion-MNIST's 60,000 images (188 MB).
  CHECK(estimate.total_bytes() < 1.2 * matrices.bytes + 60000.0 * 784 * 4);
  // Centralized training mixes nothing; a model without a fused step also needs gradients and the batches.
  config.algorithm.kind = "centralized";
  CHECK(de::simulate_memory(config, &mlp, false).largest().bytes ==
        dbench::testing::approx((2.0 * 1008 + 1) * 50890 * 4));
  config.algorithm.kind = "dpsgd";
  config.train.model = "lenet";
  const de::NumericsShape lenet{61706, 784, 10};
  const auto unfused = de::simulate_memory(config, &lenet, false);
  CHECK(unfused.largest().bytes == dbench::testing::approx((4.0 * 1008 + 1) * 61706 * 4));
  CHECK(unfused.total_bytes() > unfused.largest().bytes + 1008 * 16 * 784 * 4);
  config.train.model = "mlp";

  // Timing alone holds per-iteration records only, and --per-gpu-trace one more per GPU.
  config.train.iterations = 1'000'000;
  const auto timing = de::simulate_memory(config, nullptr, false);
  CHECK(timing.largest().key == "train.iterations");
  CHECK(timing.total_bytes() > 1e8);
  CHECK(timing.total_bytes() < 1e9);
  CHECK(de::simulate_memory(config, nullptr, true).total_bytes() > 1008 * timing.total_bytes() / 10);

  CHECK_NOTHROW(de::check_memory(estimate, 1e12));
  CHECK_THROWS_WITH_AS(de::check_memory(estimate, 5e8),
                       doctest::Contains("train.workers: this run needs about 807 MB"), de::MemoryError);
}

TEST_CASE("experiments::memory_estimate: augmented copies add sample indices, never copies of the images") {
  de::ExperimentConfig config;
  config.train.workers = 1008;
  config.train.iterations = 100;
  const de::NumericsShape mlp{50890, 784, 4};
  const auto plain = de::simulate_memory(config, &mlp, false);
  config.train.augment_copies = 20;
  const auto augmented = de::simulate_memory(config, &mlp, false);
  // 19 more views of 60,000 images: their labels, shard indices and per-epoch orders (24 bytes a sample),
  // 27 MB, where 19 copies of the images would be 3.6 GB.
  CHECK(augmented.total_bytes() - plain.total_bytes() == dbench::testing::approx(19.0 * 60000 * 24));
  CHECK(augmented.largest().key == "train.workers");
}

TEST_CASE("experiments::memory_estimate: the synthetic task holds its labels, not its samples") {
  de::ExperimentConfig config;
  config.train.workers = 64;
  config.train.iterations = 100;
  config.train.dataset = "synthetic";
  config.train.synthetic_samples = 12'000'000;
  const de::NumericsShape mlp{2762, 32, 4};
  const auto estimate = de::simulate_memory(config, &mlp, false);
  const auto part = [&](std::string_view what) {
    const auto at = std::find_if(estimate.parts.begin(), estimate.parts.end(),
                                 [&](const de::MemoryPart& p) { return p.what.starts_with(what); });
    REQUIRE(at != estimate.parts.end());
    return at->bytes;
  };
  // 12 million labels (48 MB), where their 32 inputs each would be 1.5 GB; and the indices (288 MB).
  CHECK(part("the training set's labels") == dbench::testing::approx(12e6 * 4));
  CHECK(part("the training set's sample indices") == dbench::testing::approx(12e6 * 24));
  CHECK(estimate.total_bytes() < 0.4e9);
}

TEST_CASE("experiments::memory_estimate: simulate refuses a run larger than memory with one line, up front") {
  const TempDir temp;
  const fs::path out = temp.path() / "out";
  const struct {
    std::string arguments;
    std::string expected;
  } cases[] = {
      {"--set train.workers=3000 --set train.mlp_hidden=[4096]", "train.workers: this run needs about"},
      {"--timing-only --set train.iterations=2147483647", "train.iterations: this run needs about"},
      {"--timing-only --per-gpu-trace --set train.workers=1008 --set train.iterations=100000000",
       "train.iterations: this run needs about"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.arguments);
    // A limit below any machine's memory keeps the case the same everywhere.
    const auto result = dbench::testing::run_command(fmt::format(
        "DBENCH_MEMORY_LIMIT=8e9 \"{}\" simulate -q {} --out \"{}\"", DBENCH_EXE, c.arguments, out.string()));
    CAPTURE(result.output);
    CHECK(result.status != 0);
    CHECK(one_line(result.output));
    CHECK(result.output.find(c.expected) != std::string::npos);
    CHECK(result.output.find("bad_alloc") == std::string::npos);
    CHECK(!fs::exists(out));
  }
  // A run that fits is not refused; a malformed limit is named.
  const auto fits = dbench::testing::run_command(fmt::format(
      "DBENCH_MEMORY_LIMIT=8e9 \"{}\" simulate -q --timing-only --out \"{}\"", DBENCH_EXE, out.string()));
  CAPTURE(fits.output);
  CHECK(fits.status == 0);
  const auto malformed = dbench::testing::run_command(
      fmt::format("DBENCH_MEMORY_LIMIT=lots \"{}\" simulate -q --timing-only --out \"{}\"", DBENCH_EXE,
                  (temp.path() / "other").string()));
  CHECK(malformed.status != 0);
  CHECK(malformed.output.find("DBENCH_MEMORY_LIMIT") != std::string::npos);
}
