// NCCL for device buffers: grouped ncclSend/ncclRecv for gossip, ncclAllReduce for centralized training. The
// NCCL unique id travels over a host communicator (MPI), which also carries broadcasts and barriers.
#pragma once

#include <memory>

#include "runtime/communicator.hpp"

namespace dbench::runtime {

/// Tuning of NcclCommunicator.
struct NcclOptions {
  /// The CUDA device of this worker; -1 picks local_rank modulo the visible devices.
  int device = -1;
  /// This worker's rank among the workers of its node (selects the device when `device` is -1).
  int local_rank = 0;
  /// A collective or exchange that does not finish within this many seconds aborts the communicator and
  /// throws PeerLostError (NCCL cannot tell which peer); 0 waits forever.
  double peer_timeout_s = 60.0;
};

/// A Communicator whose send/recv/exchange/allreduce spans are device memory on the selected GPU; broadcast
/// and barrier work on host memory through the bootstrap communicator, which must outlive this one.
class NcclCommunicator final : public Communicator {
 public:
  /// Selects the device, agrees on a unique id through `bootstrap` (rank 0 creates it) and joins the NCCL
  /// communicator of bootstrap.size() ranks. Throws CommError when there is no device or a call fails.
  NcclCommunicator(Communicator& bootstrap, NcclOptions options = {});
  ~NcclCommunicator() override;
  NcclCommunicator(const NcclCommunicator&) = delete;
  NcclCommunicator& operator=(const NcclCommunicator&) = delete;

  /// The CUDA device in use.
  int device() const;
  int rank() const override;
  int size() const override;
  void send(std::span<const float> data, int peer, int tag) override;
  void recv(std::span<float> data, int peer, int tag) override;
  void exchange(std::span<const SendBuffer> sends, std::span<const RecvBuffer> recvs, int tag) override;
  void allreduce(std::span<float> data, ReduceOp op) override;
  void allreduce(std::span<double> data, ReduceOp op) override;
  void broadcast(std::span<std::byte> data, int root) override;
  void barrier() override;
  CommCounters counters() const override;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace dbench::runtime
