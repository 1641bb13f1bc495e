// What the config tests share: the message a config is refused with, and a substring check.
#pragma once

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "experiments/config.hpp"

namespace dbench::experiments::testing {

/// The message load_config throws for `text` with `overrides`; fails the test if it does not throw.
inline std::string error_of(const std::string& text, std::vector<std::string> overrides = {}) {
  try {
    load_config(text, overrides, "test.toml");
  } catch (const ConfigError& e) {
    return e.what();
  }
  FAIL("expected a ConfigError for:\n" << text);
  return {};
}

inline bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace dbench::experiments::testing
