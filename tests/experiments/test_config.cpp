// Experiment configs: defaults, validation messages, overrides, the TOML round trip and the committed
// configs.
#include <doctest/doctest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "config_fixtures.hpp"
#include "experiments/config.hpp"
#include "support/approx.hpp"
#include "support/run_dbench.hpp"

namespace fs = std::filesystem;
using namespace dbench::experiments;
using dbench::experiments::testing::contains;
using dbench::experiments::testing::error_of;

namespace {

constexpr const char* kDesignExample = R"(
name = "exp-1008"
seed = 1

[train]                      # what is trained: virtual replicas in sim, real workers in runtime
model = "mlp"                # mlp | lenet | resnet20 | resnet50
dataset = "fashion-mnist"    # fashion-mnist | cifar10 | synthetic | imagenet-folder
workers = 1008               # replicas = GPUs
batch_per_worker = 16
iterations = 500
lr = 0.1
momentum = 0.9
eval_every = 50

[algorithm]
kind = "dpsgd"               # centralized | dpsgd
graph = "exponential"        # a graph or a graph policy: ring, torus, exponential, one-peer-exponential, ada, ...

[platform]                   # what time is simulated on
preset = "frontier"          # frontier | summit | dgx-h100 | custom | a calibration file
timing_model = "resnet50"    # the model profile whose compute and communication are timed
timing_batch_per_gpu = 32
)";

}  // namespace

TEST_CASE("experiments::config: reads every key of DESIGN.md's example config") {
  const ExperimentConfig c = load_config(kDesignExample);
  CHECK(c.name == "exp-1008");
  CHECK(c.seed == 1);
  CHECK(c.train.model == "mlp");
  CHECK(c.train.dataset == "fashion-mnist");
  CHECK(c.train.workers == 1008);
  CHECK(c.train.batch_per_worker == 16);
  CHECK(c.train.iterations == 500);
  CHECK(c.train.lr == 0.1);
  CHECK(c.train.momentum == 0.9);
  CHECK(c.train.eval_every == 50);
  CHECK(c.algorithm.kind == "dpsgd");
  CHECK(c.algorithm.graph == "exponential");
  CHECK(c.platform.preset == "frontier");
  CHECK(c.platform.timing_model == "resnet50");
  CHECK(c.platform.timing_batch_per_gpu == 32);
}

TEST_CASE("experiments::config: defaults fill missing keys") {
  CHECK(load_config("") == ExperimentConfig{});

  const ExperimentConfig c = load_config("[train]\nworkers = 4\n");
  ExperimentConfig expected;
  expected.train.workers = 4;
  CHECK(c == expected);
  CHECK(c.train.lr_schedule == "constant");
  CHECK(c.train.weight_decay == 0.0);
  CHECK_FALSE(c.train.nesterov);
  CHECK(c.train.partition == "iid");
  CHECK(c.algorithm.torus_shape.empty());
}

TEST_CASE("experiments::config: rejects an unknown key with its name") {
  const std::string message = error_of("[train]\nworkers = 4\nwrokers = 8\n");
  CHECK(message.starts_with("test.toml:3:"));
  CHECK(contains(message, "train.wrokers: unknown key"));
  CHECK(contains(message, "did you mean 'train.workers'?"));

  CHECK(contains(error_of("colour = \"blue\"\n"), "colour: unknown key"));
  // A key put in the wrong section points to the right one.
  CHECK(contains(error_of("[train]\ngraph = \"ring\"\n"), "did you mean 'algorithm.graph'?"));
  // A quoted key with a dot is one top-level key, not train.workers.
  CHECK(contains(error_of("\"train.workers\" = 4\n"), "train.workers: unknown key"));
  // A table nested where a value belongs is as unknown as a misspelt key.
  CHECK(contains(error_of("[train.extra]\nx = 1\n"), "train.extra: unknown key"));
}

TEST_CASE("experiments::config: rejects a misspelt section with its name") {
  const std::string message = error_of("[trian]\nworkers = 4\n");
  CHECK(message.starts_with("test.toml:1:"));
  CHECK(contains(message, "trian: unknown section"));
  CHECK(contains(message, "did you mean 'train'?"));
  // Its keys are not reported one by one: the section is the mistake.
  CHECK_FALSE(contains(message, "trian.workers"));

  CHECK(contains(error_of("train = 5\n"), "train: expected a table"));
}

