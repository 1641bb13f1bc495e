// The training budget: train.epochs turned into iterations, the warm-up and milestones in epochs, the linear
// scaling rule's default warm-up, and the synthetic teacher data set a config asks for.
#include <doctest/doctest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "config_fixtures.hpp"
#include "core/lr_schedule.hpp"
#include "experiments/config.hpp"
#include "experiments/sim_setup.hpp"
#include "support/approx.hpp"
#include "support/temp_dir.hpp"

using namespace dbench::experiments;
using dbench::experiments::testing::contains;
using dbench::experiments::testing::error_of;

namespace {

ExperimentConfig load(const std::string& text, std::vector<std::string> overrides = {}) {
  return load_config(text, overrides, "test.toml");
}

// ceil(epochs * samples / (workers * batch)) for whole-number epochs, in integers only.
std::int64_t whole_epochs(std::int64_t epochs, std::int64_t samples, std::int64_t workers,
                          std::int64_t batch) {
  const std::int64_t global = workers * batch;
  return (epochs * samples + global - 1) / global;
}

}  // namespace

TEST_CASE("config::budget: train.epochs gives ceil(epochs x samples / global batch) iterations") {
  struct Case {
    std::string dataset_keys;
    int workers;
    int batch;
    std::string epochs;
    int expected;
  };
  // CIFAR-10's folder must exist (the config check reads nothing in it).
  const dbench::testing::TempDir cifar;
  const std::vector<Case> cases = {
      // Fashion-MNIST: 60,000 training samples.
      {"", 16, 16, "2", static_cast<int>(whole_epochs(2, 60000, 16, 16))},      // 468.75 -> 469
      {"", 1008, 16, "2", static_cast<int>(whole_epochs(2, 60000, 1008, 16))},  // 7.44 -> 8
      {"", 16, 15, "1", 250},                                                   // exactly 250 batches
      {"", 16, 16, "0.1", 24},                                                  // 23.4375 -> 24
      {"", 64, 16, "10", static_cast<int>(whole_epochs(10, 60000, 64, 16))},    // 585.9 -> 586
      // CIFAR-10: 50,000.
      {"dataset = \"cifar10\"\ndata_dir = \"" + cifar.path().string() + "\"\n", 4, 32, "1.5",
       586},  // 585.94 -> 586
      // The synthetic teacher task, as large as asked.
      {"dataset = \"synthetic\"\nsynthetic_samples = 1000000\n", 64, 16, "3",
       static_cast<int>(whole_epochs(3, 1000000, 64, 16))},  // 2929.7 -> 2930
  };
  for (const auto& c : cases) {
    CAPTURE(c.dataset_keys);
    CAPTURE(c.workers);
    CAPTURE(c.epochs);
    const auto config =
        load("[train]\n" + c.dataset_keys + "workers = " + std::to_string(c.workers) +
             "\nbatch_per_worker = " + std::to_string(c.batch) + "\nepochs = " + c.epochs + "\n");
    CHECK(config.train.iterations == c.expected);
  }
  CHECK(whole_epochs(2, 60000, 16, 16) == 469);
  CHECK(whole_epochs(2, 60000, 1008, 16) == 8);
}

TEST_CASE("config::budget: both budgets or neither is an error naming both keys") {
  const std::string both = error_of("[train]\niterations = 100\nepochs = 2\n");
  CHECK(contains(both, "train.epochs"));
  CHECK(contains(both, "train.iterations"));
  const std::string neither = error_of("[train]\niterations = 0\n");
  CHECK(contains(neither, "train.iterations"));
  CHECK(contains(neither, "train.epochs"));
  CHECK(contains(error_of("", {"train.iterations=100", "train.epochs=2"}),
                 "train.iterations (100) is given too"));
  // One budget from the file, the other from --set: the override is the budget.
  CHECK(load("[train]\niterations = 100\n", {"train.epochs=1"}).train.iterations == 235);
  CHECK(load("[train]\nepochs = 1\n", {"train.iterations=7"}).train.iterations == 7);
  // Without either key the embedded default, 500 iterations, stands.
  CHECK(load("").train.iterations == 500);
  CHECK(contains(error_of("[train]\ndataset = \"imagenet-folder\"\ndata_dir = \"/x\"\nepochs = 1\n"),
                 "train.epochs: cannot be turned into iterations for imagenet-folder"));
}

