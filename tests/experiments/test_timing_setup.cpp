// [platform] as the simulator's timing sees it, and `dbench simulate --timing-only` end to end.
#include <doctest/doctest.h>
#include <fmt/core.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "experiments/config.hpp"
#include "experiments/timing_setup.hpp"
#include "models/model_profile.hpp"
#include "models/profile_file.hpp"
#include "support/approx.hpp"
#include "support/files.hpp"
#include "support/run_dbench.hpp"

namespace ex = dbench::experiments;
namespace sim = dbench::sim;

namespace {

using dbench::testing::read_file;

namespace fs = std::filesystem;

fs::path temp_path(const std::string& name) {
  return fs::temp_directory_path() / ("dbench-timing-" + std::to_string(::getpid()) + "-" + name);
}

// A floating-point [platform] key, the value a config gives it, and the PlatformSpec field it must reach.
struct PlatformValue {
  const char* key;
  double value;
  double sim::PlatformSpec::*field;
};

// The platform of `config`, which ends inside [platform], with each of `values` appended; checks that every
// value reaches its field.
sim::PlatformSpec platform_with(const std::string& config, std::initializer_list<PlatformValue> values) {
  std::string toml = config;
  for (const auto& v : values) {
    const std::string text = fmt::format("{}", v.value);  // the shortest text that reads back exactly
    toml +=
        fmt::format("{} = {}{}\n", v.key, text, text.find_first_of(".e") == std::string::npos ? ".0" : "");
  }
  CAPTURE(toml);
  const sim::PlatformSpec platform = ex::platform_spec(ex::load_config(toml));
  for (const auto& v : values) {
    CAPTURE(v.key);
    CHECK(platform.*v.field == v.value);
  }
  return platform;
}

std::string config_error(const std::string& toml) {
  try {
    ex::load_config(toml);
  } catch (const ex::ConfigError& e) {
    return e.what();
  }
  return "";
}

std::string platform_error_key(const std::string& toml) {
  try {
    // Keys only: the full load refuses the same configs, under the same key (checked below).
    ex::platform_spec(ex::load_config(toml, {}, "<config>", ex::Validation::keys_only));
  } catch (const sim::PlatformError& e) {
    return e.key();
  }
  return "";
}

}  // namespace

TEST_CASE("experiments::platform_spec: a preset with the config's non-zero keys on top") {
  const auto c = ex::load_config(
      "[train]\nworkers = 64\n[platform]\npreset = \"dgx-h100\"\nnic_bandwidth_Bps = 2.5e10\nfabric = "
      "\"torus\"\n");
  const sim::PlatformSpec p = ex::platform_spec(c);
  CHECK(p.name == "dgx-h100");
  CHECK(p.gpus_per_node == 8);
  CHECK(p.nic_bandwidth_Bps == 2.5e10);
  CHECK(p.fabric == sim::Fabric::torus);
  CHECK(p.intra_node_bandwidth_Bps == sim::platform_preset("dgx-h100").intra_node_bandwidth_Bps);
  CHECK(ex::timing_profile(c).parameter_count() > 25'000'000);                   // ResNet-50
  CHECK(ex::timing_options(c).allreduce == sim::AllReduceAlgorithm::automatic);  // the default
}

TEST_CASE("experiments::platform_spec: the multi-building keys reach the platform and name themselves") {
  const sim::PlatformSpec p = ex::platform_spec(ex::load_config(
      "[train]\nworkers = 64\n[platform]\npreset = \"dgx-h100\"\nfabric = \"multi-building\"\nbuildings = "
      "2\ninter_building_bandwidth_Bps = 1e12\ninter_building_latency_s = 5e-6\n"));
  CHECK(p.fabric == sim::Fabric::multi_building);
  CHECK(p.buildings == 2);
  CHECK(p.inter_building_bandwidth_Bps == 1e12);
  CHECK(p.inter_building_latency_s == 5e-6);
  const sim::PlatformSpec campus = ex::platform_spec(
      ex::load_config("[train]\nworkers = 64\n[platform]\npreset = \"dgx-h100-campus\"\nbuildings = 8\n"));
  CHECK(campus.buildings == 8);
  CHECK(campus.inter_building_bandwidth_Bps ==
        sim::platform_preset("dgx-h100-campus").inter_building_bandwidth_Bps);
  CHECK(config_error("[platform]\nbuildings = -1\n").find("platform.buildings: must be >= 0") !=
        std::string::npos);
  CHECK(config_error("[platform]\ninter_building_latency_s = -1.0\n")
            .find("platform.inter_building_latency_s: must be >= 0") != std::string::npos);
  // Two buildings and no uplink between them.
  CHECK(platform_error_key("[train]\nworkers = 64\n[platform]\npreset = \"dgx-h100\"\nfabric = "
                           "\"multi-building\"\nbuildings = 2\n") == "platform.inter_building_bandwidth_Bps");
}

