#include "runtime/mpi_communicator.hpp"

#include <sys/prctl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "runtime/mpi_check.hpp"

namespace dbench::runtime {
namespace {

// MPI counts are ints: larger buffers travel in parts of this many elements (1 GiB of floats).
constexpr std::size_t kMaxPart = std::size_t{1} << 28;
// Tag of the liveness round on the control communicator.
constexpr int kAliveTag = 1;
// How long a liveness round waits for answers at most: the survivors reach it within about one iteration.
constexpr double kAliveWindowS = 10.0;
/// Polls before a wait sleeps, when every worker has a core of its own.
constexpr int kSpinPolls = 2000;
/// Polls before a wait yields, when the node has more workers than cores.
constexpr int kSharedCoreSpinPolls = 50;
/// Yields between polls, after the spin, before a wait on shared cores sleeps instead.
constexpr int kSharedCoreYields = 200;

using Clock = std::chrono::steady_clock;

MPI_Op to_mpi(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum:
      return MPI_SUM;
    case ReduceOp::min:
      return MPI_MIN;
    case ReduceOp::max:
      return MPI_MAX;
  }
  return MPI_SUM;
}

std::string rank_list(const std::vector<int>& ranks) {
  std::string out;
  for (int r : ranks) {
    out += (out.empty() ? "" : ", ") + std::to_string(r);
  }
  return out;
}

}  // namespace

MpiEnvironment::MpiEnvironment(int* argc, char*** argv) : uncaught_at_start_(std::uncaught_exceptions()) {
  // Said once, by the step's first task, before MPI_Init has a chance to fail or hang.
  if (const std::string hint = srun_without_pmix(); !hint.empty()) {
    const char* task = std::getenv("SLURM_PROCID");
    if (task == nullptr || std::string_view(task) == "0") {
      std::fprintf(stderr, "%s\n", hint.c_str());
    }
  }
  int provided = MPI_THREAD_SINGLE;
  DBENCH_MPI_CHECK(MPI_Init_thread(argc, argv, MPI_THREAD_SERIALIZED, &provided));
  threads_allowed_ = provided >= MPI_THREAD_SERIALIZED;
  // Errors are returned to the checking macro (and thrown) instead of aborting the job from inside MPI.
  DBENCH_MPI_CHECK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
  DBENCH_MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &world_rank_));
  DBENCH_MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &world_size_));
  MPI_Comm node = MPI_COMM_NULL;
  DBENCH_MPI_CHECK(
      MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, world_rank_, MPI_INFO_NULL, &node));
  DBENCH_MPI_CHECK(MPI_Comm_rank(node, &local_rank_));
  DBENCH_MPI_CHECK(MPI_Comm_free(&node));
}

MpiEnvironment::~MpiEnvironment() {
  if (abandoned_ || std::uncaught_exceptions() > uncaught_at_start_) {
    return;
  }
  // A destructor cannot throw: a failing finalize is reported, and changes nothing else at the very end.
  DBENCH_MPI_CHECK_NOTHROW(MPI_Finalize());
}

std::string MpiEnvironment::srun_without_pmix() {
#if defined(OMPI_MAJOR_VERSION)
  const char* tasks = std::getenv("SLURM_STEP_NUM_TASKS");
  if (tasks == nullptr || std::getenv("SLURM_PROCID") == nullptr || std::getenv("PMIX_RANK") != nullptr ||
      std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr) {
    return {};  // not an srun step, or one whose tasks found their world
  }
  const char* plugin = std::getenv("SLURM_MPI_TYPE");
  const std::string used = plugin != nullptr && *plugin != '\0' ? plugin : "none";
  return std::string("dbench: srun started these ") + tasks + " tasks with --mpi=" + used +
         ", but this Open MPI joins a world only through PMIx: run srun --mpi=pmix "
         "(srun --mpi=list shows this Slurm's plugins), or mpirun inside the allocation";
#else
  return {};
#endif
}