TEST_CASE("experiments::config: rejects a string where a number belongs") {
  const std::string message = error_of("[train]\nworkers = \"abc\"\n");
  CHECK(message.starts_with("test.toml:2:"));
  CHECK(contains(message, "train.workers: expected an integer, got string \"abc\""));

  CHECK(contains(error_of("[train]\nlr = \"fast\"\n"), "train.lr: expected a number, got string \"fast\""));
  CHECK(contains(error_of("[train]\nnesterov = 1\n"), "train.nesterov: expected a boolean"));
  CHECK(contains(error_of("name = 7\n"), "name: expected a string, got integer 7"));
  CHECK(contains(error_of("[algorithm]\ntorus_shape = [4, \"x\"]\n"),
                 "algorithm.torus_shape: expected an integer, got string \"x\""));
}

TEST_CASE(
    "experiments::config: accepts an integer where a float belongs, but not a float where an integer does") {
  CHECK(load_config("[train]\nlr = 1\n").train.lr == 1.0);
  CHECK(contains(error_of("[train]\nworkers = 1.5\n"), "train.workers: expected an integer, got float 1.5"));
}

TEST_CASE("experiments::config: rejects a negative worker count") {
  const std::string message = error_of("[train]\nworkers = -4\n");
  CHECK(message.starts_with("test.toml:2:"));
  CHECK(contains(message, "train.workers: must be >= 1, got -4"));
  CHECK(contains(error_of("[train]\nworkers = 4294967296\n"), "train.workers: must be <= 2147483647"));
}

TEST_CASE("experiments::config: rejects out-of-range values with the key and the bound") {
  struct Case {
    const char* toml;
    const char* message;
  };
  const std::array<Case, 12> cases = {{
      {"[train]\nlr = -0.1\n", "train.lr: must be > 0, got -0.1"},
      {"[train]\nbatch_per_worker = 0\n", "train.batch_per_worker: must be >= 1, got 0"},
      {"[train]\niterations = -1\n", "train.iterations: must be >= 0, got -1"},
      {"[train]\neval_every = 0\n", "train.eval_every: must be >= 1, got 0"},
      {"[train]\nmomentum = 1.0\n", "train.momentum: must be in [0, 1), got 1.0"},
      {"[train]\nmomentum = -0.5\n", "train.momentum: must be in [0, 1), got -0.5"},
      {"[train]\nweight_decay = -1e-4\n", "train.weight_decay: must be >= 0, got -0.0001"},
      {"[train]\ndirichlet_alpha = 0\n", "train.dirichlet_alpha: must be > 0, got 0.0"},
      {"[train]\nlr_step_gamma = 1.5\n", "train.lr_step_gamma: must be in (0, 1], got 1.5"},
      {"[train]\nlr = nan\n", "train.lr: must be a finite number"},
      {"seed = -1\n", "seed: must be >= 0, got -1"},
      {"[platform]\nnic_latency_s = -1e-6\n", "platform.nic_latency_s: must be >= 0"},
  }};
  for (const auto& c : cases) {
    CAPTURE(c.toml);
    CHECK(contains(error_of(c.toml), c.message));
  }
}

TEST_CASE("experiments::config: rejects values outside an enumerated set, listing the allowed ones") {
  const std::string message = error_of("[train]\nmodel = \"resnet\"\n");
  CHECK(contains(message, "train.model: must be one of mlp, lenet, resnet20, resnet50; got \"resnet\""));
  CHECK(contains(message, "did you mean 'resnet20'?"));

  CHECK(contains(error_of("[train]\ndataset = \"mnist\"\n"), "train.dataset: must be one of fashion-mnist,"));
  CHECK(contains(error_of("[train]\nlr_schedule = \"linear\"\n"),
                 "train.lr_schedule: must be one of constant"));
  CHECK(contains(error_of("[train]\npartition = \"noniid\"\n"),
                 "train.partition: must be one of iid, dirichlet"));
  CHECK(contains(error_of("[algorithm]\nkind = \"ada\"\n"),
                 "algorithm.kind: must be one of centralized, dpsgd"));
  CHECK(contains(error_of("[platform]\ntiming_model = \"vgg\"\n"), "platform.timing_model: must be one of"));
  CHECK(contains(error_of("[platform]\npreset = \"frontiers\"\n"), "did you mean 'frontier'?"));
  CHECK(contains(error_of("name = \"a b\"\n"), "name: must be non-empty"));
}