TEST_CASE("experiments::platform_spec: bad platform configs name the key") {
  CHECK(config_error("[platform]\nnic_bandwidth_Bps = -1.0\n")
            .find("platform.nic_bandwidth_Bps: must be >= 0") != std::string::npos);
  CHECK(config_error("[platform]\nfabric = \"hypercube\"\n").find("platform.fabric: must be one of") !=
        std::string::npos);
  CHECK(config_error("[platform]\npreset = \"sumit\"\n").find("did you mean 'summit'?") != std::string::npos);
  CHECK(config_error("[platform]\nallreduce = \"butterfly\"\n").find("platform.allreduce") !=
        std::string::npos);
  CHECK(config_error("[platform]\nallreduce_bandwidth_Bps = -2e9\n")
            .find("platform.allreduce_bandwidth_Bps: must be >= 0") != std::string::npos);
  CHECK(config_error("[platform]\nallreduce_bandwith_Bps = 2e9\n")
            .find("did you mean 'platform.allreduce_bandwidth_Bps'") != std::string::npos);
  // A measured all-reduce from the config reaches the platform; none by default (simulated).
  const sim::PlatformSpec measured = ex::platform_spec(
      ex::load_config("[train]\nworkers = 8\n[platform]\npreset = \"dgx-h100\"\nallreduce_latency_s = 2e-5\n"
                      "allreduce_bandwidth_Bps = 3e9\n"));
  CHECK(measured.allreduce_latency_s == 2e-5);
  CHECK(measured.allreduce_bandwidth_Bps == 3e9);
  CHECK(ex::platform_spec(ex::load_config("[train]\nworkers = 8\n")).allreduce_bandwidth_Bps == 0.0);
  // Compute as it is in a job: each key reaches the platform, out-of-range values name the key.
  const sim::PlatformSpec varied =
      platform_with("[train]\nworkers = 16\n[platform]\nstragglers = 2\n",
                    {{"multi_gpu_slowdown", 1.15, &sim::PlatformSpec::multi_gpu_slowdown},
                     {"compute_jitter_cv", 0.05, &sim::PlatformSpec::compute_jitter_cv},
                     {"compute_tail_probability", 0.001, &sim::PlatformSpec::compute_tail_probability},
                     {"compute_tail_factor", 3.0, &sim::PlatformSpec::compute_tail_factor},
                     {"straggler_factor", 1.5, &sim::PlatformSpec::straggler_factor}});
  CHECK(varied.stragglers == 2);
  CHECK(
      config_error("[platform]\nmulti_gpu_slowdown = 0.5\n").find("platform.multi_gpu_slowdown: must be 0") !=
      std::string::npos);
  CHECK(config_error("[platform]\ncompute_jitter_cv = -1.0\n").find("platform.compute_jitter_cv") !=
        std::string::npos);
  CHECK(config_error("[train]\nworkers = 8\n[platform]\nstragglers = 9\n").find("platform.stragglers") !=
        std::string::npos);
  // Achieved rates and protocol costs: the preset's, or the config's; out-of-range values name the key.
  const sim::PlatformSpec h100 =
      ex::platform_spec(ex::load_config("[train]\nworkers = 8\n[platform]\npreset = \"dgx-h100\"\n"));
  CHECK(h100.intra_node_efficiency == sim::platform_preset("dgx-h100").intra_node_efficiency);
  CHECK(h100.nvls_efficiency > 0.0);
  CHECK(h100.collnet_efficiency == sim::platform_preset("dgx-h100").collnet_efficiency);
  CHECK(h100.collnet_efficiency > 0.0);
  platform_with("[train]\nworkers = 8\n[platform]\nallreduce = \"nvls\"\n",
                {{"intra_node_efficiency", 0.7, &sim::PlatformSpec::intra_node_efficiency},
                 {"network_efficiency", 0.9, &sim::PlatformSpec::network_efficiency},
                 {"collective_latency_s", 1e-5, &sim::PlatformSpec::collective_latency_s},
                 {"bulk_step_latency_s", 4e-6, &sim::PlatformSpec::bulk_step_latency_s},
                 {"nvls_efficiency", 0.6, &sim::PlatformSpec::nvls_efficiency},
                 {"collnet_efficiency", 0.8, &sim::PlatformSpec::collnet_efficiency}});
  CHECK(config_error("[platform]\nintra_node_efficiency = 1.5\n").find("platform.intra_node_efficiency") !=
        std::string::npos);
  CHECK(config_error("[platform]\nnvls_efficiency = -0.1\n").find("platform.nvls_efficiency") !=
        std::string::npos);
  CHECK(config_error("[platform]\ncollnet_efficiency = 1.5\n").find("platform.collnet_efficiency") !=
        std::string::npos);
  CHECK(config_error("[platform]\ncollective_latency_s = -1e-6\n").find("platform.collective_latency_s") !=
        std::string::npos);
  const std::string custom = config_error(
      "[platform]\npreset = \"custom\"\ngpus_per_node = 4\ngpu_flops_per_s = 1e13\nintra_node_bandwidth_Bps "
      "= 1e11\n"
      "intra_node_latency_s = 1e-6\nnic_bandwidth_Bps = 0.0\nnic_latency_s = 1e-6\nswitch_latency_s = "
      "1e-7\n");
  CHECK(
      custom.find("platform.preset: \"custom\" has no values to fall back on; set platform.nic_bandwidth_Bps "
                  "(each > 0)") != std::string::npos);
  const sim::PlatformSpec minimal = ex::platform_spec(ex::load_config(
      "[train]\nworkers = 8\n[platform]\npreset = \"custom\"\ngpus_per_node = 4\ngpu_flops_per_s = 1e13\n"
      "intra_node_bandwidth_Bps = 1e11\nintra_node_latency_s = 1e-6\nnic_bandwidth_Bps = 1e10\nnic_latency_s "
      "= 1e-6\n"
      "nics_per_node = 2\n"));
  CHECK(minimal.fabric == sim::Fabric::fat_tree);
  CHECK(minimal.switch_bandwidth_Bps == 2e10);
  CHECK(minimal.nics_per_node == 2);
  // GPUs that do not fill whole nodes.
  CHECK(platform_error_key("[train]\nworkers = 20\n[platform]\npreset = \"frontier\"\n") ==
        "platform.gpus_per_node");
  CHECK(platform_error_key("[train]\nworkers = 24\n[platform]\npreset = \"frontier\"\n").empty());
  CHECK(config_error("[train]\nworkers = 20\n[platform]\npreset = \"frontier\"\n")
            .starts_with("<config>: platform.gpus_per_node: 20 GPUs do not fill whole nodes of 8 GPUs"));
}

