#include "models/errors.hpp"

#include <utility>

namespace dbench::models {

std::string_view run_input_name(RunInput input) noexcept {
  switch (input) {
    case RunInput::model:
      return "model";
    case RunInput::dataset:
      return "dataset";
    case RunInput::data_dir:
      return "data dir";
    case RunInput::workers:
      return "workers";
    case RunInput::batch_per_worker:
      return "batch per worker";
    case RunInput::augment_copies:
      return "augment copies";
    case RunInput::eval_every:
      return "eval every";
    case RunInput::lr:
      return "learning rate";
  }
  return "input";
}

InputFault::InputFault(std::optional<RunInput> input, std::string reason)
    : input_(input), reason_(std::move(reason)) {}

InputFault::~InputFault() = default;

std::string input_message(RunInput input, const std::string& reason) {
  std::string message(run_input_name(input));
  message += ": ";
  message += reason;
  return message;
}

}  // namespace dbench::models
