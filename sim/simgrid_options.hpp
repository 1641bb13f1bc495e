// The SimGrid settings a user may pass through (`dbench simulate --cfg=... --log=...`), checked before
// SimGrid sees them: SimGrid aborts the whole process on an unknown item or value, and crashes on some values
// it accepts (a 1 KiB actor stack).
#pragma once

#include <span>
#include <string>
#include <string_view>

namespace dbench::sim {

/// The --cfg items DBench passes on to SimGrid, e.g. "network/model", "contexts/stack-size".
std::span<const std::string_view> known_simgrid_items() noexcept;

/// Checks a --cfg value "ITEM:VALUE" (e.g. "network/model:LV08"): a known item with a value in its range.
/// Returns the reason it is refused, or "" when it is accepted.
std::string check_simgrid_cfg(std::string_view setting);

/// Checks a --log value "CATEGORY.thres:LEVEL" (e.g. "root.thres:info"): only thresholds, whose levels are
/// trace, debug, verbose, info, warning, error or critical (an appender would write a file DBench does not
/// own). Returns the reason it is refused, or "" when it is accepted.
std::string check_simgrid_log(std::string_view setting);

}  // namespace dbench::sim
