// The single-worker communicator, the local launch command, and the mixing row a worker computes.
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "core/mixing.hpp"
#include "runtime/communicator.hpp"
#include "runtime/errors.hpp"
#include "runtime/launcher.hpp"
#include "runtime/timed_communicator.hpp"

using namespace dbench::runtime;

TEST_CASE("runtime::communicator: one worker reduces to itself and has no peers") {
  SingleWorkerCommunicator comm;
  CHECK(comm.rank() == 0);
  CHECK(comm.size() == 1);
  std::vector<double> values{1.5, -2.0};
  comm.allreduce(std::span<double>(values), ReduceOp::sum);
  CHECK(values == std::vector<double>{1.5, -2.0});
  comm.exchange({}, {}, 0);
  std::vector<float> buffer(4);
  CHECK_THROWS_AS(comm.send(buffer, 1, 0), CommError);
  CHECK_THROWS_AS(comm.recv(buffer, 1, 0), CommError);
}

TEST_CASE("runtime::communicator: the timing decorator counts its calls' time, failed calls and waits too") {
  // A communicator whose barrier takes 30 ms: what a slow peer looks like from here.
  class SlowBarrier final : public Communicator {
   public:
    int rank() const override { return 0; }
    int size() const override { return 1; }
    void send(std::span<const float> data, int peer, int tag) override { single.send(data, peer, tag); }
    void recv(std::span<float> data, int peer, int tag) override { single.recv(data, peer, tag); }
    void exchange(std::span<const SendBuffer>, std::span<const RecvBuffer>, int) override {}
    void allreduce(std::span<float>, ReduceOp) override {}
    void allreduce(std::span<double> data, ReduceOp) override { data[0] += 1.0; }
    void broadcast(std::span<std::byte>, int) override {}
    void barrier() override { std::this_thread::sleep_for(std::chrono::milliseconds(30)); }
    CommCounters counters() const override { return {7, 1}; }
    SingleWorkerCommunicator single;
  } slow;
  TimedCommunicator timed(slow);
  CHECK(timed.seconds() == 0.0);
  std::vector<double> values{1.0};
  timed.allreduce(std::span<double>(values), ReduceOp::sum);
  CHECK(values[0] == 2.0);  // forwarded
  CHECK(timed.counters().bytes_sent == 7);
  timed.barrier();
  CHECK(timed.seconds() >= 0.030);
  const double after_barrier = timed.seconds();
  std::vector<float> buffer(4);
  CHECK_THROWS_AS(timed.send(buffer, 1, 0), CommError);
  CHECK(timed.seconds() >= after_barrier);
  timed.wait([] { std::this_thread::sleep_for(std::chrono::milliseconds(20)); });
  CHECK(timed.seconds() >= after_barrier + 0.020);
  CHECK(&timed.inner() == &slow);
}

TEST_CASE("runtime::launcher: --local N runs N copies under mpirun, oversubscribed, pinned round-robin") {
  const auto command = local_launch_command(4, "/bin/dbench", {"train", "c.toml"});
  REQUIRE(command.size() >= 8);
  CHECK(std::find(command.begin(), command.end(), "--oversubscribe") != command.end());
  const auto after = [&](const char* flag) {
    const auto it = std::find(command.begin(), command.end(), flag);
    return it == command.end() || it + 1 == command.end() ? std::string() : *(it + 1);
  };
  // One core each, dealt by core, several to a core when workers outnumber cores.
  CHECK(after("--bind-to") == "core:overload-allowed");
  CHECK(after("--map-by") == "core");
  const auto n = std::find(command.begin(), command.end(), "-n");
  REQUIRE(n != command.end());
  CHECK(*(n + 1) == "4");
  CHECK(command[command.size() - 3] == "/bin/dbench");
  CHECK(command.back() == "c.toml");
  CHECK_THROWS_AS(local_launch_command(0, "/bin/dbench", {}), LaunchError);
  CHECK(run_command({"/bin/sh", "-c", "exit 3"}) == 3);
  CHECK_THROWS_AS(run_command({"/nonexistent/dbench-launcher"}), LaunchError);
  // A command whose output is not wanted writes it to /dev/null, and can write it (no error from a closed
  // stream); its stderr stays this process's.
  const std::string stdout_is_null = "[ \"$(readlink /proc/$$/fd/1)\" = /dev/null ] && echo discarded";
  CHECK(run_command({"/bin/sh", "-c", stdout_is_null}, Output::stdout_discarded) == 0);
  const std::string own_stderr = std::filesystem::read_symlink("/proc/self/fd/2").string();
  CHECK(run_command({"/bin/sh", "-c", "[ \"$(readlink /proc/$$/fd/2)\" = \"$1\" ]", "sh", own_stderr},
                    Output::stdout_discarded) == 0);
}

TEST_CASE("runtime::gossip: a worker's mix_row equals its row of the simulator's mix, bit for bit") {
  // Ring on 5 replicas with weights 1/3 (not exact in float), P not a multiple of the vector width.
  const std::size_t n = 5;
  const std::size_t p = 1000;
  std::mt19937 gen(7);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> x(n * p);
  for (float& v : x) {
    v = dist(gen);
  }
  std::vector<std::int32_t> offsets{0};
  std::vector<std::int32_t> from;
  std::vector<double> weight;
  for (std::size_t i = 0; i < n; ++i) {
    std::vector<std::int32_t> row{static_cast<std::int32_t>((i + n - 1) % n), static_cast<std::int32_t>(i),
                                  static_cast<std::int32_t>((i + 1) % n)};
    std::sort(row.begin(), row.end());
    for (auto j : row) {
      from.push_back(j);
      weight.push_back(1.0 / 3.0);
    }
    offsets.push_back(static_cast<std::int32_t>(from.size()));
  }
  const dbench::core::MixingMatrix w(offsets, from, weight);
  std::vector<float> mixed(n * p);
  dbench::core::mix(w.rows(), {x.data(), n, p, p}, {mixed.data(), n, p, p});
  for (std::size_t i = 0; i < n; ++i) {
    std::vector<const float*> sources;
    std::vector<float> weights;
    std::size_t self = 0;
    for (auto k = offsets[i]; k < offsets[i + 1]; ++k) {
      const auto j = static_cast<std::size_t>(from[static_cast<std::size_t>(k)]);
      if (j == i) {
        self = sources.size();
      }
      sources.push_back(x.data() + j * p);
      weights.push_back(static_cast<float>(weight[static_cast<std::size_t>(k)]));
    }
    std::vector<float> out(p);
    dbench::core::mix_row(weights, sources, self, out);
    CHECK(std::equal(out.begin(), out.end(), mixed.begin() + static_cast<std::ptrdiff_t>(i * p)));
  }
}
