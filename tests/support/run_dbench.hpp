// Runs the built dbench executable (found through the DBENCH_EXE compile definition) as a user would.
#pragma once

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <utility>

namespace dbench::testing {

/// What a dbench invocation printed (stdout and stderr together) and its exit status.
struct CommandResult {
  int status = -1;
  std::string output;
};

/// Runs a shell command line; stdout and stderr together.
inline CommandResult run_command(const std::string& command) {
  FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) {
    throw std::runtime_error("cannot start " + command);
  }
  std::string output;
  std::array<char, 4096> buffer{};
  for (std::size_t n; (n = std::fread(buffer.data(), 1, buffer.size(), pipe)) > 0;) {
    output.append(buffer.data(), n);
  }
  const int status = ::pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, output};
}

/// Whether a command printed exactly one line: the one-line error DBench promises for bad input.
inline bool one_line(const std::string& text) {
  return !text.empty() && text.find('\n') == text.size() - 1;
}

/// Runs `dbench <arguments>` through the shell.
inline CommandResult run_dbench(const std::string& arguments) {
  return run_command(std::string("\"") + DBENCH_EXE + "\" " + arguments);
}

}  // namespace dbench::testing