bool MpiEnvironment::launched_by_mpi() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "SLURM_STEP_NUM_TASKS"}) {
    if (std::getenv(name) != nullptr) {
      return true;
    }
  }
  return false;
}

struct MpiCommunicator::Impl {
  MpiOptions options;
  MPI_Comm comm = MPI_COMM_NULL;
  MPI_Comm control = MPI_COMM_NULL;
  int rank = 0;
  int size = 1;
  /// More workers on this node than cores: waits spin briefly (a spinning worker would keep the core from
  /// the peer it waits for) and yield before they sleep.
  bool shared_cores = false;
  CommCounters counters;
  std::vector<int>
      alive_tokens;  // liveness messages stay valid after the round: their sends are not waited for

  /// Waits for every request; `peers[k]` is request k's peer (-1 for a collective). On timeout, a liveness
  /// round names the lost workers.
  void wait_all(std::vector<MPI_Request>& requests, const std::vector<int>& peers, const char* what) {
    if (requests.empty()) {
      return;
    }
    const auto start = Clock::now();
    int polls = 0;
    const int spin_polls = shared_cores ? kSharedCoreSpinPolls : kSpinPolls;
    for (;;) {
      int done = 0;
      DBENCH_MPI_CHECK(
          MPI_Testall(static_cast<int>(requests.size()), requests.data(), &done, MPI_STATUSES_IGNORE));
      if (done != 0) {
        return;
      }
      ++polls;
      // Spin briefly for latency, then leave the core to the other workers. Where workers share cores, a
      // worker first yields between polls, for short waits: the core goes to the peer it waits for if that
      // one is ready to run, and comes straight back otherwise (a sleep would stall a collective that only
      // progresses while polled); a long wait sleeps, off the run queue, so that the core's other workers
      // run undisturbed.
      if (polls > spin_polls) {
        if (shared_cores && polls < spin_polls + kSharedCoreYields) {
          std::this_thread::yield();
        } else {
          std::this_thread::sleep_for(std::chrono::microseconds(20));
        }
      }
      if ((polls & 63) == 0 && options.peer_timeout_s > 0.0 &&
          std::chrono::duration<double>(Clock::now() - start).count() > options.peer_timeout_s) {
        timed_out(requests, peers, what);
      }
    }
  }

  [[noreturn]] void timed_out(std::vector<MPI_Request>& requests, const std::vector<int>& peers,
                              const char* what) {
    std::vector<int> silent;
    for (std::size_t k = 0; k < requests.size(); ++k) {
      int done = 0;
      DBENCH_MPI_CHECK(MPI_Request_get_status(requests[k], &done, MPI_STATUS_IGNORE));
      if (done == 0 && peers[k] >= 0 && std::find(silent.begin(), silent.end(), peers[k]) == silent.end()) {
        silent.push_back(peers[k]);
      }
    }
    const std::vector<int> lost = find_lost();
    const std::vector<int>& named = lost.empty() ? silent : lost;
    const std::string timeout = std::to_string(static_cast<int>(options.peer_timeout_s));
    if (named.empty()) {
      throw PeerLostError(-1, std::string(what) + ": no progress for " + timeout +
                                  " s, yet every worker answers; a worker may be stuck");
    }
    throw PeerLostError(named.front(), "worker rank " + rank_list(named) + " lost: " + what +
                                           " made no progress for " + timeout + " s and rank " +
                                           rank_list(named) +
                                           " did not answer a liveness check (it died or hangs)");
  }

