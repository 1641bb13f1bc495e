#include "sim/max_min_flows.hpp"

#include <algorithm>
#include <limits>
#include <stdexcept>

namespace dbench::sim {
namespace {

// Ties: link shares this close to the smallest saturate in the same round, completions this close to the
// earliest are one event.
constexpr double kShareTie = 1e-12;
constexpr double kFinishTie = 1e-9;

}  // namespace

std::vector<double> max_min_finish_times(const MaxMinFlows& flows) {
  const std::size_t n = flows.bytes.size();
  const std::size_t links = flows.capacity_Bps.size();
  const auto route = [&](std::uint32_t f) {
    return std::pair(flows.route_links.begin() + flows.route_begin[f],
                     flows.route_links.begin() + flows.route_begin[f + 1]);
  };
  std::vector<double> finish(n, 0.0);
  std::vector<double> remaining = flows.bytes;
  std::vector<std::uint32_t> active;
  for (std::uint32_t f = 0; f < n; ++f) {
    if (flows.bytes[f] > 0.0 && flows.route_begin[f + 1] > flows.route_begin[f]) {
      active.push_back(f);
    }
  }
  std::vector<double> rate(n, 0.0);
  std::vector<char> fixed(n, 0);
  std::vector<double> spare(links, 0.0);         // capacity not yet given to fixed flows
  std::vector<std::uint32_t> unfixed(links, 0);  // crossings by flows whose rate is not fixed yet
  std::vector<std::uint32_t> first(links, 0);    // the link's flows: crossing[first .. end)
  std::vector<std::uint32_t> end(links, 0);
  std::vector<std::uint32_t> crossing;
  std::vector<std::uint32_t> used;
  std::vector<std::uint32_t> saturated;
  double now = 0.0;
  while (!active.empty()) {
    // Which active flows cross each link (a counting sort by link).
    used.clear();
    for (const std::uint32_t f : active) {
      fixed[f] = 0;
      for (auto [l, last] = route(f); l != last; ++l) {
        if (unfixed[*l]++ == 0) {
          used.push_back(*l);
        }
      }
    }
    std::uint32_t offset = 0;
    for (const std::uint32_t l : used) {
      first[l] = end[l] = offset;
      offset += unfixed[l];
      spare[l] = flows.capacity_Bps[l];
    }
    crossing.resize(offset);
    for (const std::uint32_t f : active) {
      for (auto [l, last] = route(f); l != last; ++l) {
        crossing[end[*l]++] = f;
      }
    }
    // Progressive filling: the link with the smallest fair share fixes its flows at that share.
    std::size_t left = active.size();
    while (left > 0) {
      std::erase_if(used, [&](std::uint32_t l) { return unfixed[l] == 0; });
      double share = std::numeric_limits<double>::infinity();
      for (const std::uint32_t l : used) {
        share = std::min(share, spare[l] / unfixed[l]);
      }
      if (!(share > 0.0)) {
        throw std::logic_error("max_min_finish_times: a link without capacity left holds a flow");
      }
      saturated.clear();
      for (const std::uint32_t l : used) {
        if (spare[l] <= share * (1.0 + kShareTie) * unfixed[l]) {
          saturated.push_back(l);
        }
      }
      for (const std::uint32_t l : saturated) {
        for (std::uint32_t k = first[l]; k < end[l]; ++k) {
          const std::uint32_t f = crossing[k];
          if (fixed[f] != 0) {
            continue;
          }
          fixed[f] = 1;
          rate[f] = share;
          --left;
          for (auto [l2, last] = route(f); l2 != last; ++l2) {
            spare[*l2] = std::max(0.0, spare[*l2] - share);
            --unfixed[*l2];
          }
        }
      }
    }
    // The next completions; the others move on at their rates.
    double dt = std::numeric_limits<double>::infinity();
    for (const std::uint32_t f : active) {
      dt = std::min(dt, remaining[f] / rate[f]);
    }
    std::size_t kept = 0;
    for (const std::uint32_t f : active) {
      const double t = remaining[f] / rate[f];
      if (t <= dt * (1.0 + kFinishTie)) {
        finish[f] = now + t;
      } else {
        remaining[f] -= rate[f] * dt;
        active[kept++] = f;
      }
    }
    active.resize(kept);
    now += dt;
  }
  return finish;
}

}  // namespace dbench::sim
