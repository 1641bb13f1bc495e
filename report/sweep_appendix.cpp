#include "report/sweep_appendix.hpp"

#include <fmt/format.h>

#include "results/results_tree.hpp"

namespace dbench::report {

using results::ResultsTree;
using results::ResultsTreeError;

std::optional<std::string> read_sweep_toml(const ResultsTree& tree, std::vector<LeftOut>& left_out) {
  try {
    if (tree.exists("sweep.toml")) {
      return tree.read("sweep.toml");
    }
  } catch (const ResultsTreeError& e) {
    left_out.push_back({"sweep.toml", e.what()});
  }
  return std::nullopt;
}

void sweep_appendix(Document& doc, std::size_t failed, const std::string& logs,
                    const std::optional<std::string>& sweep_toml) {
  if (failed > 0) {
    doc.heading("Failed runs");
    doc.paragraph(fmt::format("{} runs failed; their logs are under {}.", failed, logs));
  }
  if (sweep_toml) {
    doc.heading("Sweep config");
    doc.preformatted(*sweep_toml);
  }
}

}  // namespace dbench::report
