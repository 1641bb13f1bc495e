// The documentation of every file a run or a sweep writes, made from the same tables that write and read
// them: docs/results-files.md is this text, and a test keeps the two equal.
#pragma once

#include <string>

namespace dbench::results {

/// Markdown: per file, what a row (or the object) is, then each column (or key) with its meaning, in the
/// order the file has them.
std::string results_files_markdown();

}  // namespace dbench::results
