#include "runtime/gossip.hpp"

#include <fmt/core.h>

#include "core/errors.hpp"
#include "core/mixing.hpp"

namespace dbench::runtime {

GossipPlan plan_gossip(const topology::Graph& graph, int rank) {
  GossipPlan plan;
  const auto row = graph.row(rank);
  plan.self_term = row.size();
  for (std::size_t k = 0; k < row.size(); ++k) {
    plan.weight.push_back(static_cast<float>(row[k].weight));
    if (row[k].from == rank) {
      plan.self_term = k;
    } else {
      plan.in_peers.push_back(row[k].from);
    }
  }
  if (plan.self_term == row.size()) {
    throw core::MixingError(fmt::format("graph '{}': row {} has no self term", graph.name(), rank));
  }
  for (int i = 0; i < graph.nodes(); ++i) {
    if (i == rank) {
      continue;
    }
    for (const auto& e : graph.row(i)) {
      if (e.from == rank) {
        plan.out_peers.push_back(i);
      }
    }
  }
  return plan;
}

const GossipPlan& GossipPlans::operator()(const topology::Graph& graph) {
  auto it = plans_.find(&graph);
  if (it == plans_.end()) {
    if (graph.nodes() != workers_) {
      throw core::ShapeError(
          fmt::format("graph '{}' has {} nodes but {} workers run", graph.name(), graph.nodes(), workers_));
    }
    it = plans_.emplace(&graph, plan_gossip(graph, rank_)).first;
  }
  return it->second;
}

void exchange_parameters(Communicator& comm, const GossipPlan& plan, std::span<const float> mine,
                         std::vector<float>& received, int tag) {
  const std::size_t p = mine.size();
  received.resize(plan.in_peers.size() * p);
  std::vector<SendBuffer> sends;
  std::vector<RecvBuffer> recvs;
  for (int peer : plan.out_peers) {
    sends.push_back({peer, mine});
  }
  for (std::size_t k = 0; k < plan.in_peers.size(); ++k) {
    recvs.push_back({plan.in_peers[k], std::span<float>(received).subspan(k * p, p)});
  }
  comm.exchange(sends, recvs, tag);
}

void mix_received(const GossipPlan& plan, std::span<const float> self, std::span<const float> received,
                  std::span<float> out, unsigned threads) {
  const std::size_t p = self.size();
  std::vector<const float*> sources;
  std::size_t next = 0;
  for (std::size_t k = 0; k < plan.weight.size(); ++k) {
    sources.push_back(k == plan.self_term ? self.data() : received.data() + (next++) * p);
  }
  core::mix_row(plan.weight, sources, plan.self_term, out, core::MixOptions{0, threads, true});
}

void take_mean(std::span<float> values, std::span<const double> sum, int workers) {
  const auto n = static_cast<double>(workers);
  for (std::size_t j = 0; j < values.size(); ++j) {
    values[j] = static_cast<float>(sum[j] / n);
  }
}

void average_over_workers(Communicator& comm, std::span<float> values, std::vector<double>& sum) {
  sum.assign(values.begin(), values.end());
  comm.allreduce(std::span<double>(sum), ReduceOp::sum);
  take_mean(values, sum, comm.size());
}

}  // namespace dbench::runtime
