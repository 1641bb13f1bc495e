// The timing model's machine: the SimGrid platform of a PlatformSpec for a number of GPUs.
#include "sim/simulated_machine.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <simgrid/kernel/routing/NetZoneImpl.hpp>
#include <string>
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

// A two-level fat-tree with full bisection: leaf switches of k nodes, k spines, every leaf wired to every
// spine, each link split-duplex. Routed destination-mod-k, as SimGrid's fat-tree zone routes it: a message
// between leaves goes up through the spine of its destination's slot under its leaf, then down to the
// destination's leaf and node; within a leaf, up to the leaf and down. SimGrid's zone (create_fatTree_zone)
// pairs every node with every leaf switch while wiring them, a string stream each, which made building it
// quadratic in the nodes (3 s of the 26 s of an all-reduce's timing at 131,072 GPUs, 3x per doubling);
// this zone is built in one pass over the nodes and leaves and routes in constant time.
//
// Its routes cross the same links in the same order as SimGrid's: SimGrid numbers the spines differently
// (its destination index counts every fat-tree node the process has built), which is a renaming of the
// spines, the same for every leaf, so every link carries the same flows.
class LeafSpineZone final : public kernel::routing::NetZoneImpl {
 public:
  using NetPoint = kernel::routing::NetPoint;
  using LinkImpl = kernel::resource::StandardLinkImpl;

  LeafSpineZone(const std::string& name, int per_leaf) : NetZoneImpl(name), per_leaf_(per_leaf) {}

  // Node `nodes_.size()`: its zone, the gateway routes enter it by, and its link to its leaf switch.
  void add_node(const NetPoint* zone, NetPoint* gateway, const sg4::SplitDuplexLink* port) {
    index_.emplace(zone, static_cast<int>(nodes_.size()));
    nodes_.push_back({gateway, port->get_link_up()->get_impl(), port->get_link_down()->get_impl()});
  }
  // The link of leaf `leaf` to spine `spine`; spines are added leaf by leaf, k per leaf.
  void add_spine_link(const sg4::SplitDuplexLink* link) {
    spines_.emplace_back(link->get_link_up()->get_impl(), link->get_link_down()->get_impl());
  }

 protected:
  void get_local_route(const NetPoint* src, const NetPoint* dst, kernel::routing::Route* into,
                       double* /*latency: the links carry none in SimGrid (see SimulatedMachine)*/) override {
    const auto from = index_.find(src);
    const auto to = index_.find(dst);
    if (from == index_.end() || to == index_.end()) {
      return;  // a router: no route of its own
    }
    const int a = from->second;
    const int b = to->second;
    const auto k = static_cast<std::size_t>(per_leaf_);
    const auto& source = nodes_[static_cast<std::size_t>(a)];
    const auto& destination = nodes_[static_cast<std::size_t>(b)];
    into->link_list_.push_back(source.up);
    if (a / per_leaf_ != b / per_leaf_) {
      const std::size_t spine = static_cast<std::size_t>(b) % k;
      into->link_list_.push_back(spines_[static_cast<std::size_t>(a / per_leaf_) * k + spine].first);
      into->link_list_.push_back(spines_[static_cast<std::size_t>(b / per_leaf_) * k + spine].second);
    }
    into->link_list_.push_back(destination.down);
    into->gw_src_ = source.gateway;
    into->gw_dst_ = destination.gateway;
  }

 private:
  struct Node {
    NetPoint* gateway;
    LinkImpl* up;
    LinkImpl* down;
  };
  int per_leaf_;
  std::vector<Node> nodes_;
  std::unordered_map<const NetPoint*, int> index_;
  std::vector<std::pair<LinkImpl*, LinkImpl*>> spines_;  // up and down, [leaf * k + spine]
};

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
  return route_latency(links);
}

double SimulatedMachine::route_latency(const std::vector<sg4::Link*>& links) const {
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
  zone->set_parent(parent);
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
  // Sealing a zone seals the hosts SimGrid finds from the root, which the fabric does not reach yet (see
  // build_fabric()): the node seals its own.
  for (const auto& [host, port] : gpus) {
    host->seal();
  }
  zone->seal();
  return {zone->get_netpoint(), gateway};
}