  /// Every survivor sends "alive" to every other worker and listens for kAliveWindowS: whoever stays silent
  /// is lost. Survivors reach this round within about one iteration of each other (they all end up waiting
  /// for the lost worker), well inside the window.
  std::vector<int> find_lost() {
    alive_tokens.assign(static_cast<std::size_t>(size), rank);
    std::vector<int> answers(static_cast<std::size_t>(size), -1);
    std::vector<MPI_Request> recvs;
    std::vector<int> from;
    for (int p = 0; p < size; ++p) {
      if (p == rank) {
        continue;
      }
      MPI_Request send = MPI_REQUEST_NULL;
      DBENCH_MPI_CHECK(
          MPI_Isend(&alive_tokens[static_cast<std::size_t>(p)], 1, MPI_INT, p, kAliveTag, control, &send));
      // Never waited for: the lost worker will not take it, and the process ends after this round.
      DBENCH_MPI_CHECK(MPI_Request_free(&send));
      recvs.emplace_back(MPI_REQUEST_NULL);
      from.push_back(p);
      DBENCH_MPI_CHECK(
          MPI_Irecv(&answers[static_cast<std::size_t>(p)], 1, MPI_INT, p, kAliveTag, control, &recvs.back()));
    }
    const auto start = Clock::now();
    const double window = std::min(kAliveWindowS, std::max(2.0, options.peer_timeout_s));
    while (std::chrono::duration<double>(Clock::now() - start).count() < window) {
      int done = 0;
      DBENCH_MPI_CHECK(MPI_Testall(static_cast<int>(recvs.size()), recvs.data(), &done, MPI_STATUSES_IGNORE));
      if (done != 0) {
        return {};
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    std::vector<int> lost;
    for (std::size_t k = 0; k < recvs.size(); ++k) {
      int done = 0;
      DBENCH_MPI_CHECK(MPI_Request_get_status(recvs[k], &done, MPI_STATUS_IGNORE));
      if (done == 0) {
        lost.push_back(from[k]);
      }
    }
    return lost;
  }

  template <class T>
  void allreduce(std::span<T> data, MPI_Datatype type, ReduceOp op) {
    for (std::size_t offset = 0; offset < data.size(); offset += kMaxPart) {
      const auto count = static_cast<int>(std::min(kMaxPart, data.size() - offset));
      std::vector<MPI_Request> request(1, MPI_REQUEST_NULL);
      DBENCH_MPI_CHECK(
          MPI_Iallreduce(MPI_IN_PLACE, data.data() + offset, count, type, to_mpi(op), comm, &request[0]));
      wait_all(request, {-1}, "all-reduce");
    }
    counters.bytes_sent += static_cast<std::int64_t>(data.size_bytes());
    ++counters.messages;
  }

  void post_send(std::span<const float> data, int peer, int tag, std::vector<MPI_Request>& requests,
                 std::vector<int>& peers) {
    for (std::size_t offset = 0; offset < data.size() || offset == 0; offset += kMaxPart) {
      const auto count = static_cast<int>(std::min(kMaxPart, data.size() - offset));
      requests.emplace_back(MPI_REQUEST_NULL);
      peers.push_back(peer);
      DBENCH_MPI_CHECK(MPI_Isend(data.data() + offset, count, MPI_FLOAT, peer, tag, comm, &requests.back()));
      if (data.empty()) {
        break;
      }
    }
    counters.bytes_sent += static_cast<std::int64_t>(data.size_bytes());
    ++counters.messages;
  }

  void post_recv(std::span<float> data, int peer, int tag, std::vector<MPI_Request>& requests,
                 std::vector<int>& peers) {
    for (std::size_t offset = 0; offset < data.size() || offset == 0; offset += kMaxPart) {
      const auto count = static_cast<int>(std::min(kMaxPart, data.size() - offset));
      requests.emplace_back(MPI_REQUEST_NULL);
      peers.push_back(peer);
      DBENCH_MPI_CHECK(MPI_Irecv(data.data() + offset, count, MPI_FLOAT, peer, tag, comm, &requests.back()));
      if (data.empty()) {
        break;
      }
    }
  }
};

MpiCommunicator::MpiCommunicator(const MpiEnvironment&, MpiOptions options)
    : impl_(std::make_unique<Impl>()) {
  impl_->options = options;
  DBENCH_MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &impl_->comm));
  DBENCH_MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &impl_->control));
  DBENCH_MPI_CHECK(MPI_Comm_set_errhandler(impl_->comm, MPI_ERRORS_RETURN));
  DBENCH_MPI_CHECK(MPI_Comm_set_errhandler(impl_->control, MPI_ERRORS_RETURN));
  DBENCH_MPI_CHECK(MPI_Comm_rank(impl_->comm, &impl_->rank));
  DBENCH_MPI_CHECK(MPI_Comm_size(impl_->comm, &impl_->size));
  MPI_Comm node = MPI_COMM_NULL;
  DBENCH_MPI_CHECK(MPI_Comm_split_type(impl_->comm, MPI_COMM_TYPE_SHARED, impl_->rank, MPI_INFO_NULL, &node));
  int on_node = 1;
  DBENCH_MPI_CHECK(MPI_Comm_size(node, &on_node));
  DBENCH_MPI_CHECK(MPI_Comm_free(&node));
  const long cores = ::sysconf(_SC_NPROCESSORS_ONLN);
  if (cores > 0 && on_node > cores) {
    impl_->shared_cores = true;
    // A wait's 20 us sleeps last 20 us, not the default 50 us of timer slack more: on shared cores every
    // wait ends in them, and the slack would add to every iteration (this thread and those it starts).
    ::prctl(PR_SET_TIMERSLACK, 1000UL, 0UL, 0UL, 0UL);
  }
}

