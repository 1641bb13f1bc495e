// `dbench simulate` on the quickstart config keeps its numbers: each graph's metrics, replica norms and
// schedule hash to the digests recorded when the kernels were last changed on purpose. A kernel made faster
// must leave these files byte for byte as they were.
#include <cblas.h>
#include <doctest/doctest.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <string>
#include <string_view>

#include "support/files.hpp"
#include "support/recorded_kernels.hpp"
#include "support/run_dbench.hpp"

namespace {

namespace fs = std::filesystem;
using dbench::testing::cpu_runs_recorded_kernels;
using dbench::testing::fnv1a;
using dbench::testing::kRecordedCore;

/// One run of the quickstart config (16 replicas) cut to 30 iterations: its overrides and the digest of its
/// files.
struct DigestCase {
  const char* overrides;
  std::uint64_t digest;
};

// Re-recorded when schedule.csv gained its signal column and Ada its new rule: the other four algorithms'
// metrics and norms, and their schedules without that column, hash as before. Centralized re-recorded when
// identical replicas began to take their mean gradient as one large batch (a summation order of its own:
// final accuracy over 5 seeds 83.07 % against 83.15 % at 16 replicas, 86.53 % against 86.48 % at 256), and
// again when its first layer began to read the samples where they lie (core/row_gemm.hpp, one fused
// multiply-add chain per output: final accuracy over 30 seeds 83.27 % against 83.34 % at 16 replicas, 17
// seeds unchanged; over 5 seeds 86.54 % against 86.53 % at 256).
constexpr DigestCase kCases[] = {
    {"--set algorithm.kind=centralized", 0xf7d65ac598e54fe4},
    {"--set algorithm.graph=ring", 0x000e24a876edd583},
    {"--set algorithm.graph=exponential", 0x63026514bd0cfac0},
    {"--set algorithm.graph=one-peer-exponential", 0xc99d6ca7e6c41d67},
    {"--set algorithm.graph=ada", 0x93263f2388316852},
};

}  // namespace

TEST_CASE("experiments::simulate: the quickstart config's metrics are byte-identical to the recorded ones") {
  if (!cpu_runs_recorded_kernels()) {
    std::cout << DBENCH_SKIP_MARKER << " digests were recorded with OpenBLAS core " << kRecordedCore
              << ", which needs AVX-512; this machine's core is " << openblas_get_corename() << "\n";
    return;
  }
  const std::string blas_env = dbench::testing::recorded_core_environment();
  const std::string core_line = dbench::testing::recorded_core_line();
  const fs::path config = fs::path(DBENCH_SOURCE_DIR) / "experiments" / "configs" / "quickstart.toml";
  for (const DigestCase& c : kCases) {
    const std::string overrides = c.overrides;
    CAPTURE(overrides);
    const fs::path out = fs::temp_directory_path() / ("dbench-test-digest-" + std::to_string(::getpid()));
    const auto run =
        dbench::testing::run_command(blas_env + "\"" + DBENCH_EXE + "\" simulate \"" + config.string() +
                                     "\" --set train.iterations=30 --set train.eval_every=10 " + overrides +
                                     " -q --out \"" + out.string() + "\"");
    CAPTURE(run.output);
    REQUIRE(run.status == 0);
    if (run.output.find(core_line) == std::string::npos) {
      // An OpenBLAS built for one CPU only ignores OPENBLAS_CORETYPE.
      fs::remove_all(out);
      std::cout << DBENCH_SKIP_MARKER << " this OpenBLAS did not load its " << kRecordedCore
                << " kernels when asked to\n";
      return;
    }
    std::uint64_t digest = 14695981039346656037ULL;
    for (const char* file : {"metrics.csv", "replica_norms.csv", "schedule.csv"}) {
      digest = fnv1a(dbench::testing::read_file(out / file), digest);
    }
    fs::remove_all(out);
    char hex[19];
    std::snprintf(hex, sizeof hex, "0x%016llx", static_cast<unsigned long long>(digest));
    CHECK_MESSAGE(digest == c.digest, "digest " << hex);
  }
}