TEST_CASE("experiments::config: reads the optimizer and LARS's eta, and rejects bad ones under their keys") {
  const ExperimentConfig plain = load_config("");
  CHECK(plain.train.optimizer == "sgd");
  CHECK(plain.train.lars_eta == 0.001);
  const ExperimentConfig lars = load_config("[train]\noptimizer = \"lars\"\nlars_eta = 0.02\n");
  CHECK(lars.train.optimizer == "lars");
  CHECK(lars.train.lars_eta == 0.02);
  CHECK(contains(to_toml(lars), "optimizer = \"lars\""));
  CHECK(contains(to_toml(lars), "lars_eta = 0.02"));
  CHECK(contains(error_of("[train]\noptimizer = \"adam\"\n"), "train.optimizer: must be one of sgd, lars"));
  CHECK(contains(error_of("[train]\nlars_eta = 0\n"), "train.lars_eta: must be > 0, got 0"));
  CHECK(contains(error_of("[train]\nlars_eta = inf\n"), "train.lars_eta: must be a finite number"));
}

TEST_CASE("experiments::config: refuses an unknown or empty graph name under its key") {
  CHECK(
      error_of("[algorithm]\ngraph = \"moebius\"\n") ==
      "test.toml:2:9: algorithm.graph: unknown kind 'moebius' (known: ring, torus, hypercube, complete, "
      "star, "
      "exponential, one-peer-exponential, random-regular, erdos-renyi, hyper-hypercube, simple-base, base); "
      "or ada, switch, local, global-average, and allreduce where a policy is allowed");
  CHECK(contains(error_of("[algorithm]\ngraph = \"\"\n"), "algorithm.graph: must not be empty"));
}

TEST_CASE("experiments::config: checks rules that relate several keys") {
  CHECK(contains(error_of("[train]\nlr_schedule = \"step\"\n"), "train.lr_step_milestones: must list"));
  CHECK(contains(error_of("[train]\nlr_schedule = \"step\"\nlr_step_milestones = [300, 200]\n"),
                 "strictly increasing"));
  CHECK(contains(error_of("[train]\nmomentum = 0.0\nnesterov = true\n"),
                 "train.nesterov: needs train.momentum > 0"));
  CHECK(contains(error_of("[train]\niterations = 10\nwarmup_iterations = 20\n"),
                 "train.warmup_iterations: must be <= train.iterations (10), got 20"));
  CHECK(contains(error_of("[train]\nlr_schedule = \"cosine\"\nlr = 0.1\nlr_min = 0.2\n"), "train.lr_min"));
  CHECK(contains(error_of("[train]\ndataset = \"imagenet-folder\"\n"),
                 "train.data_dir: must name the image folder"));
  const std::string custom = error_of("[platform]\npreset = \"custom\"\ngpus_per_node = 4\n");
  CHECK(contains(custom, "platform.preset: \"custom\" has no values to fall back on; set"));
  CHECK_FALSE(contains(custom, "platform.gpus_per_node"));
  CHECK(contains(error_of("[train]\ndataset = \"cifar10\"\n"),
                 "train.data_dir: must name the folder of CIFAR-10"));

  const ExperimentConfig step =
      load_config("[train]\nlr_schedule = \"step\"\nlr_step_milestones = [200, 400]\nlr_step_gamma = 0.5\n");
  CHECK(step.train.lr_step_milestones == std::vector<int>{200, 400});
}

TEST_CASE("experiments::config: reports every problem at once, each with the source name") {
  const std::string message = error_of("[train]\nworkers = 0\nlr = -1\nmodle = \"mlp\"\n");
  CHECK(contains(message, "train.workers"));
  CHECK(contains(message, "train.lr"));
  CHECK(contains(message, "train.modle"));
  std::istringstream lines(message);
  for (std::string line; std::getline(lines, line);) {
    CHECK(line.starts_with("test.toml"));
  }
}

