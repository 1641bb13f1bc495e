// The calibration's link kernels on one process: the host buffers' mixing and averaging, and the peers of a
// ring round (a communicator that records what it is asked to move stands in for the other workers).
#include <doctest/doctest.h>

#include <algorithm>
#include <span>
#include <string>
#include <vector>

#include "runtime/communicator.hpp"
#include "validation/link_kernels.hpp"

namespace {

using dbench::runtime::CommCounters;
using dbench::runtime::RecvBuffer;
using dbench::runtime::ReduceOp;
using dbench::runtime::SendBuffer;

/// Worker `rank` of `size`: an exchange records its peers and tag, and every message received holds
/// `incoming`.
class RecordingCommunicator final : public dbench::runtime::Communicator {
 public:
  RecordingCommunicator(int rank, int size, float incoming) : rank_(rank), size_(size), incoming_(incoming) {}
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  void send(std::span<const float>, int, int) override {}
  void recv(std::span<float>, int, int) override {}
  void exchange(std::span<const SendBuffer> sends, std::span<const RecvBuffer> recvs, int tag) override {
    for (const auto& s : sends) {
      send_peers.push_back(s.peer);
    }
    for (const auto& r : recvs) {
      recv_peers.push_back(r.peer);
      std::fill(r.data.begin(), r.data.end(), incoming_);
    }
    tags.push_back(tag);
  }
  void allreduce(std::span<float>, ReduceOp) override {}
  void allreduce(std::span<double>, ReduceOp) override {}
  void broadcast(std::span<std::byte>, int) override {}
  void barrier() override {}
  CommCounters counters() const override { return {}; }

  std::vector<int> send_peers, recv_peers, tags;

 private:
  int rank_, size_;
  float incoming_;
};

std::vector<float> values(std::span<const float> s) {
  return {s.begin(), s.end()};
}

}  // namespace

TEST_CASE("validation::HostLinkBuffers: mixes half and half into the parameters, round after round") {
  dbench::validation::HostLinkBuffers buffers;
  buffers.resize(3);
  CHECK(values(buffers.params()) == std::vector<float>{1.0f, 1.0f, 1.0f});
  CHECK(values(buffers.received()) == std::vector<float>{0.0f, 0.0f, 0.0f});

  const std::vector<float> message{3.0f, 5.0f, 7.0f};
  std::copy(message.begin(), message.end(), buffers.received().begin());
  buffers.mix();
  CHECK(values(buffers.params()) == std::vector<float>{2.0f, 3.0f, 4.0f});
  CHECK(values(buffers.received()) == message);
  // The target the first round left behind holds the old parameters: the second round must not read it.
  buffers.mix();
  CHECK(values(buffers.params()) == std::vector<float>{2.5f, 4.0f, 5.5f});

  buffers.resize(2);
  CHECK(values(buffers.params()) == std::vector<float>{1.0f, 1.0f});
  CHECK(values(buffers.received()) == std::vector<float>{0.0f, 0.0f});
}

TEST_CASE("validation::HostLinkBuffers: the mean over a single worker is the parameters themselves") {
  dbench::runtime::SingleWorkerCommunicator comm;
  dbench::validation::HostLinkBuffers buffers;
  buffers.resize(4);
  buffers.params()[2] = 9.0f;
  buffers.average(comm);
  CHECK(values(buffers.params()) == std::vector<float>{1.0f, 1.0f, 9.0f, 1.0f});
}

TEST_CASE("validation::ring_round: sends to the next worker, receives from the previous, then mixes") {
  for (const int rank : {0, 2, 4}) {
    CAPTURE(rank);
    RecordingCommunicator comm(rank, 5, 3.0f);
    dbench::validation::HostLinkBuffers buffers;
    buffers.resize(2);
    dbench::validation::ring_round(comm, buffers);
    CHECK(comm.send_peers == std::vector<int>{(rank + 1) % 5});
    CHECK(comm.recv_peers == std::vector<int>{(rank + 4) % 5});
    CHECK(comm.tags.size() == 1);
    CHECK(values(buffers.params()) == std::vector<float>{2.0f, 2.0f});
  }
}

