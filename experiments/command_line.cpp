#include "experiments/command_line.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cstdio>
#include <exception>
#include <string>
#include <string_view>

#include "experiments/commands.hpp"
#include "experiments/input_keys.hpp"
#include "runtime/errors.hpp"

namespace dbench::experiments {

int run_command_line(int argc, char** argv) {
  CLI::App app{"DBench: benchmark centralized and decentralized data-parallel training", "dbench"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "dbench 0.1.0");
  add_graph_command(app);
  add_graphs_command(app);
  add_simulate_command(app);
  add_train_command(app);
  add_config_command(app);
  add_sweep_command(app);
  add_report_command(app);
  add_calibrate_command(app);
  add_validate_command(app);
  add_profile_command(app);
  try {
    // CLI11 would only say that a subcommand is required; name the unknown one and the known ones instead.
    const auto subcommands = app.get_subcommands({});
    const bool known_command = std::any_of(subcommands.begin(), subcommands.end(), [&](const CLI::App* sub) {
      return argc > 1 && sub->check_name(argv[1]);
    });
    if (argc > 1 && argv[1][0] != '-' && !known_command) {
      std::string known;
      for (const CLI::App* sub : subcommands) {
        known += (known.empty() ? "" : ", ") + sub->get_name();
      }
      fmt::print(stderr, "dbench: error: unknown command '{}' (known: {})\n", argv[1], known);
      return 2;
    }
    // `--cfg=` with nothing after the sign would make CLI11 take the next argument as the value.
    for (int i = 1; i < argc; ++i) {
      const std::string_view arg = argv[i];
      if (arg == "--") {
        break;
      }
      if (arg.starts_with("--") && arg.find('=') == arg.size() - 1) {
        throw CLI::ValidationError(std::string(arg.substr(0, arg.size() - 1)),
                                   "an empty value after '='; give one, or leave the option out");
      }
    }
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // Help and version are "errors" that succeed; real parse errors get the same one-line form as the rest.
    if (e.get_exit_code() == static_cast<int>(CLI::ExitCodes::Success)) {
      return app.exit(e);
    }
    fmt::print(stderr, "dbench: error: {} (see dbench --help)\n", e.what());
    return e.get_exit_code();
  } catch (const dbench::runtime::Refused& e) {
    // One line, said once: a worker or child that said it already leaves what() empty.
    if (*e.what() != '\0') {
      fmt::print(stderr, "dbench: error: {}\n", e.what());
    }
    return dbench::runtime::Refused::kExitStatus;
  } catch (const dbench::runtime::Interrupted& e) {
    // As a shell reports a command that a signal ended.
    fmt::print(stderr, "dbench: error: {}\n", e.what());
    return 128 + e.signal();
  } catch (const std::exception& e) {
    fmt::print(stderr, "dbench: error: {}\n", error_message(e));
    return 1;
  }
  return 0;
}

}  // namespace dbench::experiments
