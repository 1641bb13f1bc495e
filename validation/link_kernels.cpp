#include "validation/link_kernels.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <array>
#include <functional>
#include <string>
#include <utility>

#include "core/mixing.hpp"
#include "runtime/gossip.hpp"
#include "validation/fits.hpp"
#include "validation/timed_rounds.hpp"

namespace dbench::validation {

void HostLinkBuffers::resize(std::size_t count) {
  params_.assign(count, 1.0f);
  mixed_.assign(count, 0.0f);
  received_.assign(count, 0.0f);
}

void HostLinkBuffers::mix() {
  const std::array<float, 2> weights{0.5f, 0.5f};
  const std::array<const float*, 2> sources{params_.data(), received_.data()};
  core::mix_row(weights, sources, 0, mixed_, core::MixOptions{0, 1, true});
  params_.swap(mixed_);
}

void HostLinkBuffers::average(runtime::Communicator& comm) {
  runtime::average_over_workers(comm, params_, sum_);
}

#if defined(DBENCH_RUNTIME_HAVE_TORCH)
DeviceLinkBuffers::DeviceLinkBuffers(std::string device) : device_(std::move(device)) {}

DeviceLinkBuffers::~DeviceLinkBuffers() = default;

void DeviceLinkBuffers::resize(std::size_t count) {
  buffers_.reset();
  buffers_ = std::make_unique<runtime::DeviceBuffers>(device_, count, 3);
}

std::span<float> DeviceLinkBuffers::params() {
  return (*buffers_)[0];
}

std::span<float> DeviceLinkBuffers::received() {
  return (*buffers_)[2];
}

void DeviceLinkBuffers::mix() {
  const std::array<std::size_t, 2> sources{0, 2};
  const std::array<float, 2> weights{0.5f, 0.5f};
  buffers_->mix(1, sources, weights);
  buffers_->swap(0, 1);
}

void DeviceLinkBuffers::average(runtime::Communicator& comm) {
  comm.allreduce(params(), runtime::ReduceOp::sum);
  buffers_->scale(0, 1.0 / comm.size());
}
#endif

void ring_round(runtime::Communicator& comm, LinkBuffers& buffers) {
  const int n = comm.size();
  const std::array<runtime::SendBuffer, 1> sends{
      runtime::SendBuffer{(comm.rank() + 1) % n, buffers.params()}};
  const std::array<runtime::RecvBuffer, 1> recvs{
      runtime::RecvBuffer{(comm.rank() + n - 1) % n, buffers.received()}};
  comm.exchange(sends, recvs, 9);
  buffers.mix();
}

namespace {

/// Times of at least this long, all within kFlatRatio of each other across the sizes, are the scheduler's
/// turns (a time slice is milliseconds), not a link's latency: an idle link here takes microseconds for the
/// smallest message. Where such times still grow with the size they are fitted: beside a steady load the
/// runs pay the same turns (a 4-worker calibration beside a busy core that charged its all-reduce 4.2 ms of
/// latency validated within 7.1 %).
constexpr double kSliceSeconds = 1e-3;
constexpr double kFlatRatio = 1.5;

/// The refusal of timings that stayed unfit: `fit_error` (the last fit's), and the timings; or, where every
/// size took about the same time of a millisecond or more, that they were the scheduler's turns.
std::string unfit_timings(const LinkCalibration& link, const std::string& fit_error, int attempts) {
  const auto [low, high] = std::minmax_element(link.seconds.begin(), link.seconds.end());
  if (*low >= kSliceSeconds && *high <= kFlatRatio * *low) {
    return fmt::format(
        "{}: every message size from {:g} B to {:g} B took {:.1f} to {:.1f} ms (timed {} times): the "
        "workers waited for their turns on cores that other processes, or more workers than cores, kept "
        "busy, and the link's time is lost in them (a link that slow shows it with larger --sizes); nothing "
        "is written from them: run it again on a machine to itself",
        link.pattern, link.bytes.front(), link.bytes.back(), 1e3 * *low, 1e3 * *high, attempts);
  }
  std::string measured;
  for (std::size_t i = 0; i < link.bytes.size(); ++i) {
    measured += fmt::format("{}{:g} B: {:.3e} s", i == 0 ? "" : ", ", link.bytes[i], link.seconds[i]);
  }
  return fmt::format("{}: {} (timed {} times; the last: {})", link.pattern, fit_error, attempts, measured);
}

}  // namespace

LinkCalibration time_link_over_sizes(std::string pattern, LinkBuffers& buffers, std::span<const double> sizes,
                                     const std::function<double()>& seconds) {
  constexpr int kAttempts = 3;
  LinkCalibration link;
  link.pattern = std::move(pattern);
  for (int attempt = 1;; ++attempt) {
    link.bytes.clear();
    link.seconds.clear();
    for (const double bytes : sizes) {
      const std::size_t count = std::max<std::size_t>(1, static_cast<std::size_t>(bytes) / sizeof(float));
      buffers.resize(count);
      link.bytes.push_back(static_cast<double>(count * sizeof(float)));
      link.seconds.push_back(seconds());
    }
    try {
      link.fit = fit_alpha_beta(link.bytes, link.seconds);
      return link;
    } catch (const FitError& e) {
      if (attempt == kAttempts) {
        throw LinkTimingRefused(unfit_timings(link, e.what(), kAttempts));
      }
    }
  }
}

LinkCalibration time_point_to_point(runtime::Communicator& host, runtime::Communicator& tensors,
                                    LinkBuffers& buffers, std::span<const double> sizes, int repeats) {
  const auto half_round_trip = [&] {
    const auto buffer = buffers.params();
    const double round_trip = seconds_per_call(host, repeats, [&] {
      if (tensors.rank() == 0) {
        tensors.send(buffer, 1, 7);
        tensors.recv(buffer, 1, 7);
      } else if (tensors.rank() == 1) {
        tensors.recv(buffer, 0, 7);
        tensors.send(buffer, 0, 7);
      }
    });
    return round_trip / 2.0;
  };
  return time_link_over_sizes("point-to-point (half a ping-pong between workers 0 and 1, the others idle)",
                              buffers, sizes, half_round_trip);
}

LinkCalibration time_exchange(runtime::Communicator& host, runtime::Communicator& tensors,
                              LinkBuffers& buffers, std::span<const double> sizes, int repeats) {
  return time_link_over_sizes(
      "exchange (every worker sends to the next, receives from the previous and mixes, at once)", buffers,
      sizes, [&] { return seconds_per_call(host, repeats, [&] { ring_round(tensors, buffers); }); });
}

LinkCalibration time_allreduce(runtime::Communicator& host, runtime::Communicator& tensors,
                               LinkBuffers& buffers, std::span<const double> sizes, int repeats,
                               const std::string& how) {
  return time_link_over_sizes(
      fmt::format("all-reduce (mean of a float gradient, {})", how), buffers, sizes,
      [&] { return seconds_per_call(host, repeats, [&] { buffers.average(tensors); }); });
}

#if defined(DBENCH_RUNTIME_HAVE_TORCH)
void device_gossip_round(runtime::Communicator& comm, const runtime::GossipPlan& plan,
                         runtime::DeviceBuffers& buffers) {
  std::vector<runtime::SendBuffer> sends;
  for (const int peer : plan.out_peers) {
    sends.push_back({peer, buffers[0]});
  }
  std::vector<runtime::RecvBuffer> recvs;
  for (std::size_t k = 0; k < plan.in_peers.size(); ++k) {
    recvs.push_back({plan.in_peers[k], buffers[2 + k]});
  }
  comm.exchange(sends, recvs, 13);
  std::vector<std::size_t> sources;
  std::size_t next = 2;
  for (std::size_t k = 0; k < plan.weight.size(); ++k) {
    sources.push_back(k == plan.self_term ? 0 : next++);
  }
  buffers.mix(1, sources, plan.weight);
  buffers.swap(0, 1);
}
#endif

}  // namespace dbench::validation
