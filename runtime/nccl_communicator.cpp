#include "runtime/nccl_communicator.hpp"

#include <chrono>
#include <cstring>
#include <exception>
#include <string>
#include <thread>

#include "runtime/cuda_check.hpp"

namespace dbench::runtime {
namespace {

using Clock = std::chrono::steady_clock;

ncclRedOp_t to_nccl(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum:
      return ncclSum;
    case ReduceOp::min:
      return ncclMin;
    case ReduceOp::max:
      return ncclMax;
  }
  return ncclSum;
}

}  // namespace

struct NcclCommunicator::Impl {
  Communicator* bootstrap = nullptr;
  NcclOptions options;
  int device = 0;
  int rank = 0;
  int size = 1;
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
  CommCounters counters;
  bool aborted = false;

  /// Waits for the stream, watching NCCL's asynchronous errors; on timeout the communicator is aborted so
  /// that no kernel stays blocked on a lost peer.
  void wait(const char* what) {
    const auto start = Clock::now();
    for (;;) {
      const cudaError_t state = cudaStreamQuery(stream);
      if (state == cudaSuccess) {
        return;
      }
      if (state != cudaErrorNotReady) {
        DBENCH_CUDA_CHECK(state);
      }
      ncclResult_t async = ncclSuccess;
      DBENCH_NCCL_CHECK(ncclCommGetAsyncError(comm, &async));
      if (async != ncclSuccess) {
        abort_comm();
        throw CommError(std::string(what) + ": NCCL reported " + ncclGetErrorString(async));
      }
      if (options.peer_timeout_s > 0.0 &&
          std::chrono::duration<double>(Clock::now() - start).count() > options.peer_timeout_s) {
        abort_comm();
        throw PeerLostError(-1, std::string(what) + " on GPU made no progress for " +
                                    std::to_string(static_cast<int>(options.peer_timeout_s)) +
                                    " s: a worker died or hangs (the MPI side names it)");
      }
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }

  void abort_comm() noexcept {
    if (!aborted && comm != nullptr) {
      aborted = true;
      DBENCH_NCCL_CHECK_NOTHROW(ncclCommAbort(comm));
    }
  }

  void count_send(std::size_t bytes) {
    counters.bytes_sent += static_cast<std::int64_t>(bytes);
    ++counters.messages;
  }
};

NcclCommunicator::NcclCommunicator(Communicator& bootstrap, NcclOptions options)
    : impl_(std::make_unique<Impl>()) {
  Impl& s = *impl_;
  s.bootstrap = &bootstrap;
  s.options = options;
  s.rank = bootstrap.rank();
  s.size = bootstrap.size();
  int devices = 0;
  DBENCH_CUDA_CHECK(cudaGetDeviceCount(&devices));
  if (devices == 0) {
    throw CommError("NcclCommunicator: no CUDA device is visible");
  }
  s.device = options.device >= 0 ? options.device : options.local_rank % devices;
  DBENCH_CUDA_CHECK(cudaSetDevice(s.device));
  DBENCH_CUDA_CHECK(cudaStreamCreateWithFlags(&s.stream, cudaStreamNonBlocking));
  ncclUniqueId id;
  std::memset(&id, 0, sizeof id);
  if (s.rank == 0) {
    DBENCH_NCCL_CHECK(ncclGetUniqueId(&id));
  }
  bootstrap.broadcast(std::as_writable_bytes(std::span(&id, 1)), 0);
  DBENCH_NCCL_CHECK(ncclCommInitRank(&s.comm, s.size, id, s.rank));
}

NcclCommunicator::~NcclCommunicator() {
  Impl& s = *impl_;
  // Destructors cannot throw: after a lost peer the communicator is aborted, otherwise destroyed in order.
  if (s.comm != nullptr && !s.aborted) {
    if (std::uncaught_exceptions() > 0) {
      s.abort_comm();
    } else {
      DBENCH_NCCL_CHECK_NOTHROW(ncclCommDestroy(s.comm));
    }
  }
  if (s.stream != nullptr) {
    DBENCH_CUDA_CHECK_NOTHROW(cudaStreamDestroy(s.stream));
  }
}

int NcclCommunicator::device() const {
  return impl_->device;
}

int NcclCommunicator::rank() const {
  return impl_->rank;
}

int NcclCommunicator::size() const {
  return impl_->size;
}

void NcclCommunicator::send(std::span<const float> data, int peer, int tag) {
  const SendBuffer one{peer, data};
  exchange(std::span<const SendBuffer>(&one, 1), {}, tag);
}

void NcclCommunicator::recv(std::span<float> data, int peer, int tag) {
  const RecvBuffer one{peer, data};
  exchange({}, std::span<const RecvBuffer>(&one, 1), tag);
}

void NcclCommunicator::exchange(std::span<const SendBuffer> sends, std::span<const RecvBuffer> recvs, int) {
  Impl& s = *impl_;
  // One group: NCCL matches the sends and receives of all peers together, so no order deadlocks. NCCL has
  // no tags; messages between two ranks arrive in the order they were issued on the stream.
  DBENCH_NCCL_CHECK(ncclGroupStart());
  for (const SendBuffer& b : sends) {
    DBENCH_NCCL_CHECK(ncclSend(b.data.data(), b.data.size(), ncclFloat32, b.peer, s.comm, s.stream));
    s.count_send(b.data.size_bytes());
  }
  for (const RecvBuffer& b : recvs) {
    DBENCH_NCCL_CHECK(ncclRecv(b.data.data(), b.data.size(), ncclFloat32, b.peer, s.comm, s.stream));
  }
  DBENCH_NCCL_CHECK(ncclGroupEnd());
  s.wait("gossip exchange");
}

void NcclCommunicator::allreduce(std::span<float> data, ReduceOp op) {
  Impl& s = *impl_;
  DBENCH_NCCL_CHECK(
      ncclAllReduce(data.data(), data.data(), data.size(), ncclFloat32, to_nccl(op), s.comm, s.stream));
  s.count_send(data.size_bytes());
  s.wait("all-reduce");
}

void NcclCommunicator::allreduce(std::span<double> data, ReduceOp op) {
  Impl& s = *impl_;
  DBENCH_NCCL_CHECK(
      ncclAllReduce(data.data(), data.data(), data.size(), ncclFloat64, to_nccl(op), s.comm, s.stream));
  s.count_send(data.size_bytes());
  s.wait("all-reduce");
}

void NcclCommunicator::broadcast(std::span<std::byte> data, int root) {
  impl_->bootstrap->broadcast(data, root);
}

void NcclCommunicator::barrier() {
  impl_->wait("barrier");
  impl_->bootstrap->barrier();
}

CommCounters NcclCommunicator::counters() const {
  return impl_->counters;
}

}  // namespace dbench::runtime