TEST_CASE("config::budget: the resolved config shows both and reads back equal") {
  const auto config = load(
      "[train]\nepochs = 2.5\nwarmup_epochs = 0.5\nlr_schedule = \"step\"\nlr_step_milestone_epochs = [1.0, "
      "2.0]\n");
  CHECK(config.train.iterations == 586);  // 2.5 * 60000 / 256 = 585.9
  CHECK(config.train.warmup_iterations == 118);
  CHECK(config.train.lr_step_milestones == std::vector<int>{235, 469});
  const std::string text = to_toml(config);
  CHECK(contains(text, "# iterations = 586"));
  CHECK(contains(text, "epochs = 2.5"));
  CHECK(contains(text, "# warmup_iterations = 118"));
  CHECK(load(text) == config);
  // Warm-up and milestones given both ways are refused, naming both.
  const std::string warmup = error_of("[train]\nwarmup_iterations = 5\nwarmup_epochs = 0.5\n");
  CHECK(contains(warmup, "train.warmup_epochs"));
  CHECK(contains(warmup, "train.warmup_iterations"));
  CHECK(contains(error_of("[train]\nepochs = 1\nwarmup_epochs = 2\n"), "more than the run's 235"));
  // Evaluations every half epoch: every 118 iterations at 16 replicas, every 2 at 1008; at least 1.
  CHECK(load("[train]\nepochs = 10\neval_every_epochs = 0.5\n").train.eval_every == 118);
  CHECK(load("[train]\nworkers = 1008\nepochs = 10\neval_every_epochs = 0.5\n").train.eval_every == 2);
  CHECK(load("[train]\nworkers = 1008\nepochs = 10\neval_every_epochs = 0.01\n").train.eval_every == 1);
  CHECK(contains(to_toml(load("[train]\nepochs = 10\neval_every_epochs = 0.5\n")), "# eval_every = 118"));
  CHECK(contains(error_of("[train]\neval_every = 5\neval_every_epochs = 0.5\n"),
                 "train.eval_every (5) is given too"));
  // Milestones that round to one iteration at a large global batch keep both decays.
  const auto coarse = load(
      "[train]\nworkers = 1008\nepochs = 3\nlr_schedule = \"step\"\n"
      "lr_step_milestone_epochs = [1.0, 1.1]\n");
  CHECK(coarse.train.lr_step_milestones == std::vector<int>{4, 5});
}

TEST_CASE("config::budget: linear scaling follows Goyal et al. with a gradual warm-up by default") {
  // 64 x 16 = 1024 = 4 x 256: the peak lr is 4 x lr, reached after 5 epochs (293 iterations) from lr.
  const auto config = load("[train]\nworkers = 64\nepochs = 20\nlinear_scaling = true\nlr = 0.1\n");
  CHECK(config.train.iterations == 1172);
  CHECK(config.train.warmup_iterations == 293);
  CHECK(peak_lr(config.train) == dbench::testing::approx(0.4));
  CHECK(warmup_start_lr(config.train) == dbench::testing::approx(0.1));
  dbench::core::LrSchedule lr;
  lr.peak = peak_lr(config.train);
  lr.iterations = config.train.iterations;
  lr.warmup_iterations = config.train.warmup_iterations;
  lr.warmup_start = warmup_start_lr(config.train);
  CHECK(lr.at(0) == dbench::testing::approx(0.1 + 0.3 / 293.0));
  CHECK(lr.at(292) == dbench::testing::approx(0.4));
  CHECK(lr.at(1000) == dbench::testing::approx(0.4));
  // A short run warms up for half of it; a global batch at the reference needs no warm-up; a key given,
  // even 0, is kept.
  CHECK(load("[train]\nworkers = 64\nepochs = 2\nlinear_scaling = true\n").train.warmup_iterations == 59);
  CHECK(load("[train]\nworkers = 16\nepochs = 20\nlinear_scaling = true\n").train.warmup_iterations == 0);
  CHECK(load("[train]\nworkers = 64\nepochs = 20\nlinear_scaling = true\nwarmup_iterations = 0\n")
            .train.warmup_iterations == 0);
  // Without linear scaling nothing changes: no warm-up, and a warm-up from 0.
  const auto plain = load("[train]\nworkers = 64\nepochs = 20\nwarmup_iterations = 10\n");
  CHECK(plain.train.warmup_iterations == 10);
  CHECK(warmup_start_lr(plain.train) == 0.0);
}

