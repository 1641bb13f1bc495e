#include "topology/graph_policy.hpp"

namespace dbench::topology {

ScheduleStep SequencePolicy::graph_for(std::int64_t iteration, const PolicyObservation*) {
  const Graph& graph = sequence_.at(iteration);
  if (!sequence_.time_varying()) {
    return {sequence_.kind(), &graph};
  }
  return {sequence_.kind() + "/" + std::to_string(iteration % sequence_.period()), &graph};
}

}  // namespace dbench::topology
