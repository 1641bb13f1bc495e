// What every sweep's report has, the study's and a timing-only sweep's alike: the sweep config read from the
// sweep folder, and the appendix that names the failed runs' logs and shows that config. Internal to the
// report.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "report/report.hpp"
#include "report/report_document.hpp"

namespace dbench::results {
class ResultsTree;
}  // namespace dbench::results

namespace dbench::report {

/// The sweep config in `tree` (sweep.toml), or empty when there is none; an unreadable one is added to
/// `left_out` with the reason.
std::optional<std::string> read_sweep_toml(const results::ResultsTree& tree, std::vector<LeftOut>& left_out);

/// The end of every sweep's report: how many runs failed and where their logs are (`logs`), then the sweep
/// config when there is one.
void sweep_appendix(Document& doc, std::size_t failed, const std::string& logs,
                    const std::optional<std::string>& sweep_toml);

}  // namespace dbench::report
