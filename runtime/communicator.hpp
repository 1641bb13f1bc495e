// The transport seen by a worker: point-to-point messages for gossip, all-reduce for centralized training and
// metrics. Implementations: MPI for host memory, NCCL for device memory, and a single-worker one.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace dbench::runtime {

/// How all-reduce combines the workers' values.
enum class ReduceOp { sum, min, max };

/// One outgoing message of an exchange.
struct SendBuffer {
  int peer = 0;                 ///< receiving rank
  std::span<const float> data;  ///< what it receives
};

/// One incoming message of an exchange.
struct RecvBuffer {
  int peer = 0;           ///< sending rank
  std::span<float> data;  ///< where it lands; its size is the message's
};

/// Traffic counted by a communicator since it was created.
struct CommCounters {
  std::int64_t bytes_sent = 0;  ///< payload bytes this worker sent (an all-reduce counts its buffer once)
  std::int64_t messages = 0;    ///< point-to-point messages and collectives started
};

/// Moves float buffers between the workers of one run; every call is collective over the peers it names.
/// Buffers live where the implementation expects them (host for MPI, device for NCCL). Calls throw
/// CommError on a failed call and PeerLostError when a peer stops answering.
class Communicator {
 public:
  virtual ~Communicator() = default;

  /// This worker's rank in [0, size()).
  virtual int rank() const = 0;
  /// Number of workers.
  virtual int size() const = 0;

  /// Sends `data` to `peer`; returns when the buffer may be reused.
  virtual void send(std::span<const float> data, int peer, int tag) = 0;
  /// Receives exactly data.size() floats from `peer`.
  virtual void recv(std::span<float> data, int peer, int tag) = 0;
  /// All sends and receives at once (a gossip round), returning when all have completed; concurrent, so no
  /// ordering between peers can deadlock.
  virtual void exchange(std::span<const SendBuffer> sends, std::span<const RecvBuffer> recvs, int tag) = 0;
  /// Element-wise reduction of every worker's `data` into every worker's `data`.
  virtual void allreduce(std::span<float> data, ReduceOp op) = 0;
  /// Element-wise reduction in double (sums of float values added exactly enough not to depend on order).
  virtual void allreduce(std::span<double> data, ReduceOp op) = 0;
  /// Copies root's bytes to every worker (host memory for every implementation).
  virtual void broadcast(std::span<std::byte> data, int root) = 0;
  /// Returns when every worker has called it.
  virtual void barrier() = 0;
  /// Traffic since creation.
  virtual CommCounters counters() const = 0;
};

/// The communicator of a run with one worker: no peers, reductions are the identity.
class SingleWorkerCommunicator final : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  void send(std::span<const float> data, int peer, int tag) override;
  void recv(std::span<float> data, int peer, int tag) override;
  void exchange(std::span<const SendBuffer> sends, std::span<const RecvBuffer> recvs, int tag) override;
  void allreduce(std::span<float>, ReduceOp) override {}
  void allreduce(std::span<double>, ReduceOp) override {}
  void broadcast(std::span<std::byte>, int) override {}
  void barrier() override {}
  CommCounters counters() const override { return {}; }
};

}  // namespace dbench::runtime
