#include "experiments/signal_cleanup.hpp"

#include <fmt/core.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdint>
#include <system_error>

namespace dbench::experiments {
namespace fs = std::filesystem;

SignalCleanup::SignalCleanup() : wake_fd_(::eventfd(0, EFD_CLOEXEC)) {
  if (wake_fd_ < 0) {
    throw std::system_error(errno, std::generic_category(), "cannot create an eventfd");
  }
  thread_ = std::thread([this] { watch(); });
}

SignalCleanup::~SignalCleanup() {
  const std::uint64_t one = 1;
  [[maybe_unused]] const auto written = ::write(wake_fd_, &one, sizeof one);
  thread_.join();
  ::close(wake_fd_);
}

void SignalCleanup::add(const fs::path& directory) {
  std::lock_guard lock(mutex_);
  directories_.push_back(directory);
}

void SignalCleanup::forget(const fs::path& directory) {
  std::lock_guard lock(mutex_);
  std::erase(directories_, directory);
}

void SignalCleanup::watch() {
  std::array<pollfd, 2> ready{pollfd{signals_.fd(), POLLIN, 0}, pollfd{wake_fd_, POLLIN, 0}};
  for (;;) {
    if (::poll(ready.data(), ready.size(), -1) < 0) {
      continue;  // EINTR
    }
    if ((ready[1].revents & POLLIN) != 0) {
      return;
    }
    const int signal = signals_.take();
    if (signal == 0) {
      continue;
    }
    // Kept locked until the process ends: nothing may write or rename a registered directory meanwhile.
    std::unique_lock lock(mutex_);
    for (const fs::path& directory : directories_) {
      std::error_code ignored;
      fs::remove_all(directory, ignored);
    }
    if (!directories_.empty()) {
      const std::string line = fmt::format("dbench: stopped by {}; the unfinished results were removed\n",
                                           runtime::signal_name(signal));
      [[maybe_unused]] const auto written = ::write(STDERR_FILENO, line.data(), line.size());
    }
    runtime::end_process_by(signal);
  }
}

}  // namespace dbench::experiments