// Buildings of a leaf-spine fat-tree each, joined through one uplink per building:
//                       campus
//          uplink0 /             \ uplink1    inter_building_bandwidth_Bps, inter_building_latency_s
//       building0 [border]    building1       the spines: one non-blocking layer
//     spines0 /       \ spines1               a leaf's k links to the spines, as one link k times as wide
//        leaf0        leaf1                   the leaf switches
//   port /  \ port                            switch_bandwidth_Bps
//    node0  node1
// Traffic within a leaf crosses two node ports, between leaves also two leaves' spine links (four fabric
// hops, as a fat-tree's), between buildings also both buildings' uplinks. Every level is a star zone, built
// in one pass over the nodes. SimGrid expects a route's gateways at the depth of the zones they serve, so
// each gateway (a leaf's way to the spines, a building's border router) sits in a zone of its own.
simgrid::s4u::NetZone* SimulatedMachine::build_buildings(sg4::NetZone* parent) {
  const PlatformSpec& p = platform_;
  using Direction = sg4::LinkInRoute::Direction;
  const double link_Bps = p.switch_bandwidth_Bps * p.network_efficiency;
  const int per_building = nodes_per_building(p, nodes_);
  const int per_leaf = std::min(per_building, p.nodes_per_switch);
  // A zone holding one router, member of `zone` with no link to its centre: a gateway of `zone`.
  int leaves = 0;  // leaves so far, over all buildings: each one's name is unique
  const auto add_gateway = [](sg4::NetZone* zone, const std::string& name) {
    auto* holder = sg4::create_star_zone(name);
    holder->set_parent(zone);
    auto* router = holder->create_router(name + "-gw");
    holder->seal();
    zone->add_route(holder->get_netpoint(), nullptr, router, nullptr, {}, true);
    return router;
  };
  auto* campus = sg4::create_star_zone("fabric");
  campus->set_parent(parent);
  const int buildings = building_count(p, nodes_);
  for (int b = 0; b < buildings; ++b) {
    auto* building = sg4::create_star_zone(fmt::format("building{}", b));
    building->set_parent(campus);
    const int end = std::min(nodes_, (b + 1) * per_building);
    for (int first = b * per_building; first < end; first += per_leaf, ++leaves) {
      auto* leaf = sg4::create_star_zone(fmt::format("leaf{}", leaves));
      leaf->set_parent(building);
      for (int id = first; id < std::min(end, first + per_leaf); ++id) {
        auto [zone, gateway] = make_node(leaf, static_cast<unsigned long>(id));
        auto* port = leaf->create_split_duplex_link(fmt::format("node{}-port", id), link_Bps);
        set_latency(port, p.switch_latency_s);
        leaf->add_route(zone, nullptr, gateway, nullptr, {{port, Direction::UP}}, true);
      }
      auto* spines_gateway = add_gateway(leaf, fmt::format("leaf{}-spines", leaves));
      leaf->seal();
      auto* spines = building->create_split_duplex_link(fmt::format("leaf{}-spines", leaves),
                                                        link_Bps * static_cast<double>(per_leaf));
      set_latency(spines, p.switch_latency_s);
      building->add_route(leaf->get_netpoint(), nullptr, spines_gateway, nullptr, {{spines, Direction::UP}},
                          true);
    }
    auto* border = add_gateway(building, fmt::format("building{}-border", b));
    building->seal();
    std::vector<sg4::LinkInRoute> out;  // none where one building holds every node (its uplink may be 0 B/s)
    if (buildings > 1) {
      auto* uplink = campus->create_split_duplex_link(fmt::format("building{}-uplink", b),
                                                      p.inter_building_bandwidth_Bps * p.network_efficiency);
      set_latency(uplink, p.inter_building_latency_s);
      out.emplace_back(uplink, Direction::UP);
    }
    campus->add_route(building->get_netpoint(), nullptr, border, nullptr, out, true);
  }
  campus->seal();
  return campus;
}

