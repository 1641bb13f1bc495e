// ImageNet-style JPEG folders: classes from sub-folder names, images decoded, resized and normalised.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <vector>

#include "models/errors.hpp"
#include "runtime/image_folder.hpp"
#include "support/run_dbench.hpp"
#include "support/temp_dir.hpp"

namespace {

namespace fs = std::filesystem;
using dbench::testing::TempDir;

/// Solid-colour images: class "blue" (0 in sorted order) and "red" (1), `per_class` of each per split.
void write_folder(const fs::path& root, int per_class, int size) {
  for (const char* split : {"train", "val"}) {
    for (const char* name : {"red", "blue"}) {
      const fs::path dir = root / split / name;
      fs::create_directories(dir);
      const bool red = std::string(name) == "red";
      std::vector<std::uint8_t> rgb(static_cast<std::size_t>(size * size * 3));
      for (std::size_t p = 0; p < rgb.size(); p += 3) {
        rgb[p] = red ? 220 : 20;
        rgb[p + 1] = 40;
        rgb[p + 2] = red ? 20 : 220;
      }
      for (int i = 0; i < per_class; ++i) {
        dbench::runtime::write_jpeg(dir / ("img" + std::to_string(i) + ".jpg"), rgb, size, size);
      }
    }
  }
  std::ofstream(root / "train" / "red" / "notes.txt") << "not an image\n";
}

}  // namespace

TEST_CASE("runtime::image_folder: classes are sorted sub-folders, pixels resized and normalised") {
  TempDir dir;
  write_folder(dir.path(), 3, 20);
  const auto train = dbench::runtime::read_image_folder(dbench::models::Split::train, dir.path(), {8, 8});
  CHECK(train.size == 6);
  CHECK(train.classes == 2);
  CHECK(train.channels == 3);
  CHECK(train.height == 8);
  CHECK(train.images.size() == 6 * 3 * 8 * 8);
  CHECK(train.labels == std::vector<std::int32_t>{0, 0, 0, 1, 1, 1});
  // A solid blue image: the red plane holds (20/255 - mean) / std everywhere, up to JPEG's rounding.
  const float want_red =
      (20.0f / 255.0f - dbench::runtime::kImageNetMean[0]) / dbench::runtime::kImageNetStd[0];
  CHECK(std::abs(train.images[0] - want_red) < 0.1f);
  CHECK(std::abs(train.images[63] - want_red) < 0.1f);
  const auto test = dbench::runtime::read_image_folder(dbench::models::Split::test, dir.path(), {8, 8});
  CHECK(test.size == 6);
}

TEST_CASE("runtime::image_folder: a broken JPEG or an empty folder is a DataError naming it") {
  TempDir dir;
  fs::create_directories(dir.path() / "cat");
  CHECK_THROWS_WITH_AS(dbench::runtime::read_image_folder(dbench::models::Split::train, dir.path()),
                       doctest::Contains("no .jpg images"), dbench::models::DataError);
  std::ofstream(dir.path() / "cat" / "broken.jpg") << "garbage";
  CHECK_THROWS_WITH_AS(dbench::runtime::read_image_folder(dbench::models::Split::train, dir.path()),
                       doctest::Contains("broken.jpg"), dbench::models::DataError);
}

TEST_CASE("runtime::image_folder: dbench train learns a two-colour folder") {
  TempDir dir;
  write_folder(dir.path() / "data", 16, 12);
  const auto run = dbench::testing::run_dbench(
      "train -q --image-size 8 --set train.dataset=imagenet-folder --set train.data_dir=" +
      (dir.path() / "data").string() +
      " --set train.workers=1 --set algorithm.kind=centralized --set train.batch_per_worker=8"
      " --set train.iterations=20 --set train.eval_every=10 --out " +
      (dir.path() / "out").string());
  INFO(run.output);
  REQUIRE(run.status == 0);
  CHECK(run.output.find("final test accuracy 1.0000") != std::string::npos);
}
