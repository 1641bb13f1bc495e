#include "report/gnuplot.hpp"

#include <fcntl.h>
#include <fmt/core.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>

#include "results/read_file.hpp"

extern char** environ;  // NOLINT: posix_spawnp passes the environment on to gnuplot

namespace dbench::report {
namespace {

// gnuplot's messages about a script; the error shows the first 400 bytes of them.
constexpr std::size_t kMaxLogBytes = std::size_t{16} << 20;

bool plain(unsigned char ch) {
  if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9')) {
    return true;
  }
  return std::string_view(" _.,:/+-=%()#").find(static_cast<char>(ch)) != std::string_view::npos;
}

bool control(unsigned char ch) {
  return ch < 0x20 || ch == 0x7f;
}

}  // namespace

std::string gnuplot_string(std::string_view text) {
  std::string out = "\"";
  for (const char c : text) {
    const auto ch = static_cast<unsigned char>(c);
    out += plain(ch) ? std::string(1, c) : fmt::format("\\{:03o}", ch);
  }
  return out + "\"";
}

std::string gnuplot_label(std::string_view text) {
  std::string shown(text);
  std::replace_if(
      shown.begin(), shown.end(), [](char c) { return control(static_cast<unsigned char>(c)); }, ' ');
  return gnuplot_string(shown);
}

std::string gnuplot_data_field(std::string_view text) {
  std::string shown(text);
  for (char& c : shown) {
    if (control(static_cast<unsigned char>(c))) {
      c = ' ';
    } else if (c == '"') {
      c = '\'';
    }
  }
  return "\"" + shown + "\"";
}

void run_gnuplot(const std::filesystem::path& script, const std::filesystem::path& log) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  std::string program = "gnuplot";
  std::string argument = script.string();
  std::array<char*, 3> argv = {program.data(), argument.data(), nullptr};
  pid_t pid = 0;
  const int spawned = posix_spawnp(&pid, "gnuplot", &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (spawned == ENOENT) {
    throw GnuplotError(
        "gnuplot is not installed (not found on PATH); plots are drawn with it: run ./setup.sh or apt-get "
        "install gnuplot-nox");
  }
  if (spawned != 0) {
    throw GnuplotError(fmt::format("cannot start gnuplot: {}", std::strerror(spawned)));
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) {
      throw GnuplotError(fmt::format("cannot wait for gnuplot: {}", std::strerror(errno)));
    }
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::string message;
    try {
      message = results::read_file(log, kMaxLogBytes, "gnuplot log");
    } catch (const results::FileReadError&) {
      // No log to show: the exit status alone says what happened.
    }
    std::replace(message.begin(), message.end(), '\n', ' ');
    if (message.size() > 400) {
      message = message.substr(0, 400) + "...";
    }
    throw GnuplotError(fmt::format(
        "gnuplot failed on {} ({}): {}", script.string(),
        WIFEXITED(status) ? fmt::format("exit status {}", WEXITSTATUS(status)) : std::string("killed"),
        message));
  }
}

}  // namespace dbench::report
