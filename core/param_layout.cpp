#include "core/param_layout.hpp"

#include <set>

#include "core/errors.hpp"

namespace dbench::core {

ParamLayout::ParamLayout(const std::vector<std::pair<std::string, std::size_t>>& tensors) {
  std::set<std::string> seen;
  for (const auto& [name, elements] : tensors) {
    if (elements == 0) {
      throw ValueError("parameter tensor '" + name + "' has no elements");
    }
    if (!seen.insert(name).second) {
      throw ValueError("parameter tensor '" + name + "' appears twice in the layout");
    }
    tensors_.push_back({name, size_, elements});
    size_ += elements;
  }
}

}  // namespace dbench::core