TEST_CASE("experiments::config: reports a TOML syntax error with its line and column") {
  const std::string message = error_of("name = \"a\"\n[train]\nworkers = = 3\n");
  CHECK(message.starts_with("test.toml:3:"));
  CHECK(contains(message, "TOML syntax error"));
}

TEST_CASE("experiments::config: overrides apply and are type-checked") {
  const std::vector<std::string> overrides = {"train.workers=60",
                                              "train.lr=0.05",
                                              "algorithm.graph=torus",
                                              "algorithm.torus_shape=[6, 10]",
                                              "train.nesterov = true",
                                              "name=2024",
                                              "seed=42",
                                              "platform.preset=\"summit\"",
                                              "description=a free text"};
  const ExperimentConfig c = load_config(kDesignExample, overrides, "test.toml");
  CHECK(c.train.workers == 60);
  CHECK(c.train.lr == 0.05);
  CHECK(c.algorithm.graph == "torus");
  CHECK(c.algorithm.torus_shape == std::vector<int>{6, 10});
  CHECK(c.train.nesterov);
  CHECK(c.name == "2024");  // text for a string key stays text
  CHECK(c.seed == 42);
  CHECK(c.platform.preset == "summit");
  CHECK(c.description == "a free text");
  CHECK(c.train.batch_per_worker == 16);  // untouched keys keep the file's value

  const std::string message = error_of(kDesignExample, {"train.workers=abc"});
  CHECK(contains(message, "train.workers: expected an integer, got string \"abc\""));
  CHECK(contains(message, "(from --set train.workers=abc)"));
  CHECK(contains(error_of(kDesignExample, {"train.workers=-4"}), "train.workers: must be >= 1, got -4"));
  // Overrides add keys that the file leaves out, sections included.
  CHECK(load_config("", std::vector<std::string>{"train.weight_decay=1e-4"}).train.weight_decay == 1e-4);
}

TEST_CASE("experiments::config: the last override of a key wins over earlier ones and over the file") {
  const std::vector<std::string> overrides = {"train.workers=64", "train.workers=128"};
  CHECK(load_config(kDesignExample, overrides).train.workers == 128);
}

TEST_CASE("experiments::config: an override of an unknown key is rejected like a file key") {
  const std::string message = error_of(kDesignExample, {"train.wrokers=64"});
  CHECK(message.starts_with("test.toml"));
  CHECK(contains(message, "train.wrokers: unknown key"));
  CHECK(contains(message, "did you mean 'train.workers'?"));
  CHECK(contains(error_of(kDesignExample, {"trian.workers=64"}), "trian: unknown section"));
  CHECK(contains(error_of(kDesignExample, {"colour=blue"}), "colour: unknown key"));
}

TEST_CASE("experiments::config: rejects a malformed override") {
  for (const std::string bad : {"train.workers", "=5", "train..workers=5", "train.wor kers=5"}) {
    CAPTURE(bad);
    CHECK(contains(error_of(kDesignExample, {bad}), "expected section.key=value"));
  }
  CHECK(contains(error_of(kDesignExample, {"name.x=1"}), "'name' is not a section"));
}

