// One worker's part of a gossip round: whom it sends its parameters to, whose it receives, and the mixing of
// its row with the simulator's arithmetic; and its part of a global average.
#pragma once

#include <cstddef>
#include <span>
#include <unordered_map>
#include <vector>

#include "runtime/communicator.hpp"
#include "topology/graph.hpp"

namespace dbench::runtime {

/// A worker's row of W and its out-neighbours.
struct GossipPlan {
  std::vector<int> in_peers;   ///< sources of the row's terms other than the worker itself, in row order
  std::vector<float> weight;   ///< every term's weight in row order, the worker's own included
  std::size_t self_term = 0;   ///< position of the worker's own term in the row
  std::vector<int> out_peers;  ///< workers whose rows read this worker, ascending
};

/// The plan of worker `rank` in `graph`; throws core::MixingError when its row has no self term.
GossipPlan plan_gossip(const topology::Graph& graph, int rank);

/// One worker's plans for the graphs a schedule uses, made on first use (graphs are the policy's and outlive
/// the run).
class GossipPlans {
 public:
  GossipPlans(int rank, int workers) : rank_(rank), workers_(workers) {}
  /// The plan of this worker in `graph`; throws core::ShapeError when the graph has another worker count.
  const GossipPlan& operator()(const topology::Graph& graph);

 private:
  int rank_;
  int workers_;
  std::unordered_map<const topology::Graph*, GossipPlan> plans_;
};

/// Sends `mine` to every out-neighbour and receives the in-neighbours' parameters, in_peers order, into
/// `received` (resized to in_peers.size() x mine.size()); all messages in flight at once.
void exchange_parameters(Communicator& comm, const GossipPlan& plan, std::span<const float> mine,
                         std::vector<float>& received, int tag);

/// out = the plan's row applied to `self` and `received` (core::mix_row: the simulator's rounding).
void mix_received(const GossipPlan& plan, std::span<const float> self, std::span<const float> received,
                  std::span<float> out, unsigned threads = 1);

/// values <- sum / workers: the mean of parameters whose sum over the workers an all-reduce gave.
void take_mean(std::span<float> values, std::span<const double> sum, int workers);

/// values <- their mean over every worker, summed in double like the simulator's all-reduce (a sum of a few
/// floats in double is exact, so the order in which MPI adds them does not matter); `sum` is scratch space.
void average_over_workers(Communicator& comm, std::span<float> values, std::vector<double>& sum);

}  // namespace dbench::runtime
