// Flows that start together over links of fixed capacity, shared max-min fairly: the network model the fast
// path's patterns are simulated with (SimGrid's CM02 as SimulatedMachine configures it), solved directly.
// A plain value and a function: no SimGrid here.
#pragma once

#include <cstdint>
#include <vector>

namespace dbench::sim {

/// Flows and the links they cross. Flow f crosses route_links[route_begin[f] .. route_begin[f + 1]) (a link
/// listed twice is crossed twice: it counts twice against the link's capacity, as in SimGrid).
struct MaxMinFlows {
  std::vector<double> capacity_Bps;        ///< per link
  std::vector<double> bytes;               ///< per flow
  std::vector<std::uint32_t> route_begin;  ///< per flow, plus one past the last
  std::vector<std::uint32_t> route_links;  ///< indices into capacity_Bps
};

/// Each flow's completion time when every flow starts at time 0 and, between completions, the flows get
/// the max-min fair rates of the links' capacities (progressive filling: every flow's rate grows alike until
/// a link is full; its flows keep that rate, the others grow on), recomputed whenever a flow completes.
/// Latencies are not part of it. Completions within a relative 1e-9 of the earliest are one event, and link
/// shares within a relative 1e-12 of the smallest saturate together (rounding, not physics, tells such ties
/// apart). A flow of no bytes or no links completes at 0.
std::vector<double> max_min_finish_times(const MaxMinFlows& flows);

}  // namespace dbench::sim
