// The timing model's machine: one SimGrid engine with a PlatformSpec's platform built for a number of GPUs.
// Internal to sim/: only sim's own sources include it, so SimGrid's headers stay out of sim's public ones.
#pragma once

#include <memory>
#include <simgrid/s4u.hpp>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "sim/platform.hpp"

namespace dbench::sim {

/// One SimGrid engine with the platform built for `gpus` GPUs; the engine goes away with the object.
///
/// The links' latencies are kept here, not given to SimGrid: SimGrid shares a link among flows in inverse
/// proportion to their routes' latencies (TCP's RTT unfairness), which GPU transports (NVLink, RDMA) do not
/// show — a ring channel's inter-node flow would get a fraction of a GPU port shared with intra-node flows.
/// SimGrid shares bandwidth equally among flows; a message then takes its route's latency on top
/// (route_latency()).
class SimulatedMachine {
 public:
  /// `shortest_bytes`: the smallest transfer the run will simulate, which sets the event precision;
  /// `all_at_once`: every transfer starts together (a pattern) rather than step by step (full fidelity);
  /// `user_args`: SimGrid settings after the model's own (--cfg=..., --log=...).
  SimulatedMachine(const PlatformSpec& platform, int gpus, double shortest_bytes, bool all_at_once,
                   const std::vector<std::string>& user_args);

  /// GPU g lives on node g / gpus_per_node.
  simgrid::s4u::Host* host(int gpu) const { return hosts_[static_cast<std::size_t>(gpu)]; }
  /// The latency of the route from GPU `from` to GPU `to`: its links' latencies summed (a fabric link built
  /// by SimGrid's cluster zones has the platform's switch_latency_s).
  double route_latency(int from, int to) const;
  /// The same sum for a route's links as route_to() gives them, for a caller that holds them already.
  double route_latency(const std::vector<simgrid::s4u::Link*>& links) const;
  /// Runs the engine until every actor is done.
  void run() const;

 private:
  using NetPoint = simgrid::kernel::routing::NetPoint;

  std::pair<NetPoint*, NetPoint*> make_node(simgrid::s4u::NetZone* parent, unsigned long id);
  void build_fabric();
  simgrid::s4u::NetZone* build_buildings(simgrid::s4u::NetZone* parent);
  /// A split-duplex link's latency, on both of the directed links routes are made of.
  void set_latency(const simgrid::s4u::SplitDuplexLink* link, double seconds);

  const PlatformSpec& platform_;
  int gpus_;
  int nodes_;
  std::unique_ptr<simgrid::s4u::Engine> engine_;
  std::vector<simgrid::s4u::Host*> hosts_;
  /// Every link's latency, kept out of SimGrid (see the class comment).
  std::unordered_map<const simgrid::s4u::Link*, double> latency_;
};

}  // namespace dbench::sim
