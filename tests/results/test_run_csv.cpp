// Each CSV file of a run directory written from its table and read back through the same table.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "results/graphs_csv.hpp"
#include "results/run_csv.hpp"
#include "results/summary_csv.hpp"
#include "results/validation_csv.hpp"

namespace rs = dbench::results;

TEST_CASE("results::run_csv: metrics.csv and replica_norms.csv round trip with their per-tensor columns") {
  const std::vector<std::string> tensors = {"fc1.weight", "fc1.bias"};
  rs::MetricsRecord m;
  m.iteration = 10;
  m.epoch = 0.5;
  m.lr = 0.1;
  m.test_accuracy = 0.75;
  m.tensors = {{1.5, 0.25, 0.125}, {2.0, rs::kEmpty, 0.0}};
  const std::vector<rs::MetricsRecord> metrics = {m};
  const std::string text =
      rs::write_csv(rs::metrics_columns(), std::span<const rs::MetricsRecord>(metrics), tensors);
  CHECK(text.starts_with("iteration,epoch,lr,train_loss,test_loss,test_accuracy,consensus_distance,"));
  CHECK(text.find(",norm_mean:fc1.weight,norm_var:fc1.weight,consensus:fc1.weight,norm_mean:fc1.bias") !=
        std::string::npos);
  const auto back = rs::read_metrics_csv(text, "metrics.csv");
  CHECK(back.keys == tensors);
  REQUIRE(back.rows.size() == 1);
  CHECK(back.rows[0].iteration == 10);
  CHECK(back.rows[0].test_accuracy == 0.75);
  CHECK(std::isnan(back.rows[0].train_loss));
  CHECK(back.rows[0].tensors[0].consensus == 0.125);
  CHECK(std::isnan(back.rows[0].tensors[1].norm_var));
  CHECK(rs::write_csv(rs::metrics_columns(), std::span<const rs::MetricsRecord>(back.rows), back.keys) ==
        text);

  const std::vector<rs::ReplicaNormsRecord> norms = {{4, 0, {1.0, 2.0}}, {4, 1, {3.0, 0.5}}};
  const std::string norms_text =
      rs::write_csv(rs::replica_norms_columns(), std::span<const rs::ReplicaNormsRecord>(norms), tensors);
  CHECK(norms_text == "iteration,replica,fc1.weight,fc1.bias\n4,0,1,2\n4,1,3,0.5\n");
  const auto norms_back = rs::read_replica_norms_csv(norms_text, "replica_norms.csv");
  CHECK(norms_back.keys == tensors);
  CHECK(norms_back.rows[1].norms == std::vector<double>{3.0, 0.5});
}

TEST_CASE("results::run_csv: schedule.csv, trace.csv, trace_worker.csv and accuracy_time.csv round trip") {
  const std::vector<rs::ScheduleRecord> schedule = {{0, "ring", rs::kEmpty}, {1, "global-average", 0.5}};
  const std::string schedule_text =
      rs::write_csv(rs::schedule_columns(), std::span<const rs::ScheduleRecord>(schedule));
  CHECK(schedule_text == "iteration,graph,signal\n0,ring,\n1,global-average,0.5\n");
  const auto schedule_back = rs::read_schedule_csv(schedule_text, "schedule.csv");
  CHECK(schedule_back[1].graph == "global-average");
  CHECK(schedule_back[1].signal == 0.5);

  const std::vector<rs::TraceRow> trace = {{0, "ring", 0.5, 0.25, 0.75, 1024.0},
                                           {1, "ring", 0.5, 0.5, 1.0, 8.0}};
  const std::string trace_text = rs::trace_csv(trace);
  CHECK(trace_text ==
        "iteration,graph,compute_s,comm_s,total_s,bytes_sent,elapsed_s\n0,ring,0.5,0.25,0.75,1024,0.75\n"
        "1,ring,0.5,0.5,1,8,1.75\n");
  CHECK(rs::read_trace_csv(trace_text, "trace.csv")[1].elapsed_s == 1.75);

  std::vector<rs::WorkerTraceRow> workers(2);
  workers[0] = {3, 1, 0.5, 0.25, 0.75, 64.0, 2.5, 0.1};
  workers[1] = {3, 2, 0.5, 0.25, 0.75, 64.0, std::nullopt, std::nullopt};
  const std::string workers_text = rs::worker_trace_csv(workers);
  CHECK(workers_text ==
        "iteration,worker,compute_s,comm_s,total_s,bytes_sent,loss,lr\n3,1,0.5,0.25,0.75,64,2.5,0.1\n"
        "3,2,0.5,0.25,0.75,64,,\n");
  const auto workers_back = rs::read_worker_trace_csv(workers_text, "trace_worker.csv");
  CHECK(workers_back[0].loss == 2.5);
  CHECK_FALSE(workers_back[1].lr.has_value());

  const std::vector<rs::AccuracyTimeRecord> clock = {{0, 0.0, 0.1, 2.3, rs::kEmpty, 0.0},
                                                     {5, 3.5, 0.5, 1.2, 1.4, 0.01}};
  const std::string clock_text = rs::accuracy_time_csv(clock);
  CHECK(clock_text ==
        "iteration,simulated_time_s,test_accuracy,test_loss,train_loss,consensus_distance\n0,0,0.1,2.3,,0\n"
        "5,3.5,0.5,1.2,1.4,0.01\n");
  CHECK(rs::read_accuracy_time_csv(clock_text, "accuracy_time.csv")[1].simulated_time_s == 3.5);
}

