// The link measurements of `dbench calibrate`: point-to-point, concurrent exchanges and all-reduce over
// message sizes, on the memory and with the arithmetic of the workers being calibrated (host memory for the
// CPU workers, LibTorch tensors on a device for the LibTorch worker).
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "runtime/communicator.hpp"
#include "validation/calibration.hpp"

#if defined(DBENCH_RUNTIME_HAVE_TORCH)
#include "runtime/gossip.hpp"
#include "runtime/torch_worker.hpp"
#endif

namespace dbench::validation {

/// The buffers the link timings move, in the memory and with the arithmetic of the workers being calibrated:
/// a worker's parameters, the target it mixes into and a received message, all of one size.
class LinkBuffers {
 public:
  virtual ~LinkBuffers() = default;
  /// Every buffer holds `count` floats from now on.
  virtual void resize(std::size_t count) = 0;
  /// The parameters: what a worker sends.
  virtual std::span<float> params() = 0;
  /// Where a worker receives a message.
  virtual std::span<float> received() = 0;
  /// The parameters and the received message mixed half and half into the target, which then becomes the
  /// parameters: a worker's store swaps its buffers the same way.
  virtual void mix() = 0;
  /// The parameters become their mean over every worker of `comm`, as centralized training takes the mean of
  /// a gradient.
  virtual void average(runtime::Communicator& comm) = 0;
};

/// Host memory, mixed and averaged as the CPU workers of dbench train do (core::mix_row; an all-reduce summed
/// in double). After resize the parameters are ones and the received message zeros.
class HostLinkBuffers final : public LinkBuffers {
 public:
  void resize(std::size_t count) override;
  std::span<float> params() override { return params_; }
  std::span<float> received() override { return received_; }
  void mix() override;
  void average(runtime::Communicator& comm) override;

 private:
  std::vector<float> params_, mixed_, received_;
  std::vector<double> sum_;
};

#if defined(DBENCH_RUNTIME_HAVE_TORCH)
/// LibTorch tensors on `device` ("cpu", "cuda" or "cuda:N"), mixed and averaged as the LibTorch worker does
/// (a float all-reduce, then a division on the device).
class DeviceLinkBuffers final : public LinkBuffers {
 public:
  explicit DeviceLinkBuffers(std::string device);
  ~DeviceLinkBuffers() override;
  void resize(std::size_t count) override;
  std::span<float> params() override;
  std::span<float> received() override;
  void mix() override;
  void average(runtime::Communicator& comm) override;

 private:
  std::string device_;
  std::unique_ptr<runtime::DeviceBuffers> buffers_;
};
#endif

/// A ring's gossip round on `comm`: every worker sends its parameters to the next, receives the previous
/// one's and mixes them (LinkBuffers::mix).
void ring_round(runtime::Communicator& comm, LinkBuffers& buffers);

/// A link's timings that stayed unfit for an alpha-beta line through every attempt: the machine would not
/// give the measurement (the same on every worker, whose timings are the slowest worker's), so calibrate
/// refuses in one line rather than fail.
class LinkTimingRefused : public FitError {
 public:
  using FitError::FitError;
};

/// `seconds()` at each of `sizes` with `buffers` resized to that many bytes of floats (rounded down, at least
/// one float), recorded at the bytes a message then carries, and their alpha-beta fit: the link kernels below
/// each time their pattern with it. Every worker must get the same timings (each the slowest worker's), so
/// that all take the same decisions: where the times do not grow with the size (a slow spell over the small
/// messages of an idle 2-worker run did that once), all sizes are timed again, twice at most, before a
/// LinkTimingRefused naming `pattern` and giving the last timings; where every size took about the same
/// time of a millisecond or more (four workers on two cores beside a busy one: 3.4-4.2 ms from 256 B to
/// 1 MiB), it says that they timed the scheduler's turns, not the link, instead of the timings.
LinkCalibration time_link_over_sizes(std::string pattern, LinkBuffers& buffers, std::span<const double> sizes,
                                     const std::function<double()>& seconds);

/// Half a ping-pong round trip between workers 0 and 1 (the others wait), one message on an idle link, at
/// each of `sizes` (bytes of floats, at least one float), each seconds_per_call with `repeats`; with its
/// alpha-beta fit (seconds, bytes per second). `host` times and synchronizes; `tensors` carries the messages.
/// Needs at least 2 workers.
LinkCalibration time_point_to_point(runtime::Communicator& host, runtime::Communicator& tensors,
                                    LinkBuffers& buffers, std::span<const double> sizes, int repeats);

/// A ring_round on `tensors` at each of `sizes` (bytes of floats per message, at least one float): every
/// worker sends to the next and receives from the previous at once, then mixes; seconds per round
/// (seconds_per_call with `repeats`, timed on `host`) and their alpha-beta fit. Needs at least 2 workers.
LinkCalibration time_exchange(runtime::Communicator& host, runtime::Communicator& tensors,
                              LinkBuffers& buffers, std::span<const double> sizes, int repeats);

/// The mean of a float gradient over every worker of `tensors` the way centralized training takes it
/// (LinkBuffers::average: on CPU workers widened to double, summed in double and narrowed back) at each of
/// `sizes` (bytes of the float gradient, at least one float); seconds per call (seconds_per_call with
/// `repeats`, timed on `host`) and their alpha-beta fit. `how` says how the mean is summed, for the pattern's
/// description.
LinkCalibration time_allreduce(runtime::Communicator& host, runtime::Communicator& tensors,
                               LinkBuffers& buffers, std::span<const double> sizes, int repeats,
                               const std::string& how);

#if defined(DBENCH_RUNTIME_HAVE_TORCH)
/// The gossip round of `plan` on device buffers as a worker's exchange and mixing make it: buffer 0 (the
/// parameters) to every out-peer, every in-peer's message into buffers 2, 3, ..., all mixed with the plan's
/// weights into buffer 1, which then becomes buffer 0. `buffers` holds 2 + plan.in_peers.size() buffers.
void device_gossip_round(runtime::Communicator& comm, const runtime::GossipPlan& plan,
                         runtime::DeviceBuffers& buffers);
#endif

}  // namespace dbench::validation
