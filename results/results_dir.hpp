// Writing results all at once: files are staged in a hidden, marked directory beside where they go and
// swapped in at the end. A run's whole results directory (ResultsDir) and a report's files are staged here.
#pragma once

#include <filesystem>
#include <mutex>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>

namespace dbench::results {

/// A results directory that cannot be staged, written or committed; the message names the path.
class ResultsDirError : public std::runtime_error {
 public:
  /// Wraps a complete, user-facing message.
  explicit ResultsDirError(const std::string& message) : std::runtime_error(message) {}
};

/// Where staging directories are registered so that a stop signal removes them (the dbench command's
/// SignalCleanup). Used from several threads at once.
class StagingCleanup {
 public:
  virtual ~StagingCleanup() = default;
  /// Removes `directory` with everything in it when a stop signal arrives.
  virtual void add(const std::filesystem::path& directory) = 0;
  /// Forgets `directory`.
  virtual void forget(const std::filesystem::path& directory) = 0;
  /// Held while a registered directory changes (written into, renamed): a signal then waits for the change
  /// to finish instead of removing half of it.
  virtual std::unique_lock<std::recursive_mutex> hold() = 0;
};

/// The one staging directory: `.NAME.tmp-PID-XXXXXXXX` beside `beside` (NAME is its file name), holding the
/// marker file. Destroyed before replace(), it is removed with everything in it; registered with a
/// StagingCleanup, a stop signal removes it too.
class StagingDir {
 public:
  /// Name of the marker file that every staging directory holds.
  static constexpr std::string_view kMarkerName = ".dbench-results";

  /// Removes the staging directories that killed processes left beside `beside` (remove_abandoned_staging),
  /// then creates and marks a new one, registered with `cleanup` when one is given. `beside` is absolute and
  /// its parent exists. Throws ResultsDirError naming `beside`.
  StagingDir(const std::filesystem::path& beside, StagingCleanup* cleanup);
  /// Removes the directory unless replace() moved it into place.
  ~StagingDir();

  StagingDir(const StagingDir&) = delete;
  StagingDir& operator=(const StagingDir&) = delete;
  /// Takes over the other's directory; the moved-from object owns nothing.
  StagingDir(StagingDir&& other) noexcept;
  /// Removes this object's directory, then takes over the other's.
  StagingDir& operator=(StagingDir&& other) noexcept;

  /// The staging directory; empty after replace() or a move.
  const std::filesystem::path& path() const { return path_; }
  /// The cleanup's lock (see StagingCleanup::hold), or nothing without a cleanup.
  std::unique_lock<std::recursive_mutex> hold() const;
  /// Puts the whole staging directory in place of `target` (see replace_directory), after which this object
  /// owns nothing; `what` names the content in errors ("results"). Throws ResultsDirError.
  void replace(const std::filesystem::path& target, std::string_view what);

 private:
  void remove();

  std::filesystem::path path_;
  StagingCleanup* cleanup_ = nullptr;
};

/// Moves the directory `staged` to `target`, replacing a directory there: in one step where the file system
/// can exchange the two (Linux renameat2), otherwise by moving the old one aside first and putting it back on
/// failure. The old content is then removed; `staged` no longer exists. `what` names the content in errors
/// ("cannot move the staged results into ..."). Throws ResultsDirError, leaving `target` as it was.
void replace_directory(const std::filesystem::path& staged, const std::filesystem::path& target,
                       std::string_view what);

/// Stages every file of a run in a StagingDir beside DIR, then replaces DIR in one step on commit().
///
/// Readers of DIR see either the old run or the new one, never a mix: until commit() nothing in DIR
/// changes, and an object destroyed without commit() (an error happened) removes its staging directory.
/// An existing DIR is replaced only if it is empty or was written by a ResultsDir (it holds the marker
/// file), so that `--out .` or `--out $HOME` can never delete unrelated files. Given a StagingCleanup, a stop
/// signal removes the staging directory too; and staging directories that a killed run left beside DIR are
/// removed when the next one is made (see remove_abandoned_staging).
class ResultsDir {
 public:
  /// Name of the marker file that every staged directory holds.
  static constexpr std::string_view kMarkerName = StagingDir::kMarkerName;