TEST_CASE("results::run_csv: metrics.csv written before the replica columns existed still reads") {
  const auto back = rs::read_metrics_csv(
      "iteration,epoch,lr,train_loss,test_loss,test_accuracy,consensus_distance,norm_variance\n0,0,0.1,,2.3,"
      "0.1,0,0\n",
      "old.csv");
  REQUIRE(back.rows.size() == 1);
  CHECK(std::isnan(back.rows[0].replica_accuracy_mean));
  CHECK_THROWS_WITH_AS(rs::read_trace_csv("iteration,graph\n", "trace.csv"),
                       doctest::Contains("trace.csv lacks the column 'compute_s'"), rs::CsvError);
}

TEST_CASE("results::summary_csv: a row written from the contract's table reads back, axes included") {
  rs::SummaryRow row;
  row.run = "r0";
  row.status = "done";
  row.label = "=ring";
  row.algorithm = "dpsgd";
  row.graph = "ring";
  row.workers = 8;
  row.seed = 18446744073709551615ULL;
  row.final_test_accuracy = 0.5;
  row.iterations = 100;
  row.global_batch = 128;
  row.axes = {{"algorithm", "ring"}, {"lr", "0.1"}};
  const std::vector<std::string> keys = {"algorithm", "lr"};
  const std::string text = rs::write_summary_csv(std::span<const rs::SummaryRow>(&row, 1), keys);
  CHECK(text.starts_with("run,status,label,algorithm,graph,workers,seed,"));
  CHECK(text.find(",grid.algorithm,lr\n") != std::string::npos);
  const auto back = rs::parse_summary_csv(text, "summary.csv");
  REQUIRE(back.size() == 1);
  CHECK(back[0].label == "=ring");
  CHECK(back[0].seed == row.seed);
  CHECK(back[0].final_test_accuracy == 0.5);
  CHECK(std::isnan(back[0].edges));
  CHECK(back[0].axes == row.axes);
  CHECK(rs::write_summary_csv(back, keys) == text);
  CHECK(rs::documented_columns(rs::summary_columns()).size() == rs::required_summary_columns().size());
}

TEST_CASE("results::graphs_csv: graphs.csv round trips, an unconnected graph's diameter as inf") {
  const std::vector<rs::GraphsRow> rows = {{"ring", 8, 1, 16, 8, 2, 4, 0.1464466094, false},
                                           {"base-2", 8, 3, 8, 4, 1, std::nullopt, 1.0, true}};
  const std::string text = rs::graphs_csv(rows);
  CHECK(text ==
        "kind,nodes,period,edges,undirected_edges,max_degree,diameter,spectral_gap,exact_consensus\n"
        "ring,8,1,16,8,2,4,0.1464466094,false\nbase-2,8,3,8,4,1,inf,1,true\n");
  const auto back = rs::read_graphs_csv(text, "graphs.csv");
  REQUIRE(back.size() == 2);
  CHECK_FALSE(back[1].diameter.has_value());
  CHECK(back[1].exact_consensus);
  CHECK(rs::graphs_csv(back) == text);
}

TEST_CASE("results::validation_csv: validation.csv and accuracy.csv round trip, infinite errors included") {
  const double inf = std::numeric_limits<double>::infinity();
  const std::vector<rs::ValidationRow> rows = {{"dpsgd/ring",
                                                "dpsgd",
                                                "ring",
                                                "mlp",
                                                4,
                                                {0.5, 0.25, 0.5},
                                                {0.25, 0.25, 0.0},
                                                {0.0, 0.125, inf},
                                                0.01}};
  const std::string text = rs::validation_csv(rows);
  CHECK(text.ends_with("\ndpsgd/ring,dpsgd,ring,mlp,4,0.5,0.25,0.5,0.25,0.25,0,0,0.125,inf,0.01\n"));
  const auto back = rs::read_validation_csv(text, "validation.csv");
  REQUIRE(back.size() == 1);
  CHECK(back[0].comm.relative_error == inf);
  CHECK(rs::validation_csv(back) == text);
  const std::vector<rs::AccuracyComparisonRow> curves = {{50, "dpsgd/ring", 0.5, rs::kEmpty}};
  const std::string curve_text = rs::accuracy_comparison_csv(curves);
  CHECK(curve_text == "iteration,case,runtime_test_accuracy,numerics_test_accuracy\n50,dpsgd/ring,0.5,nan\n");
  CHECK(std::isnan(rs::read_accuracy_comparison_csv(curve_text, "accuracy.csv")[0].numerics_test_accuracy));
}
