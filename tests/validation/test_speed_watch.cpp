// Load that calibrate and validate notice: the SpeedWatch's decisions with the reference kernel's clock
// injected (a machine that stays steady, idle or loaded; load that starts halfway; a passing spell; a machine
// that changed since its calibration), and the reference kernel itself on one worker.
#include <doctest/doctest.h>

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "runtime/communicator.hpp"
#include "support/approx.hpp"
#include "validation/speed_watch.hpp"

namespace {

using dbench::validation::DriftError;
using dbench::validation::SpeedWatch;

// A reference kernel's clock that returns `readings` in turn (the last one from then on), and the lines said.
struct Injected {
  explicit Injected(std::vector<double> values) : readings(std::move(values)) {}

  std::vector<double> readings;
  std::size_t next = 0;
  std::vector<std::string> said;

  SpeedWatch watch(double tolerance = 0.15, int retries = 2) {
    return SpeedWatch([this] { return readings[std::min(next++, readings.size() - 1)]; },
                      [this](const std::string& line) { said.push_back(line); },
                      {.command = "calibrate", .tolerance = tolerance, .retries = retries});
  }
};

// Runs the named phases, counting how often each one measured.
std::vector<int> run_phases(SpeedWatch& watch, int phases) {
  std::vector<int> measured(static_cast<std::size_t>(phases), 0);
  for (int p = 0; p < phases; ++p) {
    watch.phase("phase " + std::to_string(p), [&] { ++measured[static_cast<std::size_t>(p)]; });
  }
  return measured;
}

}  // namespace

TEST_CASE("validation::SpeedWatch: a steady machine, idle or under a steady load, measures everything once") {
  for (const double speed : {1e-5, 2.5e-5}) {  // idle; a core kept busy from before the start
    Injected clock({speed, speed * 1.03, speed * 0.98, speed * 1.05});
    SpeedWatch watch = clock.watch();
    watch.start();
    CHECK(run_phases(watch, 3) == std::vector<int>{1, 1, 1});
    CHECK(clock.said.empty());
    CHECK(watch.baseline() == speed);
    // Three readings at the start (their median the baseline), one after each phase.
    CHECK(watch.readings().size() == 6);
    CHECK(watch.readings()[2].after == "start");
    CHECK(watch.readings()[4].after == "phase 1");
    CHECK(watch.largest_drift() == dbench::testing::approx(0.05));
    CHECK(watch.largest_counted_drift() == dbench::testing::approx(0.05));
    CHECK(watch.settled() == dbench::testing::approx(1.04 * speed));
  }
}

TEST_CASE("validation::SpeedWatch: load started halfway is re-measured, then refused in one line") {
  // Idle through the first phase; a busy neighbour from the second on.
  Injected clock({1e-5, 1e-5, 1e-5, 1e-5, 1.6e-5});
  SpeedWatch watch = clock.watch(0.15, 2);
  watch.start();
  std::vector<int> measured(3, 0);
  watch.phase("the mlp step", [&] { ++measured[0]; });
  std::string refusal;
  try {
    watch.phase("the links", [&] { ++measured[1]; });
    watch.phase("mlp in dbench train's loop", [&] { ++measured[2]; });
  } catch (const DriftError& e) {
    refusal = e.what();
  }
  // The drifted phase ran once and was measured again twice; nothing after it ran.
  CHECK(measured == std::vector<int>{1, 3, 0});
  REQUIRE(clock.said.size() == 2);
  CHECK(clock.said[0].find("+60 % (slower) during the links") != std::string::npos);
  CHECK(clock.said[0].find("measuring it again (1 of 2)") != std::string::npos);
  CHECK(refusal.find("calibrate: the machine's speed drifted +60 % (slower) during the links") == 0);
  CHECK(refusal.find("nothing is written from mixed measurements") != std::string::npos);
  CHECK(refusal.find('\n') == std::string::npos);
}