TEST_CASE("experiments::config: to_toml round-trips to an equal config") {
  CHECK(load_config(to_toml(ExperimentConfig{})) == ExperimentConfig{});

  ExperimentConfig c;
  c.name = "round-trip_1.0";
  c.description = "quotes \" and \\ and a\nnew line\tand ümlauts";
  c.seed = 9223372036854775807ULL;
  c.train.model = "resnet20";
  c.train.dataset = "imagenet-folder";
  c.train.data_dir = "/data/imagenet";
  c.train.workers = 1008;
  c.train.batch_per_worker = 32;
  c.train.iterations = 90000;
  c.train.lr = 0.1 + 0.2;  // not exactly 0.3: the text must keep every bit
  c.train.linear_scaling = true;
  c.train.lr_reference_batch = 512;
  c.train.warmup_iterations = 500;
  c.train.lr_schedule = "step";
  c.train.lr_step_milestones = {30000, 60000, 80000};
  c.train.lr_step_gamma = 0.1;
  c.train.lr_min = 1e-7;
  c.train.momentum = 0.875;
  c.train.nesterov = true;
  c.train.weight_decay = 5e-5;
  c.train.partition = "dirichlet";
  c.train.dirichlet_alpha = 1.0 / 3.0;
  c.train.eval_every = 1000;
  c.train.eval_samples = 5000;
  c.algorithm.kind = "centralized";
  c.algorithm.graph = "torus";
  c.algorithm.torus_shape = {28, 36};
  c.algorithm.degree = 6;
  c.platform.preset = "custom";
  c.platform.timing_model = "resnet50";
  c.platform.timing_batch_per_gpu = 64;
  c.platform.gpus_per_node = 8;
  c.platform.gpu_flops_per_s = 4.5e14;
  c.platform.intra_node_bandwidth_Bps = 9e11;
  c.platform.intra_node_latency_s = 2e-6;
  c.platform.nic_bandwidth_Bps = 5e10;
  c.platform.nic_latency_s = 3.5e-6;
  dbench::experiments::validate(c);

  const std::string text = to_toml(c);
  CAPTURE(text);
  CHECK(load_config(text) == c);
  // The written text is itself stable: resolving it again gives the same text.
  CHECK(to_toml(load_config(text)) == text);
}

TEST_CASE("experiments::config: validate checks a config built in code") {
  ExperimentConfig c;
  c.train.workers = 0;
  c.train.momentum = 1.0;
  try {
    dbench::experiments::validate(c, "sweep point 3");
    FAIL("expected a ConfigError");
  } catch (const ConfigError& e) {
    const std::string message = e.what();
    CHECK(message.starts_with("sweep point 3: "));
    CHECK(contains(message, "train.workers: must be >= 1, got 0"));
    CHECK(contains(message, "train.momentum: must be in [0, 1)"));
  }
  CHECK_NOTHROW(dbench::experiments::validate(ExperimentConfig{}));
}

TEST_CASE("experiments::config: peak_lr applies the linear or square-root scaling rule") {
  dbench::experiments::TrainConfig t;
  t.lr = 0.1;
  t.workers = 64;
  t.batch_per_worker = 32;
  CHECK(dbench::experiments::peak_lr(t) == dbench::testing::approx(0.1));
  t.linear_scaling = true;
  t.lr_reference_batch = 256;
  CHECK(dbench::experiments::peak_lr(t) == dbench::testing::approx(0.1 * 2048.0 / 256.0));
  t.lr_scaling_rule = "sqrt";
  CHECK(dbench::experiments::peak_lr(t) == dbench::testing::approx(0.1 * std::sqrt(8.0)));
}

TEST_CASE("experiments::config: the committed experiments/configs/*.toml all load") {
  const fs::path dir = fs::path(DBENCH_SOURCE_DIR) / "experiments" / "configs";
  REQUIRE(fs::is_directory(dir));
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().extension() != ".toml") {
      continue;
    }
    CAPTURE(entry.path());
    names.push_back(entry.path().filename().string());
    ExperimentConfig c;
    CHECK_NOTHROW(c = load_config_file(entry.path()));
    CHECK(load_config(to_toml(c)) == c);
  }
  CHECK(std::count(names.begin(), names.end(), "quickstart.toml") == 1);
  CHECK(std::count(names.begin(), names.end(), "example.toml") == 1);
  CHECK(load_config_file(dir / "example.toml") == load_config(kDesignExample));
}

TEST_CASE("experiments::config: load_config_file names a missing or unreadable file") {
  const fs::path missing = fs::temp_directory_path() / "dbench-no-such-config.toml";
  try {
    load_config_file(missing);
    FAIL("expected a ConfigError");
  } catch (const ConfigError& e) {
    const std::string message = e.what();
    CHECK(message.starts_with(missing.string() + ": cannot read config"));
  }
  CHECK_THROWS_AS(load_config_file(fs::temp_directory_path()), ConfigError);
}