TEST_CASE("experiments::read_calibration: a base preset with measured values on top from TOML or JSON") {
  const fs::path toml = temp_path("cluster.toml");
  std::ofstream(toml) << "base = \"summit\"\ngpu_flops_per_s = 2.0e13\niteration_overhead_s = 0.01\n";
  const sim::PlatformSpec p = ex::read_calibration(toml);
  CHECK(p.gpus_per_node == 6);
  CHECK(p.gpu_flops_per_s == 2.0e13);
  CHECK(p.iteration_overhead_s == 0.01);

  const fs::path json = temp_path("cluster.json");
  std::ofstream(json) << R"({"base": "frontier", "nic_bandwidth_Bps": 1e10, "fabric": "fat-tree"})";
  const sim::PlatformSpec q = ex::read_calibration(json);
  CHECK(q.gpus_per_node == 8);
  CHECK(q.nic_bandwidth_Bps == 1e10);
  CHECK(q.fabric == sim::Fabric::fat_tree);

  const fs::path bad = temp_path("bad.toml");
  std::ofstream(bad) << "base = \"summit\"\nnic_bandwith_Bps = 1e10\n";
  CHECK_THROWS_WITH_AS(ex::read_calibration(bad), doctest::Contains("nic_bandwith_Bps: unknown key"),
                       ex::ConfigError);
  fs::remove(toml);
  fs::remove(json);
  fs::remove(bad);
}

