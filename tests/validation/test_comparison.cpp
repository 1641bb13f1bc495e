// The comparison of measured and simulated runs: medians of a trace, relative errors, the tables.
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include "support/approx.hpp"
#include "support/csv_column.hpp"
#include "validation/comparison.hpp"

namespace {

using namespace dbench::validation;
using dbench::testing::csv_column;

ValidationCase make_case(const std::string& graph, double measured, double simulated) {
  ValidationCase c;
  c.algorithm = graph == "all-reduce" ? "centralized" : "dpsgd";
  c.graph = graph;
  c.model = "mlp";
  c.workers = 4;
  c.measured = {measured, measured / 2, measured / 2};
  c.simulated = {simulated, simulated / 4, 3 * simulated / 4};
  c.iterations = {0, 10};
  c.runtime_accuracy = {0.1, 0.5};
  c.numerics_accuracy = {0.1, 0.5};
  return c;
}

}  // namespace

TEST_CASE("validation::mean_parts: per iteration the mean over workers, then over the kept iterations") {
  const std::string trace =
      "iteration,worker,compute_s,comm_s,total_s\n"
      "0,0,9,9,18\n0,1,9,9,18\n"
      "1,0,1,3,4\n1,1,3,3,6\n"
      "2,0,2,2,4\n2,1,2,4,6\n"
      "3,0,50,50,100\n3,1,50,50,100\n";
  const std::vector<double> evaluations{3};
  const PartTimes p = mean_parts(trace, 1, evaluations);
  CHECK(p.compute_s == dbench::testing::approx(2.0));
  CHECK(p.comm_s == dbench::testing::approx(3.0));
  CHECK(p.total_s == dbench::testing::approx(5.0));
  CHECK(mean_parts(trace, 0).total_s == dbench::testing::approx((18.0 + 5 + 5 + 100) / 4));
  CHECK_THROWS_AS(mean_parts(trace, 4), std::invalid_argument);
  CHECK_THROWS_AS(mean_parts("iteration,total_s\n0,1\n", 0), std::invalid_argument);
  CHECK(csv_column(trace, "iteration") == std::vector<double>{0, 0, 1, 1, 2, 2, 3, 3});
  const std::string metrics =
      "iteration,test_accuracy,consensus_distance,norm_variance\n0,0.1,0,0\n50,0.5,0,0\n100,,0,0\n";
  CHECK(evaluation_iterations(metrics) == std::vector<double>{49, 99});
  const Evaluations rows = read_evaluations(metrics);
  CHECK(rows.iterations == std::vector<double>{0, 50, 100});
  REQUIRE(rows.test_accuracy.size() == 3);
  CHECK(rows.test_accuracy[1] == 0.5);
  CHECK(std::isnan(rows.test_accuracy[2]));
  CHECK_THROWS_AS(read_evaluations("iteration,test_accuracy\n0,0.1\n"), std::invalid_argument);
}

TEST_CASE("validation::median_parts: each part its own median over the runs, not the median run's parts") {
  // The median run by total (2.0) communicated 1.5; the other runs' communication puts its median at 0.5.
  const std::vector<PartTimes> runs{{.total_s = 2.0, .compute_s = 0.5, .comm_s = 1.5},
                                    {.total_s = 1.0, .compute_s = 0.6, .comm_s = 0.4},
                                    {.total_s = 3.0, .compute_s = 2.5, .comm_s = 0.5}};
  const PartTimes m = median_parts(runs);
  CHECK(m.total_s == 2.0);
  CHECK(m.compute_s == 0.6);
  CHECK(m.comm_s == 0.5);
  // An even count: the upper middle, as validate picks its median run.
  const std::vector<PartTimes> two{{.total_s = 1.0, .compute_s = 1.0, .comm_s = 2.0},
                                   {.total_s = 3.0, .compute_s = 3.0, .comm_s = 1.0}};
  CHECK(median_parts(two).total_s == 3.0);
  CHECK(median_parts(two).comm_s == 2.0);
  CHECK_THROWS_AS(median_parts({}), std::invalid_argument);
}

TEST_CASE("tests::csv_column: read with the results' CSV reader: quoted fields, empty and short rows") {
  CHECK(csv_column("case,total_s\n\"dpsgd,ring\",2.5\n", "total_s") == std::vector<double>{2.5});
  const auto short_row = csv_column("iteration,total_s\r\n0,1\r\n1\r\n", "total_s");
  REQUIRE(short_row.size() == 2);
  CHECK(std::isnan(short_row[1]));
  CHECK_THROWS_AS(csv_column("", "total_s"), std::invalid_argument);
  CHECK_THROWS_AS(csv_column("a,b\n1,2,3\n", "a"), std::invalid_argument);
}

TEST_CASE("validation::relative_error: |simulated - measured| / measured") {
  CHECK(relative_error(1.1, 1.0) == dbench::testing::approx(0.1));
  CHECK(relative_error(0.8, 1.0) == dbench::testing::approx(0.2));
  CHECK(relative_error(0.0, 0.0) == 0.0);
  CHECK(std::isinf(relative_error(1.0, 0.0)));
}

TEST_CASE("validation::validation_json: per-case errors and the largest as max_relative_error") {
  std::vector<ValidationCase> cases{make_case("all-reduce", 1.0, 1.1), make_case("ring", 2.0, 1.6)};
  cases[1].numerics_accuracy[1] = 0.5 + 1e-7;
  const auto json = validation_json(cases);
  REQUIRE(json.at("cases").size() == 2);
  CHECK(json.at("max_relative_error").get<double>() == dbench::testing::approx(0.2));
  CHECK(json.at("max_accuracy_difference").get<double>() == dbench::testing::approx(1e-7));
  const auto& ring = json.at("cases")[1];
  CHECK(ring.at("case") == "dpsgd/ring");
  CHECK(ring.at("measured").at("seconds_per_iteration").get<double>() == 2.0);
  CHECK(ring.at("simulated").at("comm_s").get<double>() == dbench::testing::approx(1.2));
  CHECK(ring.at("relative_error").at("compute_s").get<double>() == dbench::testing::approx(0.6));
  // Accuracy curves of different lengths cannot be compared: null, not a number.
  cases[0].numerics_accuracy.push_back(0.7);
  CHECK(validation_json(cases).at("max_accuracy_difference").is_null());
}

TEST_CASE("validation::validation_markdown and validation_csv: one row per case, the columns named") {
  const std::vector<ValidationCase> cases{make_case("all-reduce", 1.0, 1.1), make_case("ring", 2.0, 1.6)};
  const std::string md = validation_markdown(cases);
  CHECK(md.find("| centralized/all-reduce | mlp | 4 |") != std::string::npos);
  CHECK(md.find("| dpsgd/ring | mlp | 4 |") != std::string::npos);
  CHECK(md.find("20.0 %") != std::string::npos);
  const std::string csv = validation_csv(cases);
  CHECK(csv.rfind("case,algorithm,graph,model,workers,measured_s,simulated_s,relative_error,", 0) == 0);
  CHECK(csv_column(csv, "relative_error")[1] == dbench::testing::approx(0.2));
  const std::string accuracy = accuracy_csv(cases);
  CHECK(csv_column(accuracy, "runtime_test_accuracy").size() == 4);
}
