// Load that calibrate and validate notice: the SpeedWatch's decisions with the reference kernel's clock
// injected (a machine that stays steady, idle or loaded; load that starts halfway; a passing spell; a machine
// that changed since its calibration), and the reference kernel itself on one worker.
#include <doctest/doctest.h>

#include <chrono>
#include <cstddef>
#include <limits>
#include <optional>
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
    return watch_with({.command = "calibrate", .tolerance = tolerance, .retries = retries});
  }
  SpeedWatch watch_with(dbench::validation::SpeedWatchOptions options) {
    return SpeedWatch(
        [this] {
          return dbench::validation::Speed{.kernel_s = readings[std::min(next++, readings.size() - 1)]};
        },
        [this](const std::string& line) { said.push_back(line); }, std::move(options));
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

TEST_CASE("validation::SpeedWatch: a drift waits for the speed to come back before measuring again") {
  // A slow spell that lasts three readings after the phase that ended in it; the re-measurement is taken once
  // the speed is back, and the waiting readings (the spell) are not kept.
  Injected clock({1e-5, 1e-5, 1e-5, 1.75e-5, 1.75e-5, 1.7e-5, 1.04e-5, 1.0e-5});
  std::vector<double> pauses;
  SpeedWatch watch = clock.watch_with({.command = "calibrate",
                                       .settle_wait_s = 90.0,
                                       .settle_poll_s = 5.0,
                                       .pause = [&pauses](double seconds) { pauses.push_back(seconds); }});
  watch.start();
  CHECK(run_phases(watch, 1) == std::vector<int>{2});
  CHECK(pauses == std::vector<double>{5.0, 5.0, 5.0});
  REQUIRE(clock.said.size() == 2);
  CHECK(clock.said[0].find("+75 % (slower) during phase 0") != std::string::npos);
  CHECK(clock.said[0].find("; waiting up to 90 s for it to come back, then measuring it again (1 of 2)") !=
        std::string::npos);
  CHECK(clock.said[1].find("calibrate: the machine's speed is back within the tolerance after ") == 0);
  CHECK(clock.said[1].find(" s (3 readings, one every 5 s: reference kernel 1.040e-05 s)") !=
        std::string::npos);
  // Three at the start, the drifted one, the re-measurement's.
  CHECK(watch.readings().size() == 5);
  CHECK(watch.settled() == dbench::testing::approx(1e-5));

  // A load that stays: every wait runs out (18 readings), then the refusal says it waited.
  Injected loaded({1e-5, 1e-5, 1e-5, 1.6e-5});
  std::vector<double> waited;
  SpeedWatch stays =
      loaded.watch_with({.command = "calibrate", .settle_wait_s = 90.0, .pause = [&waited](double seconds) {
                           waited.push_back(seconds);
                         }});
  stays.start();
  CHECK_THROWS_WITH_AS(
      run_phases(stays, 1),
      doctest::Contains("and stayed so through 2 re-measurements, each after waiting up to 90 s "
                        "for it to come back; nothing is written"),
      DriftError);
  CHECK(waited.size() == 36);
  REQUIRE(loaded.said.size() == 4);
  CHECK(loaded.said[1].find("calibrate: the machine's speed is not back: +60 % (slower) after ") == 0);
  CHECK(
      loaded.said[1].find(" s (18 readings, one every 5 s: reference kernel 1.600e-05 s); measuring it again "
                          "all the same") != std::string::npos);

  // Validate's start against its calibration: a passing spell is waited out, then read again.
  Injected passing({1.5e-5, 1.5e-5, 1.5e-5, 1.6e-5, 1.02e-5, 1e-5, 1e-5, 1e-5});
  std::vector<double> paused;
  SpeedWatch validate =
      passing.watch_with({.command = "validate", .settle_wait_s = 10.0, .pause = [&paused](double seconds) {
                            paused.push_back(seconds);
                          }});
  validate.start(1e-5);
  CHECK(paused.size() == 2);
  REQUIRE(passing.said.size() == 2);
  CHECK(passing.said[0].find("waiting up to 10 s for it to come back, then reading it again (1 of 2)") !=
        std::string::npos);
  CHECK(passing.said[1].find("(2 readings, one every 5 s: reference kernel 1.020e-05 s)") !=
        std::string::npos);
  CHECK(validate.baseline() == 1e-5);
}

TEST_CASE(
    "validation::SpeedWatch: first readings taken in a slow spell are a SlowStart once the wait shows it") {
  // The first readings in a spell (1.7e-5 s); the machine faster after the first phase and through the wait.
  Injected spell({1.7e-5, 1.7e-5, 1.7e-5, 1.0e-5});
  std::vector<double> pauses;
  SpeedWatch watch =
      spell.watch_with({.command = "calibrate", .settle_wait_s = 20.0, .pause = [&pauses](double seconds) {
                          pauses.push_back(seconds);
                        }});
  watch.start();
  std::vector<int> measured(1, 0);
  CHECK_THROWS_WITH_AS(
      watch.phase("the links", [&] { ++measured[0]; }),
      doctest::Contains("calibrate: the machine's speed drifted -41 % (faster) during the links "
                        "(reference kernel 1.700e-05 s at the start, 1.000e-05 s after it, beyond "
                        "the 15 % tolerance) and stayed so through a wait of up to 20 s: the "
                        "first readings timed a slow spell"),
      dbench::validation::SlowStart);
  // Measured once, then one wait of 4 readings; not measured again against the spell's readings.
  CHECK(measured[0] == 1);
  CHECK(pauses.size() == 4);
  REQUIRE(spell.said.size() == 2);
  CHECK(spell.said[1].find("the first readings timed a slow spell, and what was measured against them is "
                           "measured again from the start") != std::string::npos);

  // A machine that swings from faster to slower through the wait shows no slow start: measured again.
  Injected swing({1.7e-5, 1.7e-5, 1.7e-5, 1.0e-5, 2.2e-5, 2.2e-5, 2.2e-5, 2.2e-5, 1.7e-5});
  SpeedWatch swinging =
      swing.watch_with({.command = "calibrate", .settle_wait_s = 20.0, .pause = [](double) {}});
  swinging.start();
  CHECK(run_phases(swinging, 1) == std::vector<int>{2});
  REQUIRE(swing.said.size() == 2);
  CHECK(swing.said[1].find("is not back: +29 % (slower) after ") != std::string::npos);
  CHECK(swing.said[1].find("; measuring it again all the same") != std::string::npos);

  // Without a wait, or against a calibration's readings (validate), a faster machine is measured again and
  // then refused as any drift.
  Injected at_once({1.7e-5, 1.7e-5, 1.7e-5, 1.0e-5});
  SpeedWatch no_wait = at_once.watch();
  no_wait.start();
  try {
    run_phases(no_wait, 1);
    FAIL("a drift that stays is refused");
  } catch (const dbench::validation::SlowStart&) {
    FAIL("no SlowStart without a wait");
  } catch (const DriftError& e) {
    CHECK(std::string(e.what()).find("-41 % (faster)") != std::string::npos);
  }
  Injected given_spell({1.0e-5, 1.0e-5, 1.0e-5, 0.6e-5});
  SpeedWatch faster =
      given_spell.watch_with({.command = "validate", .settle_wait_s = 10.0, .pause = [](double) {}});
  faster.start(1.0e-5);
  try {
    run_phases(faster, 1);
    FAIL("a drift that stays is refused");
  } catch (const dbench::validation::SlowStart&) {
    FAIL("a calibration's readings are not a slow start");
  } catch (const DriftError& e) {
    CHECK(std::string(e.what()).find("-40 % (faster)") != std::string::npos);
  }
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
  SpeedWatch watch(
      [&] {
        return dbench::validation::Speed{
            .kernel_s = loaded.readings[std::min(loaded.next++, loaded.readings.size() - 1)]};
      },
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

namespace {

// Readings of both parts, the reference kernel's and the model's step, returned in turn.
struct InjectedBoth {
  explicit InjectedBoth(std::vector<dbench::validation::Speed> values) : readings(std::move(values)) {}

  std::vector<dbench::validation::Speed> readings;
  std::size_t next = 0;
  std::vector<std::string> said;

  SpeedWatch watch(double step_tolerance = 0.06, int retries = 2) {
    return SpeedWatch([this] { return readings[std::min(next++, readings.size() - 1)]; },
                      [this](const std::string& line) { said.push_back(line); },
                      {.command = "validate", .step_tolerance = step_tolerance, .retries = retries});
  }
};

}  // namespace

TEST_CASE(
    "validation::SpeedWatch: the model's step drifting with the kernel steady is re-measured, then refused") {
  // The kernel within 2 %; the step 10 % slower after the second phase, beyond its 6 % tolerance.
  InjectedBoth clock({{1e-5, 1e-4}, {1e-5, 1.01e-4}, {1.02e-5, 0.99e-4}, {1e-5, 1.02e-4}, {1.01e-5, 1.1e-4}});
  SpeedWatch watch = clock.watch();
  watch.start();
  CHECK(watch.step_baseline() == 1e-4);
  std::vector<int> measured(2, 0);
  watch.phase("round 1", [&] { ++measured[0]; });
  CHECK_THROWS_WITH_AS(
      watch.phase("round 2", [&] { ++measured[1]; }),
      doctest::Contains("validate: the model's step drifted +10 % (slower) during round 2 (step "
                        "1.000e-04 s at the start, 1.100e-04 s after it, beyond the 6 % tolerance)"),
      DriftError);
  CHECK(measured == std::vector<int>{1, 3});
  REQUIRE(clock.said.size() == 2);
  CHECK(clock.said[0].find("the model's step drifted +10 % (slower) during round 2") != std::string::npos);
  // The kernel's drifts and the step's are kept apart.
  CHECK(watch.largest_drift() == dbench::testing::approx(0.02));
  CHECK(watch.largest_step_drift() == dbench::testing::approx(0.1));
  CHECK(watch.largest_counted_step_drift() == dbench::testing::approx(0.02));
  CHECK(watch.readings().back().step_seconds == 1.1e-4);
}

TEST_CASE("validation::SpeedWatch: validate compares the step with the calibration's, and the kernel first") {
  // The machine runs the model's step 8 % faster than when it was calibrated: refused after two re-readings.
  InjectedBoth faster({{1e-5, 0.92e-4}});
  SpeedWatch watch = faster.watch();
  CHECK_THROWS_WITH_AS(watch.start(1e-5, 1e-4),
                       doctest::Contains("validate: the model's step runs -8 % (faster) against when it was "
                                         "calibrated (step 1.000e-04 s then, 9.200e-05 s now"),
                       DriftError);
  CHECK(faster.next == 9);
  // Within both tolerances: taken, and the step's median is settled.
  InjectedBoth steady({{1e-5, 1.03e-4}, {1.1e-5, 0.98e-4}, {1e-5, 1.01e-4}, {1e-5, 1.05e-4}});
  SpeedWatch ok = steady.watch();
  ok.start(1e-5, 1e-4);
  CHECK(ok.step_baseline() == 1e-4);
  CHECK(run_phases(ok, 1) == std::vector<int>{1});
  CHECK(steady.said.empty());
  CHECK(ok.settled_step() == dbench::testing::approx(1.02e-4));
  // Both beyond: the kernel (another process's load) is named.
  InjectedBoth loaded({{1.5e-5, 1.5e-4}});
  SpeedWatch both = loaded.watch(0.06, 0);
  CHECK_THROWS_WITH_AS(both.start(1e-5, 1e-4), doctest::Contains("the machine runs +50 % (slower)"),
                       DriftError);
  // No step read (a LibTorch worker, an older calibration): only the kernel decides.
  InjectedBoth kernel_only({{1e-5, 0.0}});
  SpeedWatch unread = kernel_only.watch();
  unread.start(1e-5, 1e-4);
  CHECK(run_phases(unread, 1) == std::vector<int>{1});
  CHECK(unread.settled_step() == 0.0);
  // A step tolerance of infinity (calibrate's loops) records the step and decides by the kernel alone.
  InjectedBoth recorded({{1e-5, 1e-4}, {1e-5, 1e-4}, {1e-5, 1e-4}, {1e-5, 1.3e-4}});
  SpeedWatch lax = recorded.watch(std::numeric_limits<double>::infinity());
  lax.start();
  lax.note("loops, round 1 of 5");
  CHECK(run_phases(lax, 1) == std::vector<int>{1});
  CHECK(lax.readings()[3].after == "loops, round 1 of 5");
  CHECK(lax.largest_step_drift() == dbench::testing::approx(0.3));
}

TEST_CASE("validation::barrier_rounds_seconds: seconds per call of a body, in rounds of about 100 ms") {
  dbench::runtime::SingleWorkerCommunicator single;
  int calls = 0;
  const double seconds = dbench::validation::barrier_rounds_seconds(single, [&] {
    ++calls;
    const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(500);
    while (std::chrono::steady_clock::now() < until) {
    }
  });
  // Never under the body's own time; the rounds sized from a 10 ms one to last about 100 ms each.
  CHECK(seconds >= 5e-4);
  CHECK(calls >= 9 * 100);
}

TEST_CASE("validation::reference_kernel_seconds: a positive time on a single worker") {
  dbench::runtime::SingleWorkerCommunicator single;
  const double seconds = dbench::validation::reference_kernel_seconds(single);
  CHECK(seconds > 0.0);
  CHECK(seconds < 0.1);
}

TEST_CASE("validation::measure_with_recalibration: a machine that moved and stayed is calibrated again") {
  using dbench::validation::DriftSeen;
  // The calibration read 1.0; the machine runs at 1.0 through round 1 of 2, then at 1.3 from round 2 on.
  Injected clock({1.0, 1.0, 1.0, 1.0, 1.3});
  double calibrated = 1.0;
  std::optional<SpeedWatch> watch;
  int rounds = 0;
  std::vector<std::pair<int, DriftSeen>> recalibrated;
  std::vector<std::string> findings;
  const auto start = [&] {
    watch.emplace(clock.watch());
    watch->start(calibrated);
  };
  const auto measure = [&] {
    rounds = 0;                                               // what an earlier attempt measured is replaced
    rounds = static_cast<int>(run_phases(*watch, 2).size());  // throws DriftError past the retries
  };
  const auto recalibrate = [&](int n, DriftSeen seen, const std::string& finding) {
    recalibrated.emplace_back(n, seen);
    findings.push_back(finding);
    calibrated = 1.3;  // the new calibration reads the machine as it is now
  };
  SUBCASE("calibrated again once, then every round measured again against it") {
    CHECK(dbench::validation::measure_with_recalibration(2, start, measure, recalibrate) == 1);
    CHECK(recalibrated == std::vector<std::pair<int, DriftSeen>>{{1, DriftSeen::while_measuring}});
    // The line that goes on says what the last reading found: the drift, the phase and both readings.
    REQUIRE(findings.size() == 1);
    CHECK(findings[0].find("drifted +30 % (slower) during") != std::string::npos);
    CHECK(findings[0].find("1.000e+00 s at the start, 1.300e+00 s after it") != std::string::npos);
    CHECK(findings[0].find("beyond") == std::string::npos);
    CHECK(rounds == 2);
    CHECK(watch->baseline() == dbench::testing::approx(1.3));
    CHECK(watch->readings().size() == 3 + 2);  // the last attempt's: three at the start, one per round
  }
  SUBCASE("a given calibration is not calibrated again: the drift refuses") {
    CHECK_THROWS_AS(dbench::validation::measure_with_recalibration(0, start, measure, recalibrate),
                    DriftError);
    CHECK(recalibrated.empty());
    CHECK(rounds == 0);
  }
  SUBCASE("a machine that differs at the start is calibrated again before any round") {
    calibrated = 0.7;
    clock.readings = {1.3};
    CHECK(dbench::validation::measure_with_recalibration(2, start, measure, recalibrate) == 1);
    CHECK(recalibrated == std::vector<std::pair<int, DriftSeen>>{{1, DriftSeen::at_start}});
    REQUIRE(findings.size() == 1);
    CHECK(findings[0].find("runs +86 % (slower) against") != std::string::npos);
    CHECK(rounds == 2);
  }
  SUBCASE("a machine that keeps moving refuses after --retries calibrations") {
    // Each calibration reads 1.3, but the machine is back at 1.0 whenever the rounds run.
    clock.readings = {1.0};
    calibrated = 1.3;
    const auto stale = [&](int n, DriftSeen seen, const std::string&) { recalibrated.emplace_back(n, seen); };
    CHECK_THROWS_AS(dbench::validation::measure_with_recalibration(2, start, measure, stale), DriftError);
    CHECK(recalibrated ==
          std::vector<std::pair<int, DriftSeen>>{{1, DriftSeen::at_start}, {2, DriftSeen::at_start}});
  }
}