TEST_CASE("experiments::calibration_caveat: another model or batch than the calibration's is named") {
  const fs::path file = temp_path("fitted.toml");
  std::ofstream(file) << "base = \"custom\"\ngpus_per_node = 4\nfitted_model = \"mlp\"\n"
                         "fitted_batch_per_gpu = 24\ngpu_flops_per_s = 1e10\n";
  const auto caveat = [&file](const std::string& model, int batch) {
    ex::ExperimentConfig config;
    config.platform.preset = file.string();
    config.platform.timing_model = model;
    config.platform.timing_batch_per_gpu = batch;
    return ex::calibration_caveat(config);
  };
  // The keys time nothing: the file reads as before.
  CHECK(ex::read_calibration(file).gpu_flops_per_s == 1e10);
  CHECK(caveat("mlp", 24).empty());
  const std::string batch = caveat("mlp", 32);
  CHECK(batch.starts_with("platform.preset: " + file.string() +
                          " was fitted to mlp's step at batch 24, but "
                          "platform.timing_batch_per_gpu = 32:"));
  CHECK(batch.ends_with("dbench calibrate --set train.batch_per_worker=32 measures this one"));
  const std::string both = caveat("lenet", 64);
  CHECK(both.find("but platform.timing_model = lenet and platform.timing_batch_per_gpu = 64:") !=
        std::string::npos);
  CHECK(both.find("--set train.model=lenet --set train.batch_per_worker=64") != std::string::npos);
  // A preset, or a file that does not say what it was fitted to (an older calibration), has nothing to say.
  ex::ExperimentConfig preset;
  preset.platform.preset = "frontier";
  CHECK(ex::calibration_caveat(preset).empty());
  std::ofstream(file) << "base = \"summit\"\ngpu_flops_per_s = 2.0e13\n";
  CHECK(caveat("lenet", 64).empty());
  // Of the wrong type, the file is damaged and read_calibration names the key.
  std::ofstream(file) << "base = \"summit\"\nfitted_model = 3\n";
  CHECK_THROWS_WITH_AS(ex::read_calibration(file), doctest::Contains("fitted_model: expected a model name"),
                       ex::ConfigError);
  std::ofstream(file) << "base = \"summit\"\nfitted_model = \"\\u001b[2Jmlp\"\n";
  CHECK_THROWS_WITH_AS(
      ex::read_calibration(file),
      doctest::Contains("fitted_model: \"\\u001B[2Jmlp\" is no model dbench calibrate times"),
      ex::ConfigError);
  std::ofstream(file) << "base = \"summit\"\nfitted_batch_per_gpu = \"24\"\n";
  CHECK_THROWS_WITH_AS(ex::read_calibration(file),
                       doctest::Contains("fitted_batch_per_gpu: expected a number"), ex::ConfigError);
  fs::remove(file);
}

TEST_CASE("experiments::simulate: a calibration fitted to another batch is said in one warning line") {
  const fs::path file = temp_path("fitted-sim.toml");
  std::ofstream(file) << "base = \"custom\"\ngpus_per_node = 4\nfitted_model = \"mlp\"\n"
                         "fitted_batch_per_gpu = 24\ngpu_flops_per_s = 1e10\niteration_overhead_s = 1e-4\n"
                         "intra_node_bandwidth_Bps = 1e9\nintra_node_latency_s = 1e-6\nfabric = \"star\"\n"
                         "nic_bandwidth_Bps = 1e9\nswitch_bandwidth_Bps = 1e9\n";
  const fs::path out = temp_path("fitted-sim");
  const std::string args =
      "simulate --timing-only -q --set train.workers=4 --set train.iterations=3 "
      "--set platform.timing_model=mlp --set platform.preset=\"" +
      file.string() + "\" --out \"" + out.string() + "\"";
  const auto at_32 = dbench::testing::run_dbench(args + " --set platform.timing_batch_per_gpu=32");
  CAPTURE(at_32.output);
  CHECK(at_32.status == 0);
  CHECK(at_32.output.find("warning: platform.preset: " + file.string() +
                          " was fitted to mlp's step at batch 24") != std::string::npos);
  fs::remove_all(out);
  const auto at_24 = dbench::testing::run_dbench(args + " --set platform.timing_batch_per_gpu=24");
  CAPTURE(at_24.output);
  CHECK(at_24.status == 0);
  CHECK(at_24.output.find("warning") == std::string::npos);
  fs::remove_all(out);
  fs::remove(file);
}

