// Writing a run's results directory all at once: files are staged beside it and swapped in on commit().
#pragma once

#include <filesystem>
#include <stdexcept>
#include <string>
#include <string_view>

#include "experiments/config.hpp"
#include "experiments/signal_cleanup.hpp"

namespace dbench::experiments {

/// A results directory that cannot be staged, written or committed; the message names the path.
class ResultsDirError : public std::runtime_error {
 public:
  /// Wraps a complete, user-facing message.
  explicit ResultsDirError(const std::string& message) : std::runtime_error(message) {}
};

/// Stages every file of a run in a hidden sibling of DIR, then replaces DIR in one step on commit().
///
/// Readers of DIR see either the old run or the new one, never a mix: until commit() nothing in DIR
/// changes, and an object destroyed without commit() (an error happened) removes its staging directory.
/// An existing DIR is replaced only if it is empty or was written by a ResultsDir (it holds the marker
/// file), so that `--out .` or `--out $HOME` can never delete unrelated files. Given a SignalCleanup, a stop
/// signal removes the staging directory too; and staging directories that a killed run left beside DIR are
/// removed when the next one is made (see remove_abandoned_staging).
class ResultsDir {
 public:
  /// Name of the marker file that every staged directory holds.
  static constexpr std::string_view kMarkerName = ".dbench-results";

  /// Creates the staging directory next to `target` (creating missing parents), registered with `cleanup`
  /// when one is given; throws ResultsDirError.
  explicit ResultsDir(const std::filesystem::path& target, SignalCleanup* cleanup = nullptr);
  /// As above, and stages the resolved `config.toml` at once, as every run must.
  ResultsDir(const std::filesystem::path& target, const ExperimentConfig& config,
             SignalCleanup* cleanup = nullptr);
  /// Removes the staging directory unless commit() succeeded.
  ~ResultsDir();

  ResultsDir(const ResultsDir&) = delete;
  ResultsDir& operator=(const ResultsDir&) = delete;
  /// Takes over the other's staging directory; the moved-from object owns nothing.
  ResultsDir(ResultsDir&& other) noexcept;
  /// Removes this object's uncommitted staging directory, then takes over the other's.
  ResultsDir& operator=(ResultsDir&& other) noexcept;

  /// The directory that commit() replaces, as given (made absolute).
  const std::filesystem::path& target() const { return target_; }
  /// The staging directory where files are written until commit().
  const std::filesystem::path& staging() const { return staging_; }
  /// Whether commit() succeeded.
  bool committed() const { return committed_; }

  /// Where `relative_name` goes in the staging directory (parents created; valid until commit()).
  std::filesystem::path path(std::string_view relative_name) const;
  /// Writes `content` as the file `relative_name` of the staging directory.
  void write_text(std::string_view relative_name, std::string_view content) const;
  /// Writes the resolved config as `config.toml`.
  void write_config(const ExperimentConfig& config) const;

  /// Replaces `target` with the staged directory; on failure `target` is left as it was.
  void commit();

 private:
  void check_writable() const;
  std::filesystem::path staged_path(std::string_view relative_name) const;
  std::unique_lock<std::recursive_mutex> hold_cleanup() const;
  void remove_staging();

  std::filesystem::path target_;
  std::filesystem::path staging_;
  bool committed_ = false;
  SignalCleanup* cleanup_ = nullptr;
};

/// Removes the staging directories beside results directory `target` (in its parent) that a dbench on this
/// machine left when it was killed outright (SIGKILL, a crash): `.NAME.tmp-PID-XXXXXXXX` directories that
/// hold this machine's marker file and whose process PID is gone. Returns how many it removed; never throws.
int remove_abandoned_staging(const std::filesystem::path& target);

/// The text of the marker file on this machine (what remove_abandoned_staging recognises), for other writers
/// that stage the same way.
std::string staging_marker_text();

}  // namespace dbench::experiments
