#include "experiments/input_keys.hpp"

#include <fmt/core.h>

#include "core/errors.hpp"
#include "runtime/errors.hpp"

namespace dbench::experiments {

std::string_view run_input_key(models::RunInput input) noexcept {
  switch (input) {
    case models::RunInput::model:
      return "train.model";
    case models::RunInput::dataset:
      return "train.dataset";
    case models::RunInput::data_dir:
      return "train.data_dir";
    case models::RunInput::workers:
      return "train.workers";
    case models::RunInput::batch_per_worker:
      return "train.batch_per_worker";
    case models::RunInput::augment_copies:
      return "train.augment_copies";
    case models::RunInput::eval_every:
      return "train.eval_every";
    case models::RunInput::lr:
      return "train.lr";
  }
  return "train";
}

std::string error_message(const std::exception& e) {
  if (const auto* count = dynamic_cast<const runtime::WorkerCountError*>(&e)) {
    const std::string_view key = run_input_key(models::RunInput::workers);
    return fmt::format("{} = {} but {} workers were launched; set {}={} or launch {} workers", key,
                       count->configured(), count->launched(), key, count->launched(), count->configured());
  }
  if (const auto* diverged = dynamic_cast<const core::DivergenceError*>(&e)) {
    return fmt::format("{}; lower {}", diverged->reason(), run_input_key(models::RunInput::lr));
  }
  // The errors of models/, core/ and runtime/ carry their input beside their standard exception base.
  if (const auto* fault = dynamic_cast<const models::InputFault*>(&e); fault != nullptr && fault->input()) {
    return fmt::format("{}: {}", run_input_key(*fault->input()), fault->reason());
  }
  return e.what();
}

}  // namespace dbench::experiments
