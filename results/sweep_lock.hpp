// The lock that keeps two sweeps from working in one sweep folder at once: each would run every run and
// replace the other's files.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

namespace dbench::results {

/// Name of the lock file in a sweep folder, beside kSweepMarkerName; an unsharded sweep holds it exclusively
/// and records its pid in it, the shards of a sharded sweep hold it shared.
inline constexpr std::string_view kSweepLockName = ".dbench-sweep.lock";

/// The lock file of shard `index_1` of `count` (".dbench-sweep.shard-2-of-4.lock"), held exclusively by
/// that shard with its pid.
std::string sweep_shard_lock_name(int index_1, int count);

/// A sweep's hold on its folder, released when the object is destroyed (or the process ends, however it
/// ends: the kernel drops flock locks with the last descriptor).
///
/// An unsharded sweep (count 1) locks the whole folder; shards of one sweep share the folder and each locks
/// its own shard, so that the shards of a job array run side by side while a second sweep or a second copy
/// of a shard is refused. On a file system without flock (some cluster file systems are mounted without
/// it) nothing is locked.
class SweepLock {
 public:
  /// Takes the locks in the existing sweep folder `out`, without waiting; throws ResultsDirError naming the
  /// folder and saying that another sweep (with its pid when one is recorded) is running there.
  SweepLock(const std::filesystem::path& out, int index_1, int count);
  ~SweepLock();

  SweepLock(const SweepLock&) = delete;
  SweepLock& operator=(const SweepLock&) = delete;

 private:
  int folder_fd_ = -1;
  int shard_fd_ = -1;
};

}  // namespace dbench::results
