// dbench's command line as a function: main calls it, and a timing-only sweep's forked children call it
// with a run's arguments instead of starting the program again.
#pragma once

namespace dbench::experiments {

/// Parses `argv` (argv[0] is the program's name) and runs its command; returns the exit status. Errors are
/// printed as one "dbench: error: ..." line; a stop signal's exit status is 128 + the signal.
int run_command_line(int argc, char** argv);

}  // namespace dbench::experiments
