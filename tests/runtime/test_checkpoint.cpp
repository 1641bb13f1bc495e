// Checkpoints: what a worker writes reads back unchanged; a checkpoint becomes visible only when published.
#include <doctest/doctest.h>
#include <sys/stat.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "runtime/checkpoint.hpp"
#include "runtime/errors.hpp"
#include "support/temp_dir.hpp"

namespace {

using namespace dbench::runtime;

WorkerState sample_state(int rank, std::int64_t iteration) {
  WorkerState s;
  s.run_key = "name = \"x\"";
  s.rank = rank;
  s.workers = 2;
  s.iterations_done = iteration;
  s.sgd_steps = static_cast<std::uint64_t>(iteration);
  s.last_lr = 0.05;
  s.last_train_loss = 0.7;
  s.best_test_accuracy = 0.8;
  dbench::topology::PolicyObservation o;
  o.iteration = iteration;
  o.norm_variance = 0.2;
  s.observations = {dbench::topology::PolicyObservation{}, o};
  s.params = {1.0f, -2.5f, 3.25f};
  s.momentum = {0.5f, 0.0f, -1.0f};
  s.shared_previous = {1.5f, -2.0f, 3.0f};
  s.shared_momentum = {0.25f, 0.125f, -0.5f};
  s.shared_lrs = {0.1, 0.05};
  s.trace = {StepTrace{0, 0.1, 0.2, 0.3, 400, 2.3, 0.1}};
  s.observer_state = std::string("csv\n\0binary", 12);
  return s;
}

}  // namespace

TEST_CASE("runtime::checkpoint: a published checkpoint reads back exactly what each worker wrote") {
  dbench::testing::TempDir dir;
  for (int r = 0; r < 2; ++r) {
    write_checkpoint_part(dir.path(), 20, sample_state(r, 20));
  }
  CHECK_FALSE(latest_checkpoint(dir.path()).has_value());
  publish_checkpoint(dir.path(), 20);
  REQUIRE(latest_checkpoint(dir.path()) == 20);
  const WorkerState back = read_checkpoint(dir.path(), 1);
  const WorkerState want = sample_state(1, 20);
  CHECK(back.run_key == want.run_key);
  CHECK(back.iterations_done == 20);
  CHECK(back.sgd_steps == 20);
  CHECK(back.params == want.params);
  CHECK(back.momentum == want.momentum);
  CHECK(back.shared_previous == want.shared_previous);
  CHECK(back.shared_momentum == want.shared_momentum);
  CHECK(back.shared_lrs == want.shared_lrs);
  REQUIRE(back.observations.size() == 2);
  CHECK(back.observations[1].norm_variance == 0.2);
  REQUIRE(back.trace.size() == 1);
  CHECK(back.trace[0].bytes_sent == 400);
  CHECK(back.observer_state == want.observer_state);
}

TEST_CASE("runtime::checkpoint: an unpublished newer checkpoint leaves the last complete one in place") {
  dbench::testing::TempDir dir;
  for (int r = 0; r < 2; ++r) {
    write_checkpoint_part(dir.path(), 20, sample_state(r, 20));
  }
  publish_checkpoint(dir.path(), 20);
  // Worker 0 wrote its part of iteration 40, then the run died before publishing.
  write_checkpoint_part(dir.path(), 40, sample_state(0, 40));
  CHECK(latest_checkpoint(dir.path()) == 20);
  CHECK(read_checkpoint(dir.path(), 0).iterations_done == 20);
  // The next publish replaces the old checkpoint and the stale partial one.
  for (int r = 0; r < 2; ++r) {
    write_checkpoint_part(dir.path(), 60, sample_state(r, 60));
  }
  publish_checkpoint(dir.path(), 60);
  CHECK(read_checkpoint(dir.path(), 1).iterations_done == 60);
  int entries = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir.path())) {
    ++entries;
  }
  CHECK(entries == 2);  // LATEST and step-60
}

TEST_CASE("runtime::checkpoint: a missing or damaged checkpoint is a CheckpointError naming the file") {
  dbench::testing::TempDir dir;
  CHECK_THROWS_AS(read_checkpoint(dir.path(), 0), CheckpointError);
  write_checkpoint_part(dir.path(), 10, sample_state(0, 10));
  publish_checkpoint(dir.path(), 10);
  CHECK_THROWS_WITH_AS(read_checkpoint(dir.path(), 1), doctest::Contains("rank-00001.bin"), CheckpointError);
  const auto file = dir.path() / "step-0000000010" / "rank-00000.bin";
  std::filesystem::resize_file(file, std::filesystem::file_size(file) - 5);
  CHECK_THROWS_WITH_AS(read_checkpoint(dir.path(), 0), doctest::Contains("damaged"), CheckpointError);
}

