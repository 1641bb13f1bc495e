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
#include "support/run_dbench.hpp"

namespace {

namespace fs = std::filesystem;

/// FNV-1a, 64 bits.
std::uint64_t fnv1a(std::string_view bytes, std::uint64_t hash = 14695981039346656037ULL) {
  for (const char c : bytes) {
    hash = (hash ^ static_cast<unsigned char>(c)) * 1099511628211ULL;
  }
  return hash;
}

/// One run of the quickstart config (16 replicas) cut to 30 iterations: its overrides and the digest of its
/// files.
struct DigestCase {
  const char* overrides;
  std::uint64_t digest;
};

// Re-recorded when schedule.csv gained its signal column and Ada its new rule: the other four algorithms'
// metrics and norms, and their schedules without that column, hash as before. Centralized re-recorded when
// identical replicas began to take their mean gradient as one large batch (a summation order of its own:
// final accuracy over 5 seeds 83.07 % against 83.15 % at 16 replicas, 86.53 % against 86.48 % at 256).
// Recorded where OpenBLAS picks its SkylakeX (AVX-512) kernels: the GEMMs' rounding and core/'s choice of
// AVX-512 kernels depend on the CPU, so other CPUs are not compared against these digests.
constexpr std::string_view kRecordedCore = "SkylakeX";

constexpr DigestCase kCases[] = {
    {"--set algorithm.kind=centralized", 0xa8ba4f032538962c},
    {"--set algorithm.graph=ring", 0x000e24a876edd583},
    {"--set algorithm.graph=exponential", 0x63026514bd0cfac0},
    {"--set algorithm.graph=one-peer-exponential", 0xc99d6ca7e6c41d67},
    {"--set algorithm.graph=ada", 0x93263f2388316852},
};

}  // namespace

TEST_CASE("experiments::simulate: the quickstart config's metrics are byte-identical to the recorded ones") {
  const std::string core = openblas_get_corename();
  if (core != kRecordedCore) {
    std::cout << DBENCH_SKIP_MARKER << " digests were recorded with OpenBLAS core " << kRecordedCore
              << "; this machine's is " << core << "\n";
    return;
  }
  const fs::path config = fs::path(DBENCH_SOURCE_DIR) / "experiments" / "configs" / "quickstart.toml";
  for (const DigestCase& c : kCases) {
    const std::string overrides = c.overrides;
    CAPTURE(overrides);
    const fs::path out = fs::temp_directory_path() / ("dbench-test-digest-" + std::to_string(::getpid()));
    const auto run = dbench::testing::run_dbench("simulate \"" + config.string() +
                                                 "\" --set train.iterations=30 --set train.eval_every=10 " +
                                                 overrides + " -q --out \"" + out.string() + "\"");
    CAPTURE(run.output);
    REQUIRE(run.status == 0);
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
