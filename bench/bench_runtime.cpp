// The runtime's communication against plain MPI measured in the same run:
//   1. the gossip exchange of a 100 MB model between 2 local workers vs MPI_Sendrecv of the same buffer;
//   2. per-iteration communication (exchange + mixing, or the gradient all-reduce) of each graph at 8
//      workers vs one MPI_Sendrecv ring shift of the same model.
// Run without arguments: it starts itself under mpirun for each part.
#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <string>
#include <vector>

#include "runtime/gossip.hpp"
#include "runtime/launcher.hpp"
#include "runtime/mpi_check.hpp"
#include "runtime/mpi_communicator.hpp"
#include "topology/generators.hpp"

namespace {

using namespace dbench;
using Clock = std::chrono::steady_clock;

double since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

/// The slowest worker's time: a round is over when every worker is done.
double slowest(runtime::Communicator& comm, double seconds) {
  std::vector<double> v{seconds};
  comm.allreduce(std::span<double>(v), runtime::ReduceOp::max);
  return v[0];
}

/// Best of `repeats` timings of `body` (after one warm-up), each started together on every worker.
template <class Body>
double best_time(runtime::Communicator& comm, int repeats, Body&& body) {
  body();
  double best = 1e300;
  for (int r = 0; r < repeats; ++r) {
    comm.barrier();
    const auto start = Clock::now();
    body();
    best = std::min(best, slowest(comm, since(start)));
  }
  return best;
}

/// MPI_Sendrecv of `send` to rank+shift into `recv` from rank-shift, in parts that fit an int count.
void sendrecv_shift(std::span<const float> send, std::span<float> recv, int rank, int size, int shift) {
  const int to = (rank + shift) % size;
  const int from = (rank - shift + size) % size;
  constexpr std::size_t kPart = std::size_t{1} << 28;
  for (std::size_t offset = 0; offset < send.size(); offset += kPart) {
    const auto count = static_cast<int>(std::min(kPart, send.size() - offset));
    DBENCH_MPI_CHECK(MPI_Sendrecv(send.data() + offset, count, MPI_FLOAT, to, 7, recv.data() + offset, count,
                                  MPI_FLOAT, from, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
  }
}

void bandwidth(runtime::MpiCommunicator& comm) {
  constexpr std::size_t kFloats = 25'000'000;  // 100 MB
  std::vector<float> mine(kFloats, 1.0f);
  std::vector<float> theirs(kFloats, 0.0f);
  std::vector<float> received;
  const topology::GraphSequence pair = topology::make_graph({topology::GraphKind::ring, 2});
  const runtime::GossipPlan plan = runtime::plan_gossip(pair.at(0), comm.rank());
  constexpr int kRepeats = 10;
  const double reference =
      best_time(comm, kRepeats, [&] { sendrecv_shift(mine, theirs, comm.rank(), comm.size(), 1); });
  const double gossip =
      best_time(comm, kRepeats, [&] { runtime::exchange_parameters(comm, plan, mine, received, 0); });
  if (comm.rank() == 0) {
    const double bytes = static_cast<double>(kFloats * sizeof(float));
    fmt::print("gossip exchange of a 100 MB model between 2 local workers (best of {}):\n", kRepeats);
    fmt::print("  MPI_Sendrecv (reference)  {:8.4f} s  {:6.2f} GB/s per direction\n", reference,
               bytes / reference / 1e9);
    fmt::print("  runtime gossip exchange   {:8.4f} s  {:6.2f} GB/s per direction\n", gossip,
               bytes / gossip / 1e9);
    fmt::print("  ratio gossip / reference bandwidth: {:.3f}  (target >= 0.9)\n", reference / gossip);
  }
}

void graphs(runtime::MpiCommunicator& comm, std::size_t params) {
  const int n = comm.size();
  std::vector<float> mine(params, 1.0f);
  std::vector<float> theirs(params, 0.0f);
  std::vector<float> received;
  std::vector<float> mixed(params);
  constexpr int kRepeats = 5;
  const double reference =
      best_time(comm, kRepeats, [&] { sendrecv_shift(mine, theirs, comm.rank(), n, 1); });
  if (comm.rank() == 0) {
    fmt::print("\nper-iteration communication at {} workers, {} parameters ({:.1f} MB; best of {}):\n", n,
               params, static_cast<double>(params * sizeof(float)) / 1e6, kRepeats);
    fmt::print("  {:<24} {:>9} {:>12} {:>14} {:>10}\n", "graph", "messages", "seconds", "MB sent/worker",
               "vs 1 shift");
    fmt::print("  {:<24} {:>9} {:>12.5f} {:>14.1f} {:>10.2f}\n", "MPI_Sendrecv shift (ref)", 1, reference,
               static_cast<double>(params * sizeof(float)) / 1e6, 1.0);
  }
  for (const char* name : {"ring", "torus", "hypercube", "exponential", "one-peer-exponential", "complete"}) {
    topology::GraphSpec spec;
    spec.kind = topology::parse_graph_kind(name);
    spec.nodes = n;
    const topology::GraphSequence sequence = topology::make_graph(spec);
    std::vector<runtime::GossipPlan> plans;
    for (const auto& g : sequence.rounds()) {
      plans.push_back(runtime::plan_gossip(g, comm.rank()));
    }
    std::size_t round = 0;
    std::size_t messages = 0;
    const auto before = comm.counters().bytes_sent;
    const double seconds = best_time(comm, kRepeats, [&] {
      const runtime::GossipPlan& plan = plans[round++ % plans.size()];
      messages = plan.out_peers.size();
      runtime::exchange_parameters(comm, plan, mine, received, 0);
      runtime::mix_received(plan, mine, received, mixed);
    });
    const double mb = static_cast<double>(comm.counters().bytes_sent - before) / (kRepeats + 1) / 1e6;
    if (comm.rank() == 0) {
      fmt::print("  {:<24} {:>9} {:>12.5f} {:>14.1f} {:>10.2f}\n", name, messages, seconds, mb,
                 seconds / reference);
    }
  }
  // Centralized training all-reduces the gradient in double (the simulator's summation).
  std::vector<double> grads(params, 1.0);
  const auto before = comm.counters().bytes_sent;
  const double seconds =
      best_time(comm, kRepeats, [&] { comm.allreduce(std::span<double>(grads), runtime::ReduceOp::sum); });
  const double mb = static_cast<double>(comm.counters().bytes_sent - before) / (kRepeats + 1) / 1e6;
  if (comm.rank() == 0) {
    fmt::print("  {:<24} {:>9} {:>12.5f} {:>14.1f} {:>10.2f}\n", "allreduce (centralized)", "-", seconds, mb,
               seconds / reference);
  }
}

}  // namespace

int main(int argc, char** argv) {
  try {
    if (!runtime::MpiEnvironment::launched_by_mpi()) {
      const std::string self = runtime::current_executable();
      int status = runtime::run_command(runtime::local_launch_command(2, self, {"--bandwidth"}));
      if (status == 0) {
        status = runtime::run_command(runtime::local_launch_command(8, self, {"--graphs"}));
      }
      return status;
    }
    runtime::MpiEnvironment env(&argc, &argv);
    runtime::MpiCommunicator comm(env);
    const std::string mode = argc > 1 ? argv[1] : "--bandwidth";
    if (mode == "--bandwidth") {
      if (comm.size() != 2) {
        throw std::invalid_argument("--bandwidth runs on exactly 2 workers");
      }
      bandwidth(comm);
    } else {
      graphs(comm, argc > 2 ? std::stoul(argv[2]) : 1'000'000);
    }
    return 0;
  } catch (const std::exception& e) {
    fmt::print(stderr, "bench_runtime: {}\n", e.what());
    return 1;
  }
}