TEST_CASE("validation::time_link_over_sizes: a pass whose times fall with the size is timed again") {
  dbench::validation::HostLinkBuffers buffers;
  const std::vector<double> sizes{256, 4096, 65536};
  int calls = 0;
  // The first pass falls with the size (a slow spell over the small messages), the second grows with it.
  const auto link = dbench::validation::time_link_over_sizes("exchange", buffers, sizes, [&] {
    ++calls;
    return calls <= 3 ? 1e-3 / calls : 1e-5 * (calls - 3);
  });
  CHECK(calls == 6);
  CHECK(link.bytes == sizes);
  CHECK(link.seconds == std::vector<double>{1e-5 * 1, 1e-5 * 2, 1e-5 * 3});  // the second pass
  CHECK(link.fit.bandwidth_Bps > 0.0);
  CHECK(buffers.params().size() == 65536 / sizeof(float));
}

TEST_CASE("validation::time_link_over_sizes: times that keep falling are refused, naming the pattern") {
  dbench::validation::HostLinkBuffers buffers;
  const std::vector<double> sizes{256, 4096, 65536};
  int calls = 0;
  std::string what;
  try {
    dbench::validation::time_link_over_sizes("ping-pong", buffers, sizes, [&] {
      ++calls;
      return 1e-3 / calls;
    });
  } catch (const dbench::validation::LinkTimingRefused& e) {
    what = e.what();
  }
  CHECK(calls == 9);  // three passes
  CHECK(what.starts_with("ping-pong: alpha-beta fit: the time does not grow with the message size"));
  CHECK(what.find("timed 3 times") != std::string::npos);
  CHECK(what.find("65536 B: 1.111e-04 s") != std::string::npos);  // the last pass's last timing
}

TEST_CASE("validation::time_link_over_sizes: the scheduler's turns are refused as such where they fall") {
  dbench::validation::HostLinkBuffers buffers;
  const std::vector<double> sizes{256, 4096, 65536, 1048576};
  // As four workers on two cores beside a busy one timed an all-reduce: about 4 ms whatever the size.
  const std::vector<double> falling{4.2e-3, 4.0e-3, 3.7e-3, 3.5e-3};
  int calls = 0;
  // Two passes that fall, then `last`.
  const auto timing = [&](const std::vector<double>& last) {
    return [&, last] {
      const std::size_t i = static_cast<std::size_t>(calls++) % sizes.size();
      return calls <= 8 ? falling[i] : last[i];
    };
  };
  SUBCASE("three passes that fall: one line that names the turns, not the fit") {
    std::string what;
    try {
      dbench::validation::time_link_over_sizes("all-reduce", buffers, sizes, timing(falling));
    } catch (const dbench::validation::LinkTimingRefused& e) {
      what = e.what();
    }
    CHECK(calls == 12);
    CHECK(
        what ==
        "all-reduce: every message size from 256 B to 1.04858e+06 B took 3.5 to 4.2 ms (timed 3 times): the "
        "workers waited for their turns on cores that other processes, or more workers than cores, kept "
        "busy, and the link's time is lost in them (a link that slow shows it with larger --sizes); nothing "
        "is written from them: run it again on a machine to itself");
  }
  SUBCASE("turns that grow with the size are fitted: runs beside the same load pay them") {
    const std::vector<double> growing{3.5e-3, 3.6e-3, 3.9e-3, 4.2e-3};
    const auto link = dbench::validation::time_link_over_sizes("all-reduce", buffers, sizes, timing(growing));
    CHECK(calls == 12);
    CHECK(link.seconds == growing);
    CHECK(link.fit.alpha_s == doctest::Approx(3.5e-3).epsilon(0.05));
  }
}
