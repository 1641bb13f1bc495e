// The training budget of a config: iterations, or epochs turned into iterations at load, with the warm-up and
// the step milestones given either way, and the warm-up the linear scaling rule gets by default.
#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <string_view>

#include "experiments/config.hpp"
#include "experiments/config_rules.hpp"
#include "experiments/config_text.hpp"

namespace dbench::experiments {
namespace {

// Training samples of the data sets whose size a config fixes (synthetic: train.synthetic_samples).
constexpr std::int64_t kFashionMnistTrain = 60000;
constexpr std::int64_t kCifar10Train = 50000;
// Goyal et al.'s gradual warm-up lasts 5 epochs.
constexpr double kGoyalWarmupEpochs = 5.0;

// The key pairs of which a config gives one: the budget, the warm-up and the step milestones.
struct KeyPair {
  std::string_view iterations;
  std::string_view epochs;
};
constexpr KeyPair kBudget{"iterations", "epochs"};
constexpr KeyPair kWarmup{"warmup_iterations", "warmup_epochs"};
constexpr KeyPair kMilestones{"lr_step_milestones", "lr_step_milestone_epochs"};
constexpr KeyPair kEval{"eval_every", "eval_every_epochs"};

// Each milestone in epochs as an iteration, kept strictly increasing (two that round to one iteration keep
// both decays, one iteration apart).
std::vector<int> milestones_for_epochs(const TrainConfig& t, std::int64_t samples) {
  std::vector<int> out;
  for (const double epochs : t.lr_step_milestone_epochs) {
    auto m = static_cast<int>(
        std::min<std::int64_t>(iterations_for_epochs(t, epochs, samples), std::numeric_limits<int>::max()));
    if (!out.empty()) {
      m = std::max(m, out.back() + 1);
    }
    out.push_back(m);
  }
  return out;
}

// Iterations between evaluations for eval_every_epochs, at least 1 and at most the run (which always ends
// with one).
int eval_every_for_epochs(const TrainConfig& t, std::int64_t samples) {
  return static_cast<int>(
      std::clamp<std::int64_t>(iterations_for_epochs(t, t.eval_every_epochs, samples), 1, t.iterations));
}

// Why epochs cannot be used with a data set whose size is only known from its files.
std::string unknown_size(const TrainConfig& t) {
  return fmt::format("cannot be turned into iterations for {}, whose size is its folder's", t.dataset);
}

const toml::node* train_key(const toml::table& root, std::string_view key) {
  const auto* train = root.get_as<toml::table>("train");
  return train == nullptr ? nullptr : train->get(key);
}

}  // namespace

double warmup_start_lr(const TrainConfig& train) {
  return train.linear_scaling && train.lr < peak_lr(train) ? train.lr : 0.0;
}

std::optional<std::int64_t> train_samples(const TrainConfig& train) {
  // Views count as samples: an epoch is a pass over every copy of every image.
  if (train.dataset == "fashion-mnist") {
    return kFashionMnistTrain * train.augment_copies;
  }
  if (train.dataset == "cifar10") {
    return kCifar10Train * train.augment_copies;
  }
  if (train.dataset == "synthetic") {
    return train.synthetic_samples;
  }
  return std::nullopt;
}

std::int64_t iterations_for_epochs(const TrainConfig& train, double epochs, std::int64_t samples) {
  const double exact = epochs * static_cast<double>(samples) / static_cast<double>(global_batch(train));
  // A budget that is a whole number of batches up to rounding (0.1 * 60000 / 256 ...) is not one more.
  const double iterations = std::ceil(exact * (1.0 - 1e-12));
  return iterations >= 9.0e18 ? std::numeric_limits<std::int64_t>::max()
                              : static_cast<std::int64_t>(iterations);
}

int default_warmup_iterations(const TrainConfig& train) {
  const auto samples = train_samples(train);
  if (!train.linear_scaling || global_batch(train) <= train.lr_reference_batch || !samples) {
    return 0;
  }
  const std::int64_t five_epochs = iterations_for_epochs(train, kGoyalWarmupEpochs, *samples);
  return static_cast<int>(std::min<std::int64_t>(five_epochs, train.iterations / 2));
}

std::vector<std::pair<std::string, std::string>> derived_train_keys(const TrainConfig& train) {
  std::vector<std::pair<std::string, std::string>> keys;
  const auto add = [&keys](const KeyPair& pair, bool given) {
    if (given) {
      keys.emplace_back(full_key("train", pair.iterations), full_key("train", pair.epochs));
    }
  };
  add(kBudget, train.epochs > 0.0);
  add(kWarmup, train.warmup_epochs > 0.0);
  add(kMilestones, !train.lr_step_milestone_epochs.empty());
  add(kEval, train.eval_every_epochs > 0.0);
  return keys;
}

void prefer_overridden_keys(toml::table& root, const std::vector<std::string>& overridden) {
  auto* train = root.get_as<toml::table>("train");
  if (train == nullptr) {
    return;
  }
  const auto set = [&overridden](std::string_view key) {
    return std::find(overridden.begin(), overridden.end(), full_key("train", key)) != overridden.end();
  };
  for (const KeyPair& pair : {kBudget, kWarmup, kMilestones, kEval}) {
    if (set(pair.iterations) && !set(pair.epochs)) {
      train->erase(pair.epochs);
    } else if (set(pair.epochs) && !set(pair.iterations)) {
      train->erase(pair.iterations);
    }
  }
}

void resolve_budget(ExperimentConfig& c, const toml::table& root, Problems& problems) {
  TrainConfig& t = c.train;
  const auto samples = train_samples(t);
  const auto unknown_size_instead = [&t](std::string_view instead) {
    return fmt::format("{}; give train.{} instead", unknown_size(t), instead);
  };
  // The budget: exactly one of iterations and epochs.
  const toml::node* iterations_node = train_key(root, kBudget.iterations);
  const toml::node* epochs_node = train_key(root, kBudget.epochs);
  const bool by_iterations = iterations_node != nullptr && t.iterations > 0;
  const bool by_epochs = epochs_node != nullptr && t.epochs > 0.0;
  if (by_iterations && by_epochs) {
    problems.add("train.epochs", epochs_node,
                 fmt::format("train.iterations ({}) is given too: give one budget, train.iterations or "
                             "train.epochs",
                             t.iterations));
    return;
  }
  if (!by_epochs && t.iterations < 1) {
    problems.add("train.iterations", iterations_node,
                 "neither train.iterations (> 0) nor train.epochs (> 0) is given: give one budget");
    return;
  }
  if (by_epochs) {
    if (!samples) {
      problems.add("train.epochs", epochs_node, unknown_size_instead("iterations"));
      return;
    }
    const std::int64_t iterations = iterations_for_epochs(t, t.epochs, *samples);
    if (iterations > std::numeric_limits<int>::max()) {
      problems.add(
          "train.epochs", epochs_node,
          fmt::format("{} epochs are {} iterations at a global batch of {}, more than {}",
                      toml_double(t.epochs), iterations, global_batch(t), std::numeric_limits<int>::max()));
      return;
    }
    t.iterations = static_cast<int>(iterations);
  }

  // The warm-up: iterations or epochs; with neither key, the linear scaling rule's default.
  const toml::node* warmup_node = train_key(root, kWarmup.iterations);
  const toml::node* warmup_epochs_node = train_key(root, kWarmup.epochs);
  if (warmup_node != nullptr && t.warmup_iterations > 0 && warmup_epochs_node != nullptr &&
      t.warmup_epochs > 0.0) {
    problems.add("train.warmup_epochs", warmup_epochs_node,
                 fmt::format("train.warmup_iterations ({}) is given too: give the warm-up one way",
                             t.warmup_iterations));
  } else if (warmup_epochs_node != nullptr && t.warmup_epochs > 0.0) {
    if (!samples) {
      problems.add("train.warmup_epochs", warmup_epochs_node, unknown_size_instead("warmup_iterations"));
    } else if (const auto w = iterations_for_epochs(t, t.warmup_epochs, *samples); w > t.iterations) {
      problems.add("train.warmup_epochs", warmup_epochs_node,
                   fmt::format("{} epochs are {} iterations, more than the run's {}",
                               toml_double(t.warmup_epochs), w, t.iterations));
    } else {
      t.warmup_iterations = static_cast<int>(w);
    }
  } else if (warmup_node == nullptr && warmup_epochs_node == nullptr) {
    t.warmup_iterations = default_warmup_iterations(t);
  }

  // The evaluations: every so many iterations or epochs.
  const toml::node* eval_node = train_key(root, kEval.iterations);
  const toml::node* eval_epochs_node = train_key(root, kEval.epochs);
  if (eval_epochs_node != nullptr && t.eval_every_epochs > 0.0) {
    if (eval_node != nullptr) {
      problems.add(
          "train.eval_every_epochs", eval_epochs_node,
          fmt::format("train.eval_every ({}) is given too: give the evaluations one way", t.eval_every));
    } else if (!samples) {
      problems.add("train.eval_every_epochs", eval_epochs_node, unknown_size_instead("eval_every"));
    } else {
      t.eval_every = eval_every_for_epochs(t, *samples);
    }
  }

  // The step milestones: iterations or epochs.
  const toml::node* milestone_epochs_node = train_key(root, kMilestones.epochs);
  if (!t.lr_step_milestone_epochs.empty()) {
    if (!t.lr_step_milestones.empty()) {
      problems.add("train.lr_step_milestone_epochs", milestone_epochs_node,
                   "train.lr_step_milestones is given too: give the milestones one way");
    } else if (!samples) {
      problems.add("train.lr_step_milestone_epochs", milestone_epochs_node,
                   unknown_size_instead("lr_step_milestones"));
    } else {
      t.lr_step_milestones = milestones_for_epochs(t, *samples);
    }
  }
}

void check_budget(const ExperimentConfig& c, Problems& problems, const toml::table* root) {
  const TrainConfig& t = c.train;
  const auto node = [root](std::string_view key) {
    return root == nullptr ? nullptr : train_key(*root, key);
  };
  if (t.iterations < 1) {
    problems.add("train.iterations", node(kBudget.iterations),
                 fmt::format("must be >= 1 (or give train.epochs), got {}", t.iterations));
    return;
  }
  const auto samples = train_samples(t);
  if (!samples) {
    for (const auto& [key, value] :
         {std::pair{"epochs", t.epochs}, std::pair{"warmup_epochs", t.warmup_epochs},
          std::pair{"eval_every_epochs", t.eval_every_epochs}}) {
      if (value > 0.0) {
        problems.add(full_key("train", key), node(key), unknown_size(t));
      }
    }
    return;
  }
  // A config built in code must carry the iterations its epochs give, as a loaded one does.
  const auto check = [&](std::string_view key, double epochs, std::int64_t iterations) {
    if (epochs > 0.0 && iterations != iterations_for_epochs(t, epochs, *samples)) {
      problems.add(full_key("train", key), node(key),
                   fmt::format("{} epochs are {} iterations at a global batch of {}, but the config has {}",
                               toml_double(epochs), iterations_for_epochs(t, epochs, *samples),
                               global_batch(t), iterations));
    }
  };
  check(kBudget.epochs, t.epochs, t.iterations);
  check(kWarmup.epochs, t.warmup_epochs, t.warmup_iterations);
  if (t.eval_every_epochs > 0.0 && t.eval_every != eval_every_for_epochs(t, *samples)) {
    problems.add("train.eval_every_epochs", node(kEval.epochs),
                 fmt::format("gives an evaluation every {} iterations, but the config has {}",
                             eval_every_for_epochs(t, *samples), t.eval_every));
  }
  if (!t.lr_step_milestone_epochs.empty() && t.lr_step_milestones != milestones_for_epochs(t, *samples)) {
    problems.add("train.lr_step_milestone_epochs", node(kMilestones.epochs),
                 "the config's train.lr_step_milestones are not the iterations these epochs give");
  }
}

}  // namespace dbench::experiments
