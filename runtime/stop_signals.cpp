// A self-pipe: the handler only writes the signal's number, the only thing a handler may safely do in a
// process whose other threads (OpenBLAS's, MPI's) may hold any lock.
#include "runtime/stop_signals.hpp"

#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <system_error>

namespace dbench::runtime {
namespace {

// Where the handler writes: the innermost StopSignals alive. A signal handler reaches no object, so this one
// value has to be process-wide.
std::atomic<int> g_signal_fd{-1};

extern "C" void queue_signal(int signal) {
  const int saved_errno = errno;
  const int fd = g_signal_fd.load();
  if (fd >= 0) {
    const auto byte = static_cast<unsigned char>(signal);
    [[maybe_unused]] const auto written = ::write(fd, &byte, 1);  // a full pipe already holds a signal
  }
  errno = saved_errno;
}

}  // namespace

StopSignals::StopSignals() {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0) {
    throw std::system_error(errno, std::generic_category(), "cannot create the signal pipe");
  }
  read_fd_ = fds[0];
  write_fd_ = fds[1];
  previous_fd_ = g_signal_fd.exchange(write_fd_);
  for (std::size_t i = 0; i < kSignals.size(); ++i) {
    struct sigaction current {};
    ::sigaction(kSignals[i], nullptr, &current);
    if (current.sa_handler == SIG_IGN) {
      continue;  // nohup and background jobs ignore these on purpose
    }
    struct sigaction action {};
    action.sa_handler = queue_signal;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART;
    installed_[i] = ::sigaction(kSignals[i], &action, &previous_[i]) == 0;
  }
}

StopSignals::~StopSignals() {
  for (std::size_t i = 0; i < kSignals.size(); ++i) {
    if (installed_[i]) {
      ::sigaction(kSignals[i], &previous_[i], nullptr);
    }
  }
  g_signal_fd.store(previous_fd_);
  ::close(read_fd_);
  ::close(write_fd_);
}

int StopSignals::take() {
  unsigned char byte = 0;
  return ::read(read_fd_, &byte, 1) == 1 ? byte : 0;
}

bool StopSignals::handles(int signal) const {
  for (std::size_t i = 0; i < kSignals.size(); ++i) {
    if (kSignals[i] == signal) {
      return installed_[i];
    }
  }
  return false;
}

void end_process_by(int signal) {
  struct sigaction action {};
  action.sa_handler = SIG_DFL;
  sigemptyset(&action.sa_mask);
  ::sigaction(signal, &action, nullptr);
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, signal);
  ::pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
  ::raise(signal);
  // Only a signal whose default is not to end the process gets here; none of the stop signals is one.
  std::abort();
}

std::string signal_name(int signal) {
  const char* abbreviation = ::sigabbrev_np(signal);
  return abbreviation != nullptr ? std::string("SIG") + abbreviation : "signal " + std::to_string(signal);
}

}  // namespace dbench::runtime
