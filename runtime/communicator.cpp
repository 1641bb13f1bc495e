#include "runtime/communicator.hpp"

#include <string>

#include "runtime/errors.hpp"

namespace dbench::runtime {
namespace {

[[noreturn]] void no_peer(const char* what, int peer) {
  throw CommError(std::string(what) + ": rank " + std::to_string(peer) +
                  " does not exist in a single-worker run");
}

}  // namespace

void SingleWorkerCommunicator::send(std::span<const float>, int peer, int) {
  no_peer("send", peer);
}

void SingleWorkerCommunicator::recv(std::span<float>, int peer, int) {
  no_peer("recv", peer);
}

void SingleWorkerCommunicator::exchange(std::span<const SendBuffer> sends, std::span<const RecvBuffer> recvs,
                                        int) {
  if (!sends.empty()) {
    no_peer("exchange", sends.front().peer);
  }
  if (!recvs.empty()) {
    no_peer("exchange", recvs.front().peer);
  }
}

}  // namespace dbench::runtime