TEST_CASE("config::budget: the synthetic teacher set is as large as asked and fixed by its seed") {
  const auto config = [](const std::string& extra) {
    return load("seed = 3\n[train]\ndataset = \"synthetic\"\nsynthetic_samples = 150000\n" + extra);
  };
  // The samples are computed, not stored: compare some samples' inputs and every label.
  const auto same_bytes = [](const dbench::models::Dataset& a, const dbench::models::Dataset& b) {
    if (a.size != b.size || a.labels != b.labels) {
      return false;
    }
    std::vector<float> x(static_cast<std::size_t>(a.sample_elements()));
    std::vector<float> y(x.size());
    for (const std::int64_t i : {std::int64_t{0}, a.size / 2, a.size - 1}) {
      a.write_sample(i, x.data());
      b.write_sample(i, y.data());
      if (std::memcmp(x.data(), y.data(), x.size() * sizeof(float)) != 0) {
        return false;
      }
    }
    return true;
  };
  const auto a = config_dataset(config("synthetic_seed = 11\n"), dbench::models::Split::train);
  CHECK(a.size == 150000);
  CHECK(same_bytes(a, config_dataset(config("synthetic_seed = 11\n"), dbench::models::Split::train)));
  CHECK_FALSE(same_bytes(a, config_dataset(config("synthetic_seed = 12\n"), dbench::models::Split::train)));
  // A fixed synthetic_seed keeps the task when the run's seed changes; 0 follows the run's seed.
  auto other_run = config("synthetic_seed = 11\n");
  other_run.seed = 4;
  CHECK(same_bytes(a, config_dataset(other_run, dbench::models::Split::train)));
  auto follows = config("");
  const auto by_run_seed = config_dataset(follows, dbench::models::Split::train);
  follows.seed = 4;
  CHECK_FALSE(same_bytes(by_run_seed, config_dataset(follows, dbench::models::Split::train)));
}

TEST_CASE("config::budget: train.augment_copies multiplies the training set that epochs and shards count") {
  // 20 views of Fashion-MNIST's 60,000 images: 1,200,000 samples, 744.05 iterations for 10 epochs at 1008
  // x 16.
  const auto config =
      load("[train]\naugment_copies = 20\nworkers = 1008\nbatch_per_worker = 16\nepochs = 10\n");
  CHECK(train_samples(config.train) == 1200000);
  CHECK(config.train.iterations == whole_epochs(10, 1200000, 1008, 16));
  CHECK(config.train.iterations == 745);
  CHECK(load("[train]\nepochs = 1\n").train.augment_copies == 1);
  // A shard of 59 samples cannot hold a batch of 64; one of 20 x 59.5 can.
  CHECK(contains(error_of("[train]\nworkers = 1008\nbatch_per_worker = 64\niterations = 10\n"),
                 "train.batch_per_worker"));
  CHECK_NOTHROW(
      load("[train]\naugment_copies = 20\nworkers = 1008\nbatch_per_worker = 64\niterations = 10\n"));
  CHECK(contains(error_of("[train]\naugment_copies = 0\n"), "train.augment_copies"));
  CHECK(contains(error_of("[train]\naugment_copies = 51\n"), "must be in [1, 50]"));
  const std::string synthetic = error_of("[train]\ndataset = \"synthetic\"\naugment_copies = 2\n");
  CHECK(contains(synthetic, "train.augment_copies"));
  CHECK(contains(synthetic, "train.synthetic_samples"));
}
