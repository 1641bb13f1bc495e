// MPI for host buffers: point-to-point gossip, MPI all-reduce, and waits that end with an error naming the
// lost worker instead of hanging when a peer dies.
#pragma once

#include <memory>
#include <string>

#include "runtime/communicator.hpp"

namespace dbench::runtime {

/// The MPI library for the lifetime of the object: MPI_Init_thread on construction, MPI_Finalize on
/// destruction — skipped when the object is destroyed by an exception or after abandon(), because finalizing
/// next to a dead peer can hang.
class MpiEnvironment {
 public:
  /// Initializes MPI (threads may call it one at a time); throws CommError when that fails.
  MpiEnvironment(int* argc, char*** argv);
  /// Finalizes MPI unless an error is propagating or abandon() was called.
  ~MpiEnvironment();
  MpiEnvironment(const MpiEnvironment&) = delete;
  MpiEnvironment& operator=(const MpiEnvironment&) = delete;

  /// True when this process was started by an MPI launcher (mpirun, srun) with a world to join.
  static bool launched_by_mpi();
  /// Under srun, when the step's tasks were started without PMIx (`--mpi=none`, the usual site default, or
  /// `--mpi=pmi2`): one line saying so and what to run instead, because Open MPI as Debian builds it speaks
  /// only PMIx and would fail in MPI_Init with its own message. Empty otherwise, and always with other MPIs.
  static std::string srun_without_pmix();
  /// Leaves MPI without finalizing (after a peer was lost): the process should exit soon.
  void abandon() noexcept { abandoned_ = true; }
  /// Rank in MPI_COMM_WORLD.
  int world_rank() const noexcept { return world_rank_; }
  /// Size of MPI_COMM_WORLD.
  int world_size() const noexcept { return world_size_; }
  /// Rank among the workers of this node (selects the GPU).
  int local_rank() const noexcept { return local_rank_; }
  /// True when MPI allows calls from a helper thread (one thread at a time), as overlap needs.
  bool threads_allowed() const noexcept { return threads_allowed_; }

 private:
  int world_rank_ = 0;
  int world_size_ = 1;
  int local_rank_ = 0;
  bool threads_allowed_ = false;
  bool abandoned_ = false;
  int uncaught_at_start_ = 0;
};

/// Tuning of MpiCommunicator.
struct MpiOptions {
  /// A wait that makes no progress for this long ends with PeerLostError (it names the silent peer, found by
  /// a liveness round); 0 waits forever.
  double peer_timeout_s = 30.0;
};

/// A Communicator over a private duplicate of MPI_COMM_WORLD whose errors are returned (and thrown as
/// CommError), never fatal. Waits poll, so that they can time out; messages above 1 GiB are sent in parts.
class MpiCommunicator final : public Communicator {
 public:
  /// Duplicates MPI_COMM_WORLD; `env` must outlive the communicator.
  MpiCommunicator(const MpiEnvironment& env, MpiOptions options = {});
  ~MpiCommunicator() override;
  MpiCommunicator(const MpiCommunicator&) = delete;
  MpiCommunicator& operator=(const MpiCommunicator&) = delete;

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
