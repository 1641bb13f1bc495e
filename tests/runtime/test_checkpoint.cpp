// Checkpoints: what a worker writes reads back unchanged; a checkpoint becomes visible only when published.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>

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