TEST_CASE("validation::SpeedWatch: a passing spell costs one re-measurement, and no retries refuse at once") {
  Injected clock({1e-5, 1e-5, 1e-5, 1.3e-5, 1.02e-5, 1e-5});
  SpeedWatch watch = clock.watch();
  watch.start();
  CHECK(run_phases(watch, 2) == std::vector<int>{2, 1});
  CHECK(clock.said.size() == 1);
  // The re-measured phase's drifted reading is kept, and counts in the largest drift.
  CHECK(watch.readings().size() == 6);
  CHECK(watch.largest_drift() == dbench::testing::approx(0.3));
  // Of the readings that counted, the largest drift is the re-measurement's.
  CHECK(watch.largest_counted_drift() == dbench::testing::approx(0.02));
  // A faster machine drifted too (the calibration measured the neighbours).
  Injected faster({1e-5, 1e-5, 1e-5, 0.7e-5});
  SpeedWatch strict = faster.watch(0.15, 0);
  strict.start();
  CHECK_THROWS_WITH_AS(run_phases(strict, 1), doctest::Contains("-30 % (faster)"), DriftError);
}

TEST_CASE("validation::SpeedWatch: validate compares with the calibration's first reading") {
  Injected same({1.04e-5, 1.0e-5});
  SpeedWatch watch = same.watch();
  watch.start(1e-5);
  CHECK(watch.baseline() == 1e-5);
  CHECK(run_phases(watch, 1) == std::vector<int>{1});
  // Loaded since the calibration: refused before any run, after reading it again `retries` times.
  Injected loaded({1.5e-5});
  SpeedWatch late = loaded.watch();
  CHECK_THROWS_WITH_AS(late.start(1e-5), doctest::Contains("+50 % (slower) against when it was calibrated"),
                       DriftError);
  CHECK(loaded.next == 9);
  REQUIRE(loaded.said.size() == 2);
  CHECK(loaded.said[1].find("reading it again (2 of 2)") != std::string::npos);
  // A slow spell at the start passes: the second median of three is within the tolerance.
  Injected spell({1.3e-5, 1.3e-5, 1.3e-5, 1.02e-5});
  SpeedWatch passing = spell.watch();
  passing.start(1e-5);
  CHECK(spell.said.size() == 1);
  CHECK(spell.said[0].find("+30 % (slower)") != std::string::npos);
  CHECK(run_phases(passing, 1) == std::vector<int>{1});
  // Without retries, refused at once.
  Injected strict_loaded({1.5e-5});
  SpeedWatch strict = strict_loaded.watch(0.15, 0);
  CHECK_THROWS_AS(strict.start(1e-5), DriftError);
  CHECK(strict_loaded.next == 3);
}

TEST_CASE("validation::SpeedWatch: a baseline read a moment ago is named so, with its own remedy") {
  // calibrate's launcher compares fresh workers with its own workers' reading, not with a calibration.
  Injected loaded({1.5e-5});
  SpeedWatch watch([&] { return loaded.readings[std::min(loaded.next++, loaded.readings.size() - 1)]; },
                   [&](const std::string& line) { loaded.said.push_back(line); },
                   {.command = "calibrate",
                    .retries = 1,
                    .baseline_when = "its workers' reading",
                    .baseline_remedy = "nothing is written"});
  try {
    watch.start(1e-5);
    FAIL("a machine 50 % slower than the baseline was taken");
  } catch (const DriftError& e) {
    const std::string what = e.what();
    CHECK(what.find("+50 % (slower) against its workers' reading") != std::string::npos);
    CHECK(what.find("; nothing is written") != std::string::npos);
    CHECK(what.find("calibrated") == std::string::npos);
  }
  REQUIRE(loaded.said.size() == 1);
  CHECK(loaded.said[0].find("against its workers' reading (beyond the 15 % tolerance)") != std::string::npos);
}

TEST_CASE("validation::reference_kernel_seconds: a positive time on a single worker") {
  dbench::runtime::SingleWorkerCommunicator single;
  const double seconds = dbench::validation::reference_kernel_seconds(single);
  CHECK(seconds > 0.0);
  CHECK(seconds < 0.1);
}