TEST_CASE("experiments::simulate: --timing-only writes trace.csv and a summary with the simulated times") {
  const fs::path out = temp_path("timing-only");
  const auto result = dbench::testing::run_dbench(
      "simulate --timing-only -q --per-gpu-trace --set train.workers=48 --set train.iterations=12 "
      "--set algorithm.graph=one-peer-exponential --set platform.preset=summit --out \"" +
      out.string() + "\"");
  CAPTURE(result.output);
  REQUIRE(result.status == 0);
  const auto summary = nlohmann::json::parse(read_file(out / "summary.json"));
  CHECK(summary["seconds_per_iteration"].get<double>() > 0.0);
  CHECK(summary["samples_per_second"].get<double>() ==
        dbench::testing::approx(48.0 * 32.0 / summary["seconds_per_iteration"].get<double>()));
  CHECK(summary["scaling_efficiency"].get<double>() < 1.0);
  CHECK(summary["timing_simulations"].get<int>() == 6);  // one per round of the period ceil(log2 48)
  const std::string trace = read_file(out / "trace.csv");
  CHECK(trace.rfind("iteration,graph,compute_s,comm_s,total_s,bytes_sent,elapsed_s\n", 0) == 0);
  CHECK(std::count(trace.begin(), trace.end(), '\n') == 13);
  const std::string workers = read_file(out / "trace_worker.csv");
  CHECK(workers.rfind("iteration,worker,compute_s,comm_s,total_s,bytes_sent,loss,lr\n", 0) == 0);
  CHECK(std::count(workers.begin(), workers.end(), '\n') == 1 + 12 * 48);
  fs::remove_all(out);

  const auto bad = dbench::testing::run_dbench("simulate --timing-only -q --set train.workers=20 --out \"" +
                                               out.string() + "\"");
  CHECK(bad.status != 0);
  CHECK(bad.output.find("platform.gpus_per_node") != std::string::npos);
  CHECK_FALSE(fs::exists(out));
}

TEST_CASE(
    "experiments::simulate: training runs are timed and joined with their metrics on the simulated clock") {
  const fs::path out = temp_path("timed");
  const std::string config =
      (fs::path(DBENCH_SOURCE_DIR) / "experiments" / "configs" / "quickstart.toml").string();
  const auto result = dbench::testing::run_dbench(
      "simulate \"" + config + "\" -q --set train.iterations=20 --set train.eval_every=10 --out \"" +
      out.string() + "\"");
  CAPTURE(result.output);
  REQUIRE(result.status == 0);
  const auto summary = nlohmann::json::parse(read_file(out / "summary.json"));
  const double per_iteration = summary["seconds_per_iteration"].get<double>();
  CHECK(per_iteration > 0.0);
  CHECK(summary["samples_per_second"].get<double>() > 0.0);
  CHECK(summary["simulated_seconds"].get<double>() == dbench::testing::approx(20.0 * per_iteration));
  const std::string joined = read_file(out / "accuracy_time.csv");
  CHECK(joined.rfind("iteration,simulated_time_s,test_accuracy", 0) == 0);
  CHECK(joined.find("\n0,0,") != std::string::npos);
  CHECK(std::count(joined.begin(), joined.end(), '\n') == 4);  // header and iterations 0, 10, 20
  fs::remove_all(out);

  // SimGrid's own options reach the simulation: TCP-like bandwidth factors make the same run slower.
  const auto lv08 = dbench::testing::run_dbench(
      "simulate --timing-only -q --set train.iterations=3 --cfg=network/model:LV08 "
      "--out \"" +
      out.string() + "\"");
  REQUIRE(lv08.status == 0);
  const double slower =
      nlohmann::json::parse(read_file(out / "summary.json"))["seconds_per_iteration"].get<double>();
  const auto plain = dbench::testing::run_dbench(
      "simulate --timing-only -q --set train.iterations=3 --out \"" + out.string() + "\"");
  REQUIRE(plain.status == 0);
  const double faster =
      nlohmann::json::parse(read_file(out / "summary.json"))["seconds_per_iteration"].get<double>();
  CHECK(slower > faster);
  fs::remove_all(out);
}