MpiCommunicator::~MpiCommunicator() {
  // Freeing is local in practice, but skip it while unwinding from a lost peer, as MpiEnvironment does.
  if (std::uncaught_exceptions() == 0) {
    DBENCH_MPI_CHECK_NOTHROW(MPI_Comm_free(&impl_->control));
    DBENCH_MPI_CHECK_NOTHROW(MPI_Comm_free(&impl_->comm));
  }
}

int MpiCommunicator::rank() const {
  return impl_->rank;
}

int MpiCommunicator::size() const {
  return impl_->size;
}

void MpiCommunicator::send(std::span<const float> data, int peer, int tag) {
  const SendBuffer one{peer, data};
  exchange(std::span<const SendBuffer>(&one, 1), {}, tag);
}

void MpiCommunicator::recv(std::span<float> data, int peer, int tag) {
  const RecvBuffer one{peer, data};
  exchange({}, std::span<const RecvBuffer>(&one, 1), tag);
}

void MpiCommunicator::exchange(std::span<const SendBuffer> sends, std::span<const RecvBuffer> recvs,
                               int tag) {
  std::vector<MPI_Request> requests;
  std::vector<int> peers;
  // Receives first, so that arriving messages land in their buffers instead of MPI's unexpected queue.
  for (const RecvBuffer& r : recvs) {
    impl_->post_recv(r.data, r.peer, tag, requests, peers);
  }
  for (const SendBuffer& s : sends) {
    impl_->post_send(s.data, s.peer, tag, requests, peers);
  }
  impl_->wait_all(requests, peers, "gossip exchange");
}

void MpiCommunicator::allreduce(std::span<float> data, ReduceOp op) {
  impl_->allreduce(data, MPI_FLOAT, op);
}

void MpiCommunicator::allreduce(std::span<double> data, ReduceOp op) {
  impl_->allreduce(data, MPI_DOUBLE, op);
}

void MpiCommunicator::broadcast(std::span<std::byte> data, int root) {
  for (std::size_t offset = 0; offset < data.size(); offset += kMaxPart) {
    const auto count = static_cast<int>(std::min(kMaxPart, data.size() - offset));
    std::vector<MPI_Request> request(1, MPI_REQUEST_NULL);
    DBENCH_MPI_CHECK(MPI_Ibcast(data.data() + offset, count, MPI_BYTE, root, impl_->comm, &request[0]));
    impl_->wait_all(request, {-1}, "broadcast");
  }
}

void MpiCommunicator::barrier() {
  std::vector<MPI_Request> request(1, MPI_REQUEST_NULL);
  DBENCH_MPI_CHECK(MPI_Ibarrier(impl_->comm, &request[0]));
  impl_->wait_all(request, {-1}, "barrier");
}

CommCounters MpiCommunicator::counters() const {
  return impl_->counters;
}

}  // namespace dbench::runtime