  /// Creates the staging directory next to `target` (creating missing parents), registered with `cleanup`
  /// when one is given; throws ResultsDirError.
  explicit ResultsDir(const std::filesystem::path& target, StagingCleanup* cleanup = nullptr);

  ResultsDir(const ResultsDir&) = delete;
  ResultsDir& operator=(const ResultsDir&) = delete;
  /// Takes over the other's staging directory; the moved-from object owns nothing.
  ResultsDir(ResultsDir&& other) noexcept;
  /// Removes this object's uncommitted staging directory, then takes over the other's.
  ResultsDir& operator=(ResultsDir&& other) noexcept;

  /// The directory that commit() replaces, as given (made absolute).
  const std::filesystem::path& target() const { return target_; }
  /// The staging directory where files are written until commit().
  const std::filesystem::path& staging() const { return staging_.path(); }
  /// Whether commit() succeeded.
  bool committed() const { return committed_; }

  /// Where `relative_name` goes in the staging directory (parents created; valid until commit()).
  std::filesystem::path path(std::string_view relative_name) const;
  /// Writes `content` as the file `relative_name` of the staging directory.
  void write_text(std::string_view relative_name, std::string_view content) const;

  /// Replaces `target` with the staged directory; on failure `target` is left as it was.
  void commit();

 private:
  void check_writable() const;
  std::filesystem::path staged_path(std::string_view relative_name) const;

  std::filesystem::path target_;
  StagingDir staging_;
  bool committed_ = false;
};

/// Checks, creating nothing, that a ResultsDir may be made for `target`: a usable path whose directory does
/// not exist, is empty, or holds the marker file. Throws ResultsDirError as ResultsDir's constructor would,
/// so that a command can refuse its --out before it spends minutes measuring.
void check_results_target(const std::filesystem::path& target);

/// Name of the marker file of a sweep folder (`dbench sweep --out DIR`): DIR is DBench's to write into.
inline constexpr std::string_view kSweepMarkerName = ".dbench-sweep";

/// Checks, writing nothing, that `out` may be used as a sweep folder: it does not exist, or it is an empty
/// directory, or one that holds kSweepMarkerName (a sweep that DBench started there) — never a user's folder
/// with files in it, nor the root. Below it, each of `directories` and `files` (paths relative to `out`, such
/// as "runs/ID" and "logs/ID.log") that exists must be a directory or a regular file respectively and not a
/// symbolic link: a sweep folder's entries are its own, and writing through a link would replace what lies
/// elsewhere. Throws ResultsDirError naming the path and the reason.
void check_sweep_folder(const std::filesystem::path& out, std::span<const std::filesystem::path> directories,
                        std::span<const std::filesystem::path> files);

/// Creates the sweep folder `out` (check_sweep_folder first) and its marker, before anything else is written
/// in it. Throws ResultsDirError naming the path.
void claim_sweep_folder(const std::filesystem::path& out);

/// Whether process `pid` has ended: gone, or a zombie not yet reaped (a worker killed after its mpirun ended
/// waits for init to reap it; it can no longer write or compute).
bool process_ended(int pid) noexcept;

/// Removes the staging directories beside results directory `target` (in its parent) that a dbench on this
/// machine left when it was killed outright (SIGKILL, a crash): `.NAME.tmp-PID-XXXXXXXX` directories that
/// hold this machine's marker file and whose process PID has ended (gone, or a zombie not yet reaped).
/// Returns how many it removed; never throws.
int remove_abandoned_staging(const std::filesystem::path& target);

}  // namespace dbench::results
