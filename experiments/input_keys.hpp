// The config keys behind the run inputs that models/, core/ and runtime/ name in their errors: those layers
// say which input is wrong (models::RunInput) and why, and the command line names the key.
#pragma once

#include <exception>
#include <string>
#include <string_view>

#include "models/errors.hpp"

namespace dbench::experiments {

/// The config key of a run input, e.g. "train.workers" for RunInput::workers.
std::string_view run_input_key(models::RunInput input) noexcept;

/// The message a user sees for `e`: "key: reason" for an error about a run input (a divergence advises
/// lowering train.lr, a worker count that was not launched names train.workers), what() for any other.
std::string error_message(const std::exception& e);

}  // namespace dbench::experiments