TEST_CASE("experiments::config: errors in a file start with its path and line") {
  const fs::path file =
      fs::temp_directory_path() / ("dbench-test-config-" + std::to_string(::getpid()) + ".toml");
  {
    std::ofstream out(file);
    out << "[train]\nworkers = -4\n";
  }
  try {
    load_config_file(file);
    FAIL("expected a ConfigError");
  } catch (const ConfigError& e) {
    CHECK(std::string(e.what()).starts_with(file.string() + ":2:"));
  }
  fs::remove(file);
}

using dbench::testing::run_dbench;

TEST_CASE("experiments::config command: prints the resolved config with repeated --set and writes --out") {
  const fs::path config = fs::path(DBENCH_SOURCE_DIR) / "experiments" / "configs" / "quickstart.toml";
  const fs::path out = fs::temp_directory_path() / ("dbench-test-config-out-" + std::to_string(::getpid()));
  fs::remove_all(out);
  const auto [status, output] =
      run_dbench("config \"" + config.string() +
                 "\" --set train.workers=64 --set algorithm.graph=torus --out \"" + out.string() + "\"");
  CAPTURE(output);
  REQUIRE(status == 0);
  const std::vector<std::string> overrides = {"train.workers=64", "algorithm.graph=torus"};
  const ExperimentConfig expected = load_config_file(config, overrides);
  CHECK(contains(output, to_toml(expected)));
  CHECK(load_config_file(out / "config.toml") == expected);
  fs::remove_all(out);
}

TEST_CASE("experiments::config command: reports an invalid override and a missing file as errors") {
  const fs::path config = fs::path(DBENCH_SOURCE_DIR) / "experiments" / "configs" / "quickstart.toml";
  const auto [status, output] = run_dbench("config \"" + config.string() + "\" --set train.wrokers=3");
  CHECK(status != 0);
  CHECK(contains(output, "dbench: error: "));
  CHECK(contains(output, "train.wrokers: unknown key"));

  const auto [missing_status, missing_output] = run_dbench("config /nonexistent/dbench.toml");
  CHECK(missing_status != 0);
  CHECK(contains(missing_output, "/nonexistent/dbench.toml: cannot read config"));
}

