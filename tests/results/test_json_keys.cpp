// The key-table mechanism on a fixture record, and summary.json's table: one line of a table reaches the
// writer, the reader and the documented keys; a sim, a runtime and a timing-only summary survive a round
// trip byte for byte.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "results/json_keys.hpp"
#include "results/summary_json.hpp"

namespace rs = dbench::results;

namespace {

struct Fixture {
  std::string name;
  std::int64_t count = 0;
  double value = 0.0;
  std::optional<double> extra;
};

rs::JsonKeyTable<Fixture> fixture_table(bool with_extra) {
  using R = Fixture;
  rs::JsonKeyTable<R> table = {
      rs::text_key<R>("name", "a name", &R::name),
      rs::whole_key<R>("count", "a count", &R::count, 0),
      rs::finite_key<R>("value", "a value", &R::value),
  };
  if (with_extra) {
    table.push_back(rs::optional_number_key<R>("extra", "one more key", &R::extra));
  }
  return table;
}

bool documents(const std::vector<rs::KeyDoc>& docs, std::string_view name) {
  return std::any_of(docs.begin(), docs.end(), [&](const rs::KeyDoc& d) { return d.name == name; });
}

// A summary as dbench simulate writes it for a trained run.
rs::SummaryJson sim_summary() {
  rs::SummaryJson s;
  s.name = "ring_w8_s1";
  s.engine = "sim";
  s.algorithm = "dpsgd";
  s.graph = "ring";
  s.workers = 8;
  s.iterations = 10;
  s.final_test_accuracy = 0.75;
  s.best_test_accuracy = 0.8;
  s.final_test_loss = 0.6;
  s.seconds_per_iteration = 0.01;
  s.samples_per_second = 1000.0;
  s.wall_seconds = 2.5;
  s.model = "mlp";
  s.dataset = "synthetic";
  s.train_samples = 4096;
  s.augment_copies = 1;
  s.parameters_per_worker = 1234;
  s.gossip_messages = 160;
  s.scaling_efficiency = 0.9;
  s.single_gpu_seconds_per_iteration = 0.008;
  s.bytes_per_gpu_per_iteration = 203560.0;
  s.simulated_seconds = 0.1;
  s.platform = "frontier";
  s.fabric = "fat-tree";
  s.timing_model = "resnet50";
  s.timing_model_parameters = 25557032;
  s.timing_batch_per_gpu = 32;
  s.allreduce = "auto";
  s.allreduce_algorithms = std::map<std::string, std::string>{{"1024", "ring/simple"}, {"512", "tree/ll"}};
  s.straggler_gpus = std::vector<std::int64_t>{2, 5};
  s.fidelity = "flow";
  s.timing_simulations = 3;
  s.timing_wall_seconds = 0.25;
  s.numerics_wall_seconds_per_iteration = 0.125;
  return s;
}

}  // namespace

TEST_CASE("results::json_keys: one more key reaches the writer, the reader and the documentation") {
  const Fixture record{"ring", 3, 203560.0, 2.25};
  const std::string without = rs::write_json(fixture_table(false), record);
  CHECK(without == "{\n  \"count\": 3,\n  \"name\": \"ring\",\n  \"value\": 203560.0\n}\n");
  const std::string with = rs::write_json(fixture_table(true), record);
  CHECK(with == "{\n  \"count\": 3,\n  \"extra\": 2.25,\n  \"name\": \"ring\",\n  \"value\": 203560.0\n}\n");
  CHECK(rs::read_json(fixture_table(true), with, "f.json").extra == 2.25);
  CHECK_FALSE(rs::read_json(fixture_table(true), without, "f.json").extra.has_value());
  CHECK(documents(rs::documented_keys(fixture_table(true)), "extra"));
  CHECK_FALSE(documents(rs::documented_keys(fixture_table(false)), "extra"));
  // A key the table does not name is accepted; a key it names must have its type.
  CHECK(rs::read_json(fixture_table(false), with, "f.json").count == 3);
  CHECK_THROWS_WITH_AS(
      rs::read_json(fixture_table(true), R"({"name": "x", "count": 1, "value": 1, "extra": "a"})", "f.json"),
      doctest::Contains("f.json: key 'extra' is a string, not a number or null"), rs::JsonKeyError);
  // A value that was not finite is written as null.
  const Fixture diverged{"x", 0, 1.0, std::numeric_limits<double>::quiet_NaN()};
  CHECK(rs::write_json(fixture_table(true), diverged).find("\"extra\": null") != std::string::npos);
}