void SimulatedMachine::build_fabric() {
  const PlatformSpec& p = platform_;
  const double link_Bps = p.switch_bandwidth_Bps * p.network_efficiency;
  const auto leaf = [this](sg4::NetZone* zone, const std::vector<unsigned long>&, unsigned long id) {
    return make_node(zone, id);
  };
  const sg4::ClusterCallbacks callbacks(leaf);
  const auto nodes = static_cast<unsigned>(nodes_);
  const auto policy = sg4::Link::SharingPolicy::SPLITDUPLEX;
  const Fabric fabric = nodes == 1 ? Fabric::star : p.fabric;
  // SimGrid checks each new link's and host's name, and gathers a zone's hosts when sealing it, over every
  // zone the root reaches: with one zone per node, building the machine would be quadratic in the nodes. The
  // fabric is built under `staging`, given the root's models but reaching the root only once the fabric
  // stands. Routes between GPUs stay within the fabric, so the two zones above it add nothing to them.
  sg4::NetZone* top = sg4::create_empty_zone("machine");  // the first zone made: SimGrid's root
  sg4::NetZone* staging = sg4::create_empty_zone("staging");
  kernel::routing::NetZoneImpl* impl = staging->get_impl();
  const kernel::routing::NetZoneImpl* models = top->get_impl();
  impl->set_network_model(models->get_network_model());
  impl->set_cpu_pm_model(models->get_cpu_pm_model());
  impl->set_cpu_vm_model(models->get_cpu_vm_model());
  impl->set_disk_model(models->get_disk_model());
  impl->set_host_model(models->get_host_model());
  sg4::NetZone* network = nullptr;
  switch (fabric) {
    case Fabric::star: {
      network = sg4::create_star_zone("fabric");
      network->set_parent(staging);
      for (unsigned k = 0; k < nodes; ++k) {
        auto [zone, gateway] = make_node(network, k);
        auto* port = network->create_split_duplex_link(fmt::format("switch-port{}", k), link_Bps);
        set_latency(port, p.switch_latency_s);
        network->add_route(zone, nullptr, gateway, nullptr, {{port, sg4::LinkInRoute::Direction::UP}}, true);
      }
      break;
    }
    case Fabric::fat_tree: {
      // k nodes per leaf switch, each leaf switch wired to k spines: as many links up as down (full
      // bisection).
      const unsigned k = std::min(nodes, static_cast<unsigned>(p.nodes_per_switch));
      const unsigned leaves = (nodes + k - 1) / k;
      auto* zone = new LeafSpineZone("fabric", static_cast<int>(k));  // owned by its parent from here
      zone->set_parent(staging->get_impl());
      network = zone->get_iface();
      for (unsigned id = 0; id < nodes; ++id) {
        auto [node, gateway] = make_node(network, id);
        auto* port = network->create_split_duplex_link(fmt::format("node{}-port", id), link_Bps);
        set_latency(port, p.switch_latency_s);
        zone->add_node(node, gateway, port);
      }
      for (unsigned l = 0; leaves > 1 && l < leaves; ++l) {
        for (unsigned spine = 0; spine < k; ++spine) {
          auto* link = network->create_split_duplex_link(fmt::format("leaf{}-spine{}", l, spine), link_Bps);
          set_latency(link, p.switch_latency_s);
          zone->add_spine_link(link);
        }
      }
      network->seal();
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
      network = sg4::create_dragonfly_zone(
          "fabric", staging, sg4::DragonflyParams({groups, 1}, {chassis, 1}, {routers, 1}, per_router),
          callbacks, link_Bps, 0.0, policy);
      break;
    }
    case Fabric::torus: {
      const auto [rows, cols] = topology::most_square_shape(static_cast<int>(nodes));
      std::vector<unsigned long> dims = {static_cast<unsigned long>(cols)};
      if (rows > 1) {
        dims.insert(dims.begin(), static_cast<unsigned long>(rows));
      }
      network = sg4::create_torus_zone("fabric", staging, dims, callbacks, link_Bps, 0.0, policy);
      break;
    }
    case Fabric::multi_building:
      network = build_buildings(staging);
      break;
  }
  staging->set_parent(top);
  top->seal();
}

void SimulatedMachine::set_latency(const sg4::SplitDuplexLink* link, double seconds) {
  latency_[link->get_link_up()] = seconds;
  latency_[link->get_link_down()] = seconds;
}

}  // namespace dbench::sim