TEST_CASE("experiments::timing_profile: platform.timing_model names a profile file; bf16 halves the bytes") {
  const fs::path dir = temp_path("profile");
  fs::create_directories(dir);
  const auto resnet50 = dbench::models::model_profile(dbench::models::timing_spec("resnet50"));
  // The same model in bf16: every tensor, and its compute.
  auto half = resnet50;
  half.name = "resnet50-bf16";
  half.compute_precision = dbench::models::Precision::bf16;
  for (auto& t : half.tensors) {
    t.precision = dbench::models::Precision::bf16;
  }
  dbench::testing::write_file(dir / "fp32.toml", dbench::models::profile_file_text(resnet50));
  dbench::testing::write_file(dir / "bf16.toml", dbench::models::profile_file_text(half));

  const auto config = [&](const std::string& file, const std::string& extra) {
    return ex::load_config("[train]\nworkers = 64\n[platform]\npreset = \"dgx-h100\"\ntiming_model = \"" +
                           (dir / file).string() + "\"\n" + extra);
  };
  const auto fp32 = ex::make_timing_spec(config("fp32.toml", ""));
  const auto bf16 = ex::make_timing_spec(config("bf16.toml", "gpu_flops_per_s_bf16 = 4e14\n"));
  CHECK(fp32.profile.parameter_bytes() == resnet50.parameter_bytes());
  CHECK(bf16.profile.parameter_bytes() * 2 == resnet50.parameter_bytes());
  CHECK(bf16.profile.compute_precision == dbench::models::Precision::bf16);
  const double overhead = fp32.platform.iteration_overhead_s;
  CHECK(sim::compute_seconds(bf16.profile, 32, bf16.platform) - overhead ==
        dbench::testing::approx(32.0 * 3.0 * resnet50.forward_flops_per_sample / 4e14));
  CHECK(sim::compute_seconds(fp32.profile, 32, fp32.platform) ==
        dbench::testing::approx(sim::compute_seconds(resnet50, 32, sim::platform_preset("dgx-h100"))));

  // End to end: the file's model is what simulate times, and its bf16 all-reduce sends half the bytes.
  const auto run = [&](const std::string& file, const std::string& name) {
    const fs::path out = dir / name;
    const auto result = dbench::testing::run_dbench(
        "simulate --timing-only -q --set train.workers=16 --set train.iterations=3 --set "
        "algorithm.kind=centralized "
        "--set platform.timing_model=\"" +
        (dir / file).string() + "\" --out \"" + out.string() + "\"");
    CAPTURE(result.output);
    REQUIRE(result.status == 0);
    return nlohmann::json::parse(read_file(out / "summary.json"));
  };
  const auto full = run("fp32.toml", "out32");
  const auto halved = run("bf16.toml", "out16");
  CHECK(halved["bytes_per_gpu_per_iteration"].get<double>() * 2 ==
        dbench::testing::approx(full["bytes_per_gpu_per_iteration"].get<double>()));
  CHECK(full["timing_model"] == (dir / "fp32.toml").string());

  // A bad profile is refused at load, naming the config key, the file and its field.
  dbench::testing::write_file(dir / "bad.toml", "name = \"b\"\nforward_flops_per_sample = -1.0\n");
  std::string message;
  try {
    config("bad.toml", "");
  } catch (const ex::ConfigError& e) {
    message = e.what();
  }
  CAPTURE(message);
  CHECK(message.find("platform.timing_model") != std::string::npos);
  CHECK(message.find("bad.toml: forward_flops_per_sample: must be finite and > 0") != std::string::npos);
  CHECK(config_error("[platform]\ntiming_model = \"resnet-50\"\n").find("did you mean 'resnet50'") !=
        std::string::npos);
  fs::remove_all(dir);
}
