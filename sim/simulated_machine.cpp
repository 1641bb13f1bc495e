// The timing model's machine: the SimGrid platform of a PlatformSpec for a number of GPUs.
#include "sim/simulated_machine.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <simgrid/kernel/routing/NetZoneImpl.hpp>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "topology/generators.hpp"

namespace dbench::sim {
namespace {

namespace sg4 = simgrid::s4u;
namespace kernel = simgrid::kernel;

// Model assumptions, before the user's own --cfg:
// * CM02: plain max-min sharing with the platform's achieved bandwidths (line rates times their efficiencies)
//   and latencies (no TCP correction factors, which would break the alpha-beta closed forms the presets are
//   checked against).
// * No cross traffic: GPU transports (RDMA, NVLink) do not send TCP acknowledgements back along the route.
// * A small actor stack: the actors only wait on transfers.
// * Event times to a thousandth of the shortest transfer simulated (`precision_s`): transfers that end
//   closer together are resolved as one event, which keeps a round of 10^4 concurrent transfers cheap while
//   each transfer's time stays within 0.1 %.
// * A pattern (every transfer starting at once, all sharing links) is solved whole at each event ("Full"):
//   SimGrid's lazy update tracks which transfers an event touches, and here that is nearly all of them.
std::vector<std::string> default_args(double precision_s, bool all_at_once) {
  std::vector<std::string> args = {
      "dbench",
      fmt::format("--cfg=surf/precision:{}", precision_s),
      "--cfg=network/model:CM02",
      "--cfg=network/crosstraffic:0",
      "--cfg=network/TCP-gamma:0",
      "--cfg=contexts/stack-size:256",
      "--log=root.thres:warning",
      // The precision above may exceed a link's latency; latencies are then resolved to the precision, a
      // thousandth of any transfer, which SimGrid would warn about on every run.
      "--log=res_network.thres:error",
  };
  if (all_at_once) {
    args.emplace_back("--cfg=network/optim:Full");
  }
#ifdef DBENCH_SIMGRID_THREAD_CONTEXTS
  // AddressSanitizer does not follow SimGrid's hand-made context switches; threads it understands.
  args.emplace_back("--cfg=contexts/factory:thread");
#endif
  return args;
}

}  // namespace

SimulatedMachine::SimulatedMachine(const PlatformSpec& platform, int gpus, double shortest_bytes,
                                   bool all_at_once, const std::vector<std::string>& user_args)
    : platform_(platform), gpus_(gpus), nodes_(node_count(platform, gpus)) {
  const double fastest_Bps =
      std::max({platform.intra_node_bandwidth_Bps, platform.nic_bandwidth_Bps * platform.nics_per_node,
                platform.switch_bandwidth_Bps});
  const double precision_s = std::clamp(1e-3 * shortest_bytes / fastest_Bps, 1e-9, 1e-5);
  std::vector<std::string> args = default_args(precision_s, all_at_once);
  args.insert(args.end(), user_args.begin(), user_args.end());
  std::vector<char*> argv;
  for (auto& arg : args) {
    argv.push_back(arg.data());
  }
  argv.push_back(nullptr);
  int argc = static_cast<int>(args.size());
  engine_ = std::make_unique<sg4::Engine>(&argc, argv.data());
  // SimGrid parses the command line's settings for the first engine of a process only; later engines
  // would inherit the first one's precision.
  sg4::Engine::set_config("surf/precision", precision_s);
  hosts_.resize(static_cast<std::size_t>(gpus));
  build_fabric();
}

double SimulatedMachine::route_latency(int from, int to) const {
  std::vector<sg4::Link*> links;
  double ignored = 0.0;
  host(from)->route_to(host(to), links, &ignored);
  double sum = 0.0;
  for (const sg4::Link* link : links) {
    const auto it = latency_.find(link);
    sum += it == latency_.end() ? platform_.switch_latency_s : it->second;
  }
  return sum;
}

void SimulatedMachine::run() const {
  engine_->run();
}

// A node: its GPUs each behind its own port into the node switch, and a router into the fabric reached
// through the node's NIC links (nic_links(): one per GPU on a DGX, one per pair of GCDs on Frontier).
// Traffic inside the node crosses two GPU ports; traffic leaving it the GPU's port and its own NIC link, so
// a single flow never gets more than one link:
//              fabric
//                |
//              [gw]
//            /      \      NIC links (nic_bandwidth_Bps x nics_per_node / links each)
//         nic0      nic1
//         |  |      |  |   GPU ports (intra_node_bandwidth_Bps), also between the GPUs of the node
//        g0  g1    g2  g3
std::pair<SimulatedMachine::NetPoint*, SimulatedMachine::NetPoint*> SimulatedMachine::make_node(
    sg4::NetZone* parent, unsigned long id) {
  const PlatformSpec& p = platform_;
  auto* zone = sg4::create_full_zone(fmt::format("node{}", id));
  // Built apart from the platform and attached once the fabric stands (attach_nodes()): SimGrid checks each
  // new link's and host's name against every attached zone, which would make one zone per node quadratic in
  // the nodes. The node gets its parent's models (what set_parent would give it) to create its resources.
  kernel::routing::NetZoneImpl* impl = zone->get_impl();
  const kernel::routing::NetZoneImpl* models = parent->get_impl();
  impl->set_network_model(models->get_network_model());
  impl->set_cpu_pm_model(models->get_cpu_pm_model());
  impl->set_cpu_vm_model(models->get_cpu_vm_model());
  impl->set_disk_model(models->get_disk_model());
  impl->set_host_model(models->get_host_model());
  auto* gateway = zone->create_router(fmt::format("node{}-gw", id));
  const int links = nic_links(p);
  std::vector<sg4::Link*> nics;
  for (int k = 0; k < links; ++k) {
    auto* nic = zone->create_split_duplex_link(
        fmt::format("node{}-nic{}", id, k),
        p.nic_bandwidth_Bps * p.network_efficiency * static_cast<double>(p.nics_per_node) / links);
    set_latency(nic, p.nic_latency_s);
    nics.push_back(nic);
  }
  std::vector<std::pair<sg4::Host*, sg4::Link*>> gpus;
  for (int j = 0; j < p.gpus_per_node; ++j) {
    const long gpu = static_cast<long>(id) * p.gpus_per_node + j;
    // Leaves beyond the GPUs asked for (a fabric's last, partly used switch) get no hosts.
    if (gpu >= gpus_) {
      break;
    }
    auto* host = zone->create_host(fmt::format("gpu{}", gpu), 1e12);
    auto* port = zone->create_split_duplex_link(fmt::format("gpu{}-port", gpu),
                                                p.intra_node_bandwidth_Bps * p.intra_node_efficiency);
    set_latency(port, p.intra_node_latency_s);
    using Direction = sg4::LinkInRoute::Direction;
    zone->add_route(
        host->get_netpoint(), gateway, nullptr, nullptr,
        {{port, Direction::UP}, {nics[static_cast<std::size_t>(nic_link_of(p, j))], Direction::UP}}, true);
    for (const auto& [other, other_port] : gpus) {
      zone->add_route(other->get_netpoint(), host->get_netpoint(), nullptr, nullptr,
                      {{other_port, Direction::UP}, {port, Direction::DOWN}}, true);
    }
    gpus.emplace_back(host, port);
    hosts_[static_cast<std::size_t>(gpu)] = host;
  }
  detached_.emplace_back(zone, parent);
  return {zone->get_netpoint(), gateway};
}

void SimulatedMachine::attach_nodes() {
  // In the order made: a cluster fabric routes to a node by the id it gets here, which is then its position.
  for (const auto& [zone, parent] : detached_) {
    zone->set_parent(parent);
    zone->seal();
  }
  detached_.clear();
}

void SimulatedMachine::build_fabric() {
  const PlatformSpec& p = platform_;
  const double link_Bps = p.switch_bandwidth_Bps * p.network_efficiency;
  const auto leaf = [this](sg4::NetZone* zone, const std::vector<unsigned long>&, unsigned long id) {
    return make_node(zone, id);
  };
  const sg4::ClusterCallbacks callbacks(leaf);
  // SimGrid's torus names its links after the id a node gets when attached, right after the node is made: a
  // torus still pays the name checks over every node attached before.
  const auto attached_leaf = [this](sg4::NetZone* zone, const std::vector<unsigned long>&, unsigned long id) {
    const auto node = make_node(zone, id);
    attach_nodes();
    return node;
  };
  const sg4::ClusterCallbacks torus_callbacks(attached_leaf);
  const auto nodes = static_cast<unsigned>(nodes_);
  const auto policy = sg4::Link::SharingPolicy::SPLITDUPLEX;
  const Fabric fabric = nodes == 1 ? Fabric::star : p.fabric;
  sg4::NetZone* root = nullptr;
  switch (fabric) {
    case Fabric::star: {
      root = sg4::create_star_zone("fabric");
      std::vector<std::tuple<NetPoint*, NetPoint*, sg4::SplitDuplexLink*>> ports;
      for (unsigned k = 0; k < nodes; ++k) {
        auto [zone, gateway] = make_node(root, k);
        auto* port = root->create_split_duplex_link(fmt::format("switch-port{}", k), link_Bps);
        set_latency(port, p.switch_latency_s);
        ports.emplace_back(zone, gateway, port);
      }
      // A star's route names a node's gateway, which SimGrid finds only in an attached node.
      attach_nodes();
      for (const auto& [zone, gateway, port] : ports) {
        root->add_route(zone, nullptr, gateway, nullptr, {{port, sg4::LinkInRoute::Direction::UP}}, true);
      }
      break;
    }
    case Fabric::fat_tree: {
      // k nodes per leaf switch, each leaf switch wired to k spines: as many links up as down (full
      // bisection).
      const unsigned k = std::min(nodes, static_cast<unsigned>(p.nodes_per_switch));
      const unsigned leaves = (nodes + k - 1) / k;
      const sg4::FatTreeParams params = leaves == 1 ? sg4::FatTreeParams(1, {k}, {1}, {1})
                                                    : sg4::FatTreeParams(2, {k, leaves}, {1, k}, {1, 1});
      root = sg4::create_fatTree_zone("fabric", nullptr, params, callbacks, link_Bps, 0.0, policy);
      break;
    }
    case Fabric::dragonfly: {
      // nodes_per_switch nodes per router, up to 8 routers per chassis and 4 chassis per group, as many
      // groups as needed; all-to-all links inside a chassis, between chassis and between groups.
      const unsigned per_router = std::min(nodes, static_cast<unsigned>(p.nodes_per_switch));
      const unsigned routers_needed = (nodes + per_router - 1) / per_router;
      const unsigned routers = std::min(routers_needed, 8U);
      unsigned chassis = std::min((routers_needed + routers - 1) / routers, 4U);
      unsigned groups = (routers_needed + routers * chassis - 1) / (routers * chassis);
      if (groups > routers) {
        // SimGrid's dragonfly routing reaches other groups through one router per chassis slot: more
        // groups than routers per chassis crash its route lookup, so larger machines get more chassis.
        chassis = (routers_needed + routers * routers - 1) / (routers * routers);
        groups = (routers_needed + routers * chassis - 1) / (routers * chassis);
      }
      root = sg4::create_dragonfly_zone(
          "fabric", nullptr, sg4::DragonflyParams({groups, 1}, {chassis, 1}, {routers, 1}, per_router),
          callbacks, link_Bps, 0.0, policy);
      break;
    }
    case Fabric::torus: {
      const auto [rows, cols] = topology::most_square_shape(static_cast<int>(nodes));
      std::vector<unsigned long> dims = {static_cast<unsigned long>(cols)};
      if (rows > 1) {
        dims.insert(dims.begin(), static_cast<unsigned long>(rows));
      }
      root = sg4::create_torus_zone("fabric", nullptr, dims, torus_callbacks, link_Bps, 0.0, policy);
      break;
    }
  }
  attach_nodes();
  root->seal();
}

void SimulatedMachine::set_latency(const sg4::SplitDuplexLink* link, double seconds) {
  latency_[link->get_link_up()] = seconds;
  latency_[link->get_link_down()] = seconds;
}

}  // namespace dbench::sim
