#include "core/step.hpp"

namespace dbench::core {

void run_step(StepEngine& engine, std::int64_t t, const topology::ScheduleStep& step, bool measure) {
  using topology::Communication;
  if (step.communication == Communication::all_reduce) {
    engine.all_reduce_step(t);
  } else {
    engine.local_step(t, step, measure);
  }
  if (measure) {
    engine.measure();
  }
  switch (step.communication) {
    case Communication::none:
    case Communication::all_reduce:
      break;
    case Communication::global_average:
      engine.global_average(measure);
      if (engine.shares_momentum()) {
        engine.share_momentum();
      }
      break;
    case Communication::gossip:
      engine.gossip(t, *step.graph);
      break;
  }
}

}  // namespace dbench::core
