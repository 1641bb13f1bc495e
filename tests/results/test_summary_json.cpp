// summary.json's one reader: what a complete summary is, and errors that name the file and the key.
#include <doctest/doctest.h>

#include <string>
#include <utility>

#include "results/summary_json.hpp"
#include "support/files.hpp"
#include "support/temp_dir.hpp"

namespace {

namespace rs = dbench::results;

/// The summary both engines write for a finished run (the simulator adds the timing keys).
nlohmann::json complete() {
  return nlohmann::json::parse(R"({"name": "ring_w8_s1", "engine": "sim", "algorithm": "dpsgd",
    "graph": "ring", "workers": 8, "iterations": 10, "final_test_accuracy": 0.75,
    "best_test_accuracy": 0.8, "final_test_loss": 0.6, "seconds_per_iteration": 0.01,
    "samples_per_second": 1000.0, "wall_seconds": 2.5, "scaling_efficiency": 0.9})");
}

std::string error_of(const std::string& text) {
  try {
    rs::parse_summary_json(text, "runs/x/summary.json");
  } catch (const rs::SummaryJsonError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("results::summary_json: a complete summary reads into typed fields") {
  const auto s = rs::parse_summary_json(complete().dump(), "summary.json");
  CHECK(s.engine == "sim");
  CHECK(s.graph == "ring");
  CHECK(s.workers == 8);
  CHECK(s.iterations == 10);
  CHECK(s.final_test_accuracy == 0.75);
  CHECK(*s.final_test_loss == 0.6);
  CHECK(*s.scaling_efficiency == 0.9);
  CHECK_FALSE(s.simulated_seconds.has_value());
  CHECK(s.name == "ring_w8_s1");

  // A loss that was not finite is written as null.
  auto diverged = complete();
  diverged["final_test_loss"] = nullptr;
  CHECK_FALSE(rs::parse_summary_json(diverged.dump(), "summary.json").final_test_loss.has_value());
}

TEST_CASE("results::summary_json: a damaged or incomplete summary is one error naming the file and key") {
  const auto without = [](const char* key) {
    auto json = complete();
    json.erase(key);
    return json.dump();
  };
  const auto with = [](const char* key, nlohmann::json value) {
    auto json = complete();
    json[key] = std::move(value);
    return json.dump();
  };
  const std::pair<std::string, std::string> cases[] = {
      {"{\"final_test_accuracy\": 0.5, garbage", "not valid JSON"},
      {"", "not valid JSON"},
      {"[1, 2]", "not a JSON object"},
      {without("final_test_accuracy"), "no key 'final_test_accuracy'"},
      {without("engine"), "no key 'engine'"},
      {with("final_test_accuracy", nullptr), "key 'final_test_accuracy' is null, not a finite number"},
      {with("final_test_accuracy", "high"), "key 'final_test_accuracy' is a string, not a finite number"},
      {with("final_test_accuracy", 1.5), "key 'final_test_accuracy' is 1.5, not a fraction in [0, 1]"},
      {with("workers", 8.5), "key 'workers' is 8.5, not a whole number"},
      {with("workers", 0), "key 'workers' is 0, not a whole number >= 1"},
      {with("graph", 3), "key 'graph' is 3, not a string"},
      {with("wall_seconds", nullptr), "key 'wall_seconds' is null, not a finite number"},
      {with("scaling_efficiency", "fast"), "key 'scaling_efficiency' is a string, not a number or null"},
  };
  for (const auto& [text, expected] : cases) {
    CAPTURE(text);
    const std::string message = error_of(text);
    CAPTURE(message);
    CHECK(message.starts_with("runs/x/summary.json: "));
    CHECK(message.find(expected) != std::string::npos);
    CHECK(message.find('\n') == std::string::npos);
  }
}

TEST_CASE("results::summary_json: a missing file or a directory is an error naming the path") {
  const dbench::testing::TempDir temp;
  CHECK_THROWS_WITH_AS(rs::read_summary_json(temp.path() / "summary.json"),
                       doctest::Contains("summary.json: no such file"), rs::SummaryJsonError);
  std::filesystem::create_directory(temp.path() / "summary.json");
  CHECK_THROWS_WITH_AS(rs::read_summary_json(temp.path() / "summary.json"),
                       doctest::Contains("summary.json: not a regular file"), rs::SummaryJsonError);
}

TEST_CASE("results::summary_json: a timing-only summary has no accuracy, and says so to be accepted") {
  auto timed = complete();
  timed["timing_only"] = true;
  timed["final_test_accuracy"] = nullptr;
  timed.erase("best_test_accuracy");
  timed.erase("final_test_loss");
  timed["timing_model"] = "resnet50";
  timed["platform"] = "frontier";
  timed["timing_model_parameters"] = 25557032;
  const auto s = rs::parse_summary_json(timed.dump(), "summary.json");
  CHECK(s.timing_only);
  CHECK_FALSE(s.final_test_accuracy.has_value());
  CHECK_FALSE(s.best_test_accuracy.has_value());
  CHECK(*s.timing_model_parameters == 25557032);
  CHECK(*s.timing_model == "resnet50");
  CHECK(*s.platform == "frontier");
  CHECK_FALSE(rs::parse_summary_json(complete().dump(), "summary.json").timing_only);

  // A null accuracy without the flag is still incomplete; an accuracy with it is another kind of run.
  auto unflagged = timed;
  unflagged.erase("timing_only");
  CHECK(error_of(unflagged.dump()).find("key 'final_test_accuracy' is null") != std::string::npos);
  auto trained = timed;
  trained["best_test_accuracy"] = 0.5;
  CHECK(error_of(trained.dump()).find("key 'best_test_accuracy' is 0.5, not null") != std::string::npos);
  auto flag = timed;
  flag["timing_only"] = "yes";
  CHECK(error_of(flag.dump()).find("key 'timing_only' is a string, not true or false") != std::string::npos);
  auto size = timed;
  size["timing_model_parameters"] = 0;
  CHECK(error_of(size.dump()).find("timing_model_parameters") != std::string::npos);
}