TEST_CASE("results::summary_json: a sim, a runtime and a timing-only summary survive a round trip") {
  const rs::SummaryJson sim = sim_summary();
  const std::string sim_text = rs::write_summary_json(sim);
  CHECK(sim_text.find("\"bytes_per_gpu_per_iteration\": 203560.0") != std::string::npos);
  CHECK(sim_text.find(
            "\"allreduce_algorithms\": {\n    \"1024\": \"ring/simple\",\n    \"512\": \"tree/ll\"\n  }") !=
        std::string::npos);
  CHECK(sim_text.find("\"straggler_gpus\": [\n    2,\n    5\n  ]") != std::string::npos);
  CHECK(sim_text.find("timing_only") == std::string::npos);
  const rs::SummaryJson sim_back = rs::parse_summary_json(sim_text, "summary.json");
  CHECK(*sim_back.timing_model_parameters == 25557032);
  CHECK(sim_back.straggler_gpus == sim.straggler_gpus);
  CHECK(rs::write_summary_json(sim_back) == sim_text);

  rs::SummaryJson runtime;
  runtime.name = "r";
  runtime.engine = "runtime";
  runtime.algorithm = "allreduce";
  runtime.graph = "complete";
  runtime.workers = 2;
  runtime.iterations = 4;
  runtime.final_test_accuracy = 0.5;
  runtime.best_test_accuracy = 0.5;
  runtime.final_test_loss = std::numeric_limits<double>::quiet_NaN();
  runtime.model = "mlp";
  runtime.dataset = "synthetic";
  runtime.augment_copies = 1;
  runtime.parameters_per_worker = 10;
  runtime.gossip_messages = 0;
  runtime.resumed_from_iteration = 0;
  runtime.overlap = false;
  runtime.device = "cpu-worker";
  runtime.seconds_per_iteration = 0.5;
  runtime.samples_per_second = 64.0;
  runtime.wall_seconds = 3.0;
  const std::string runtime_text = rs::write_summary_json(runtime);
  CHECK(runtime_text.find("\"final_test_loss\": null") != std::string::npos);
  CHECK(runtime_text.find("\"overlap\": false") != std::string::npos);
  CHECK(runtime_text.find("platform") == std::string::npos);
  const rs::SummaryJson runtime_back = rs::parse_summary_json(runtime_text, "summary.json");
  CHECK_FALSE(runtime_back.final_test_loss.has_value());
  CHECK(*runtime_back.device == "cpu-worker");
  CHECK(rs::write_summary_json(runtime_back) == runtime_text);

  rs::SummaryJson timed = sim_summary();
  timed.timing_only = true;
  // What only training writes.
  timed.model.reset();
  timed.dataset.reset();
  timed.train_samples.reset();
  timed.augment_copies.reset();
  timed.parameters_per_worker.reset();
  timed.gossip_messages.reset();
  timed.numerics_wall_seconds_per_iteration.reset();
  const std::string timed_text = rs::write_summary_json(timed);
  CHECK(timed_text.find("\"final_test_accuracy\": null") != std::string::npos);
  CHECK(timed_text.find("\"timing_only\": true") != std::string::npos);
  CHECK(timed_text.find("best_test_accuracy") == std::string::npos);
  CHECK(timed_text.find("final_test_loss") == std::string::npos);
  const rs::SummaryJson timed_back = rs::parse_summary_json(timed_text, "summary.json");
  CHECK(timed_back.timing_only);
  CHECK_FALSE(timed_back.final_test_accuracy.has_value());
  CHECK(rs::write_summary_json(timed_back) == timed_text);
}

TEST_CASE("results::summary_json: every key the writer sets is documented, once") {
  const auto docs = rs::documented_keys(rs::summary_json_keys());
  const nlohmann::json object = rs::summary_json_object(sim_summary());
  for (const auto& [key, value] : object.items()) {
    CAPTURE(key);
    CHECK(documents(docs, key));
  }
  for (const rs::KeyDoc& doc : docs) {
    CAPTURE(doc.name);
    CHECK(std::count_if(docs.begin(), docs.end(), [&](const rs::KeyDoc& d) { return d.name == doc.name; }) ==
          1);
    CHECK_FALSE(doc.doc.empty());
    CHECK_FALSE(doc.type.empty());
  }
}