TEST_CASE("runtime::checkpoint: a garbled checkpoint names the file and the field, before allocating") {
  dbench::testing::TempDir dir;
  for (int r = 0; r < 2; ++r) {
    write_checkpoint_part(dir.path(), 20, sample_state(r, 20));
  }
  publish_checkpoint(dir.path(), 20);
  const auto file = dir.path() / "step-0000000020" / "rank-00000.bin";
  const std::string intact = [&] {
    std::ifstream in(file, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }();
  const auto write = [&](const std::string& bytes) {
    std::ofstream out(file, std::ios::binary | std::ios::trunc);
    out << bytes;
  };
  // Offsets of the fields as Writer lays them out: magic, run_key (length + text), rank, workers, ...
  const std::size_t run_key = 8;
  const std::size_t rank = run_key + 8 + sample_state(0, 20).run_key.size();
  const std::size_t workers = rank + 4;
  const std::size_t iterations_done = workers + 4;
  const std::size_t sgd_steps = iterations_done + 8;
  const std::size_t observations = sgd_steps + 8 + 5 * 8;
  const std::size_t params = observations + 8 + 2 * sizeof(dbench::topology::PolicyObservation);
  const auto with = [&](std::size_t at, std::uint64_t value, std::size_t bytes) {
    std::string garbled = intact;
    std::memcpy(garbled.data() + at, &value, bytes);
    return garbled;
  };
  struct Case {
    std::string bytes;
    std::string field;
  };
  const Case cases[] = {
      {with(run_key, ~std::uint64_t{0}, 8), "(run_key: 18446744073709551615 bytes but only"},
      {with(rank, 7, 4), "(rank: 7 in the file of rank 0)"},
      {with(workers, 0, 4), "(workers: 0 in the file of rank 0)"},
      {with(iterations_done, 1234, 8), "(iterations_done: 1234 in the checkpoint of iteration 20)"},
      {with(sgd_steps, ~std::uint64_t{0} - 3, 8), "(sgd_steps: 18446744073709551612 steps in 20 iterations)"},
      {with(observations, std::uint64_t{1} << 60, 8),
       "(observations: 1152921504606846976 values where this run"},
      {with(params, 1000, 8), "(params: 1000 values but only"},
      {intact.substr(0, rank + 2), "(rank: truncated)"},
      {intact + "x", "(observer_state: unexpected bytes after it)"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.field);
    write(c.bytes);
    const std::string expected = file.string() + ": damaged checkpoint " + c.field;
    CHECK_THROWS_WITH_AS(read_checkpoint(dir.path(), 0), doctest::Contains(expected.c_str()),
                         CheckpointError);
  }
  // The model's size bounds the parameters before they are allocated.
  write(intact);
  CHECK(read_checkpoint(dir.path(), 0, {3, 100}).params.size() == 3);
  CHECK_THROWS_WITH_AS(read_checkpoint(dir.path(), 0, {2, 100}),
                       doctest::Contains("(params: 3 values where this run has at most 2)"), CheckpointError);
}

TEST_CASE("runtime::checkpoint: a damaged LATEST or a part that is not a regular file is refused at once") {
  dbench::testing::TempDir dir;
  for (int r = 0; r < 2; ++r) {
    write_checkpoint_part(dir.path(), 20, sample_state(r, 20));
  }
  publish_checkpoint(dir.path(), 20);
  const auto latest = dir.path() / "LATEST";
  for (const std::string text : {"step-abc\n", "step-99999999999999999999\n", "step-20\n", "junk"}) {
    CAPTURE(text);
    std::ofstream(latest, std::ios::trunc) << text;
    const std::string expected = latest.string() + ": damaged";
    CHECK_THROWS_WITH_AS(latest_checkpoint(dir.path()), doctest::Contains(expected.c_str()), CheckpointError);
  }
  // LATEST as /dev/zero would be read until memory runs out.
  std::filesystem::remove(latest);
  std::filesystem::create_symlink("/dev/zero", latest);
  CHECK_THROWS_WITH_AS(latest_checkpoint(dir.path()), doctest::Contains("not a regular file"),
                       CheckpointError);
  std::filesystem::remove(latest);
  std::ofstream(latest) << "step-0000000020\n";
  // A part that is a FIFO would block the worker forever.
  const auto part = dir.path() / "step-0000000020" / "rank-00001.bin";
  std::filesystem::remove(part);
  REQUIRE(::mkfifo(part.c_str(), 0600) == 0);
  const std::string expected = part.string() + ": cannot read checkpoint: not a regular file";
  CHECK_THROWS_WITH_AS(read_checkpoint(dir.path(), 1), doctest::Contains(expected.c_str()), CheckpointError);
}