TEST_CASE("experiments::config: refuses what simulate's setup would, naming the config key and no flag") {
  const fs::path dir = fs::temp_directory_path() / ("dbench-test-config-setup-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "garbage.toml") << "gpu_flops_per_s = \"fast\"\n";
  std::ofstream(dir / "broken.json") << "{ not json";
  std::ofstream(dir / "nan.toml") << "nic_latency_s = nan\n";
  const std::string missing = (dir / "missing.toml").string();
  const std::pair<std::string, std::string> cases[] = {
      {"[algorithm]\ngraph = \"moebius\"\n", "test.toml:2:9: algorithm.graph: unknown kind 'moebius'"},
      {"[train]\nworkers = 8\n[algorithm]\ngraph = \"torus\"\ntorus_shape = [3, 3]\n",
       "test.toml:5:15: algorithm.torus_shape: 3x3 is 9 nodes, but train.workers is 8"},
      {"[algorithm]\ngraph = \"torus\"\ntorus_shape = [4, 2, 2]\n",
       "algorithm.torus_shape: expected [rows, cols], got 3 values"},
      {"[algorithm]\ngraph = \"random-regular\"\ndegree = 100\n",
       "algorithm.degree: a random regular graph on 16 nodes needs a degree d in [1, 15], got 100"},
      {"[algorithm]\ngraph = \"ring\"\ndegree = 3\n", "algorithm.degree: kind 'ring' takes no degree"},
      {"[algorithm]\ngraph = \"base\"\ndegree = 16\n", "algorithm.degree: "},
      {"[train]\nworkers = 1\n[algorithm]\ngraph = \"ring\"\n",
       "train.workers: a ring needs at least 2 nodes, got 1 (algorithm.graph names \"ring\")"},
      {"[train]\nworkers = 12\n[algorithm]\ngraph = \"hypercube\"\n",
       "train.workers: a hypercube needs a power of two, got 12"},
      {"[train]\nworkers = 9\n[algorithm]\ngraph = \"random-regular\"\ndegree = 3\n",
       "algorithm.degree: a d-regular graph needs n*d even, got 9*3"},
      {"[algorithm]\ngraph = \"switch\"\nswitch_at = [0]\n",
       "algorithm.switch_at: lists 1 start iterations, but algorithm.switch_graphs has 2 stages"},
      {"[algorithm]\ngraph = \"switch\"\nswitch_at = [5, 10]\n",
       "algorithm.switch_at: the first stage must start at iteration 0, got 5"},
      {"[algorithm]\ngraph = \"switch\"\nswitch_graphs = \"ring,petersen\"\n",
       "algorithm.switch_graphs: unknown kind"},
      {"[algorithm]\ngraph = \"switch\"\nswitch_graphs = \",\"\n",
       "algorithm.switch_graphs: needs at least one"},
      {"[algorithm]\ngraph = \"ada\"\nada_low = 0.5\nada_high = 0.1\n",
       "algorithm.ada_low: must be below algorithm.ada_high (0.1), got 0.5"},
      {"[algorithm]\ngraph = \"ada\"\nada_ladder = \"ring:4,moebius:2\"\n",
       "algorithm.ada_ladder: unknown kind"},
      {"[algorithm]\ngraph = \"ada\"\nada_ladder = \" , \"\n",
       "algorithm.ada_ladder: needs at least one rung"},
      {"[algorithm]\ngraph = \"ada\"\nada_start = \"torus\"\n", "algorithm.ada_start: 'torus' is neither"},
      {"[algorithm]\ngraph = \"erdos-renyi\"\nprobability = 0.0001\n[train]\nworkers = 1000\n",
       "algorithm.probability: G(1000, 0.0001) came out disconnected"},
      {"[train]\nworkers = 100000\n[algorithm]\ngraph = \"complete\"\n",
       "train.workers: a complete graph on 100000 nodes would hold"},
      {"[platform]\npreset = \"" + missing + "\"\n",
       "platform.preset: " + missing + ": cannot read calibration"},
      {"[platform]\npreset = \"" + (dir / "garbage.toml").string() + "\"\n",
       "garbage.toml: gpu_flops_per_s: expected a number"},
      {"[platform]\npreset = \"" + (dir / "broken.json").string() + "\"\n", "broken.json: JSON syntax error"},
      {"[platform]\npreset = \"" + (dir / "nan.toml").string() + "\"\n",
       "nan.toml: nic_latency_s: must be a finite number, got nan"},
      {"[platform]\ngpus_per_node = 8\n[train]\nworkers = 12\n",
       "platform.gpus_per_node: 12 GPUs do not fill whole nodes of 8 GPUs"},
      {"[train]\nworkers = 64\nbatch_per_worker = 1000\n",
       "train.batch_per_worker: 1000 does not fit a replica's shard of 937 samples (fashion-mnist's 60000 "
       "training samples over train.workers = 64)"},
      {"[train]\nworkers = 60008\n[algorithm]\nkind = \"centralized\"\n",
       "train.workers: 60008 replicas cannot share fashion-mnist's 60000 training samples"},
  };
  for (const auto& [text, expected] : cases) {
    CAPTURE(text);
    const std::string message = error_of(text);
    CAPTURE(message);
    CHECK(contains(message, expected));
    CHECK(std::count(message.begin(), message.end(), '\n') == 0);
    for (const char* flag : {"--shape", "--degree", "--probability", "--nodes", "--kind"}) {
      CHECK_FALSE(contains(message, flag));
    }
  }
  // The same key is named when the value comes from --set.
  CHECK(error_of("[algorithm]\ngraph = \"torus\"\n", {"algorithm.torus_shape=[3,3]", "train.workers=8"}) ==
        "test.toml: algorithm.torus_shape: 3x3 is 9 nodes, but train.workers is 8 (from --set "
        "algorithm.torus_shape=[3,3])");
  // validate() runs the same checks on a config built in code.
  ExperimentConfig config;
  config.algorithm.graph = "moebius";
  CHECK_THROWS_WITH_AS(dbench::experiments::validate(config, "code"),
                       doctest::Contains("code: algorithm.graph: unknown kind 'moebius'"), ConfigError);
  fs::remove_all(dir);
}

TEST_CASE("experiments::config: a huge train.mlp_hidden is refused under its key") {
  CHECK(error_of("[train]\nmlp_hidden = [64, 100000000]\n") ==
        "test.toml:2:14: train.mlp_hidden: every width must be in [1, 65536], got 100000000 at index 1");
  CHECK(contains(error_of("[train]\nmlp_hidden = [1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1]\n"),
                 "train.mlp_hidden: at most 16 hidden layers, got 17"));
  CHECK(load_config("[train]\nmlp_hidden = [65536]\n").train.mlp_hidden == std::vector<int>{65536});
}

TEST_CASE("experiments::config: a custom preset names every missing key on one line") {
  CHECK(error_of("[platform]\npreset = \"custom\"\ngpus_per_node = 4\n") ==
        "test.toml:2:10: platform.preset: \"custom\" has no values to fall back on; set "
        "platform.gpu_flops_per_s, platform.intra_node_bandwidth_Bps, platform.intra_node_latency_s, "
        "platform.nic_bandwidth_Bps, platform.nic_latency_s (each > 0)");
}

TEST_CASE("experiments::config: nan and inf are refused for every float key, in a file and in --set") {
  // The float keys, read off the resolved defaults the way a user sees them.
  std::vector<std::string> float_keys;
  std::string section;
  std::istringstream lines(to_toml(ExperimentConfig{}));
  for (std::string line; std::getline(lines, line);) {
    if (line.starts_with("[")) {
      section = line.substr(1, line.find(']') - 1);
    } else if (const auto eq = line.find(" = "); eq != std::string::npos) {
      const std::string value = line.substr(eq + 3, line.find_first_of(" #", eq + 3) - eq - 3);
      if (value.find('.') != std::string::npos && value.front() != '"') {
        float_keys.push_back(section + "." + line.substr(0, eq));
      }
    }
  }
  CHECK(float_keys.size() >= 15);
  for (const auto& key : float_keys) {
    for (const char* value : {"nan", "inf", "-inf", "+nan"}) {
      CAPTURE(key);
      CAPTURE(value);
      const auto dot = key.find('.');
      std::ostringstream text;  // streamed: GCC 12 sees a false -Wrestrict in chained string concatenation
      text << '[' << key.substr(0, dot) << "]\n" << key.substr(dot + 1) << " = " << value << '\n';
      CHECK(contains(error_of(text.str()), key + ": must be a finite number, got "));
      CHECK(contains(error_of("", {key + "=" + value}), key + ": must be a finite number, got "));
    }
  }
}

TEST_CASE("experiments::config: a config must be a regular file under the size limit") {
  const fs::path dir = fs::temp_directory_path() / ("dbench-test-config-files-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const auto message_of = [](const fs::path& path) -> std::string {
    try {
      load_config_file(path);
    } catch (const ConfigError& e) {
      return e.what();
    }
    return "<accepted>";
  };
  if (fs::exists("/dev/zero")) {
    CHECK(message_of("/dev/zero") == "/dev/zero: cannot read config: not a regular file");
  }
  const fs::path big = dir / "big.toml";
  {
    std::ofstream out(big);
    out << "name = \"big\"\n";
  }
  fs::resize_file(big, dbench::experiments::kMaxConfigBytes + 1);  // sparse: no disk is spent
  CHECK(message_of(big) == big.string() + ": cannot read config: larger than the 16 MiB limit for a config");
  // A calibration file is read under the same rules, and named under platform.preset.
  fs::rename(big, dir / "big.json");
  CHECK(
      contains(error_of("[platform]\npreset = \"" + (dir / "big.json").string() + "\"\n"),
               "platform.preset: " + (dir / "big.json").string() + ": cannot read calibration file: larger"));
  fs::remove_all(dir);
}

TEST_CASE("experiments::config command: refuses what simulate would refuse, before a run") {
  const fs::path config = fs::path(DBENCH_SOURCE_DIR) / "experiments" / "configs" / "quickstart.toml";
  for (const std::string set :
       {"algorithm.graph=moebius", "train.workers=1", "platform.preset=missing.json"}) {
    CAPTURE(set);
    const auto [status, output] = run_dbench("config \"" + config.string() + "\" --set " + set);
    CAPTURE(output);
    CHECK(status != 0);
    CHECK(contains(output, "(from --set " + set + ")"));
    CHECK(std::count(output.begin(), output.end(), '\n') == 1);
  }
}
