// A model spec for tests: a named model on square inputs of some channels and classes.
#pragma once

#include <string>
#include <utility>

#include "models/model_profile.hpp"

namespace dbench::testing {

/// `name` on channels x side x side inputs with `classes` outputs; the other fields are the defaults.
inline models::ModelSpec model_spec(std::string name, int channels, int side, int classes) {
  models::ModelSpec s;
  s.name = std::move(name);
  s.input_channels = channels;
  s.input_height = side;
  s.input_width = side;
  s.classes = classes;
  return s;
}

}  // namespace dbench::testing
