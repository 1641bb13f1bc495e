// A worker's communication time, measured around its communicator instead of by clock calls inside the
// training step: every call through the decorator counts toward seconds().
#pragma once

#include <chrono>
#include <utility>

#include "runtime/communicator.hpp"

namespace dbench::runtime {

/// Forwards every call to `inner` and adds the wall-clock seconds it took to seconds(). Not for concurrent
/// use: communication on a helper thread goes to inner(), and the time waited for it through wait().
class TimedCommunicator final : public Communicator {
 public:
  explicit TimedCommunicator(Communicator& inner) : inner_(inner) {}

  int rank() const override { return inner_.rank(); }
  int size() const override { return inner_.size(); }
  void send(std::span<const float> data, int peer, int tag) override {
    timed([&] { inner_.send(data, peer, tag); });
  }
  void recv(std::span<float> data, int peer, int tag) override {
    timed([&] { inner_.recv(data, peer, tag); });
  }
  void exchange(std::span<const SendBuffer> sends, std::span<const RecvBuffer> recvs, int tag) override {
    timed([&] { inner_.exchange(sends, recvs, tag); });
  }
  void allreduce(std::span<float> data, ReduceOp op) override {
    timed([&] { inner_.allreduce(data, op); });
  }
  void allreduce(std::span<double> data, ReduceOp op) override {
    timed([&] { inner_.allreduce(data, op); });
  }
  void broadcast(std::span<std::byte> data, int root) override {
    timed([&] { inner_.broadcast(data, root); });
  }
  void barrier() override {
    timed([&] { inner_.barrier(); });
  }
  CommCounters counters() const override { return inner_.counters(); }

  /// The communicator underneath, for communication that is not to be counted as it runs.
  Communicator& inner() { return inner_; }
  /// Runs `wait`, a wait for communication started elsewhere, and counts its time.
  template <class Wait>
  void wait(Wait&& wait) {
    timed(std::forward<Wait>(wait));
  }
  /// Runs `part`, communication through inner() together with the pass over what it moved (a gradient
  /// widened, summed and narrowed back; received parameters mixed), and counts it all as communication: the
  /// trace splits an iteration as the simulator does, whose exchange and all-reduce include that pass.
  template <class Part>
  void count(Part&& part) {
    timed(std::forward<Part>(part));
  }
  /// Seconds spent in calls and waits since creation.
  double seconds() const { return seconds_; }

 private:
  template <class Call>
  void timed(Call&& call) {
    const auto start = std::chrono::steady_clock::now();
    // Counted also when the call throws: a lost peer's timeout is communication time too.
    struct Count {
      std::chrono::steady_clock::time_point start;
      double& seconds;
      ~Count() { seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); }
    } count{start, seconds_};
    call();
  }

  Communicator& inner_;
  double seconds_ = 0.0;
};

}  // namespace dbench::runtime
