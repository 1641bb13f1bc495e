#include <doctest/doctest.h>
#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <numeric>
#include <string>
#include <vector>

#include "models/dataset.hpp"
#include "models/errors.hpp"
#include "support/approx.hpp"
#include "support/temp_dir.hpp"

namespace dm = dbench::models;
namespace fs = std::filesystem;
using dbench::testing::TempDir;

namespace {

void put_u32(std::vector<std::uint8_t>& out, std::uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) {
    out.push_back(static_cast<std::uint8_t>(v >> shift));
  }
}

void write_bytes(const fs::path& path, const std::vector<std::uint8_t>& bytes) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  REQUIRE(f != nullptr);
  REQUIRE(std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size());
  std::fclose(f);
}

void write_gzip(const fs::path& path, const std::vector<std::uint8_t>& bytes) {
  gzFile f = gzopen(path.c_str(), "wb");
  REQUIRE(f != nullptr);
  REQUIRE(gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size())) == static_cast<int>(bytes.size()));
  gzclose(f);
}

std::vector<std::uint8_t> idx_images(std::uint32_t magic, std::uint32_t count, std::uint32_t side,
                                     std::size_t pixel_bytes) {
  std::vector<std::uint8_t> out;
  put_u32(out, magic);
  put_u32(out, count);
  put_u32(out, side);
  put_u32(out, side);
  for (std::size_t i = 0; i < pixel_bytes; ++i) {
    out.push_back(static_cast<std::uint8_t>(i % 256));
  }
  return out;
}

std::vector<std::uint8_t> idx_labels(std::uint32_t magic, std::uint32_t count) {
  std::vector<std::uint8_t> out;
  put_u32(out, magic);
  put_u32(out, count);
  for (std::uint32_t i = 0; i < count; ++i) {
    out.push_back(static_cast<std::uint8_t>(i % 10));
  }
  return out;
}

/// A valid 5-image, 4x4 "train" pair, un-gzipped.
void write_small_idx(const fs::path& dir) {
  write_bytes(dir / "train-images-idx3-ubyte", idx_images(0x803, 5, 4, 5 * 16));
  write_bytes(dir / "train-labels-idx1-ubyte", idx_labels(0x801, 5));
}

std::string error_of(const fs::path& dir) {
  try {
    dm::read_fashion_mnist(dm::Split::train, dir);
  } catch (const dm::DataError& e) {
    return e.what();
  }
  return "no error";
}

bool have_fashion_mnist() {
  if (fs::exists(fs::path(dm::kFashionMnistDefaultDir) / "train-images-idx3-ubyte.gz")) {
    return true;
  }
  std::cout << DBENCH_SKIP_MARKER
            << " Fashion-MNIST is not installed (Debian package dataset-fashion-mnist)\n";
  return false;
}

}  // namespace

TEST_CASE("models::fashion_mnist: reads 60000 training images with labels 0..9") {
  if (!have_fashion_mnist()) {
    return;
  }

  const auto data = dm::read_fashion_mnist(dm::Split::train);
  CHECK(data.size == 60000);
  CHECK(data.channels == 1);
  CHECK(data.height == 28);
  CHECK(data.width == 28);
  CHECK(data.classes == 10);
  REQUIRE(data.images.size() == 60000U * 784U);
  REQUIRE(data.labels.size() == 60000U);
  std::vector<int> per_class(10, 0);
  for (auto label : data.labels) {
    REQUIRE(label >= 0);
    REQUIRE(label <= 9);
    ++per_class[static_cast<std::size_t>(label)];
  }
  for (int count : per_class) {
    CHECK(count == 6000);  // Fashion-MNIST is exactly balanced
  }
  // The normalisation constants are the training set's own statistics.
  const double mean =
      std::accumulate(data.images.begin(), data.images.end(), 0.0) / static_cast<double>(data.images.size());
  double var = 0.0;
  for (float v : data.images) {
    var += (v - mean) * (v - mean);
  }
  var /= static_cast<double>(data.images.size());
  CHECK(mean == doctest::Approx(0.0).epsilon(0.002));
  CHECK(std::sqrt(var) == dbench::testing::approx(1.0).epsilon(0.002));
}

TEST_CASE("models::fashion_mnist: reads the 10000 test images") {
  if (!have_fashion_mnist()) {
    return;
  }
  const auto data = dm::read_fashion_mnist(dm::Split::test);
  CHECK(data.size == 10000);
  CHECK(data.labels.size() == 10000U);
  CHECK(data.images.size() == 10000U * 784U);
}

TEST_CASE("models::fashion_mnist: a missing file names the path and the Debian package") {
  TempDir dir;
  const std::string message = error_of(dir.path());
  CHECK(message.find((dir.path() / "train-images-idx3-ubyte.gz").string()) != std::string::npos);
  CHECK(message.find("install Debian's dataset-fashion-mnist package") != std::string::npos);
}

TEST_CASE("models::fashion_mnist: reads un-gzipped and gzipped IDX files alike") {
  TempDir raw;
  write_small_idx(raw.path());
  const auto a = dm::read_fashion_mnist(dm::Split::train, raw.path());
  CHECK(a.size == 5);
  CHECK(a.height == 4);
  CHECK(a.labels == std::vector<std::int32_t>{0, 1, 2, 3, 4});
  // Pixel i of the file holds i % 256.
  CHECK(a.images[17] ==
        dbench::testing::approx((17.0f / 255.0f - dm::kFashionMnistMean) / dm::kFashionMnistStd));

  TempDir gz;
  write_gzip(gz.path() / "train-images-idx3-ubyte.gz", idx_images(0x803, 5, 4, 5 * 16));
  write_gzip(gz.path() / "train-labels-idx1-ubyte.gz", idx_labels(0x801, 5));
  const auto b = dm::read_fashion_mnist(dm::Split::train, gz.path());
  CHECK(b.images == a.images);
  CHECK(b.labels == a.labels);
}

TEST_CASE("models::fashion_mnist: rejects wrong magic numbers") {
  TempDir dir;
  write_small_idx(dir.path());
  // Label file where the image file should be.
  write_bytes(dir.path() / "train-images-idx3-ubyte", idx_labels(0x801, 20));
  CHECK(error_of(dir.path()).find("magic number 0x00000801") != std::string::npos);
  write_small_idx(dir.path());
  write_bytes(dir.path() / "train-labels-idx1-ubyte", idx_images(0x803, 5, 4, 80));
  CHECK(error_of(dir.path()).find("is not an IDX label file") != std::string::npos);
}

TEST_CASE("models::fashion_mnist: rejects truncated, overlong and mismatched files") {
  TempDir dir;
  write_small_idx(dir.path());
  write_bytes(dir.path() / "train-images-idx3-ubyte", idx_images(0x803, 5, 4, 5 * 16 - 1));
  CHECK(error_of(dir.path()).find("truncated pixel data: expected 80 bytes, found 79") != std::string::npos);
  write_bytes(dir.path() / "train-images-idx3-ubyte", idx_images(0x803, 5, 4, 5 * 16 + 3));
  CHECK(error_of(dir.path()).find("longer than its header declares") != std::string::npos);
  write_small_idx(dir.path());
  write_bytes(dir.path() / "train-labels-idx1-ubyte", idx_labels(0x801, 6));
  CHECK(error_of(dir.path()).find("holds 6 labels but the image file holds 5 images") != std::string::npos);
  auto bad_label = idx_labels(0x801, 5);
  bad_label.back() = 12;
  write_bytes(dir.path() / "train-labels-idx1-ubyte", bad_label);
  CHECK(error_of(dir.path()).find("outside 0..9") != std::string::npos);
  write_bytes(dir.path() / "train-labels-idx1-ubyte", {0, 0});
  CHECK(error_of(dir.path()).find("truncated IDX label header") != std::string::npos);
}

TEST_CASE("models::cifar10: what write_cifar10_batch writes, read_cifar10 reads back normalised") {
  TempDir dir;
  const fs::path batches = dir.path() / "cifar-10-batches-bin";
  fs::create_directory(batches);
  constexpr std::size_t kPixels = 3 * 32 * 32;
  std::vector<std::int32_t> all_labels;
  std::vector<std::uint8_t> all_pixels;
  for (int file = 1; file <= 6; ++file) {
    const std::size_t count = static_cast<std::size_t>(file);  // 1..5 train records per file, 6 test
    std::vector<std::int32_t> labels(count);
    std::vector<std::uint8_t> pixels(count * kPixels);
    for (std::size_t i = 0; i < count; ++i) {
      labels[i] = static_cast<std::int32_t>((file + i) % 10);
    }
    for (std::size_t p = 0; p < pixels.size(); ++p) {
      pixels[p] = static_cast<std::uint8_t>((p * 7 + static_cast<std::size_t>(file)) % 256);
    }
    const auto name =
        file <= 5 ? "data_batch_" + std::to_string(file) + ".bin" : std::string("test_batch.bin");
    dm::write_cifar10_batch(batches / name, pixels, labels);
    if (file <= 5) {
      all_labels.insert(all_labels.end(), labels.begin(), labels.end());
      all_pixels.insert(all_pixels.end(), pixels.begin(), pixels.end());
    }
  }
  CHECK(fs::file_size(batches / "test_batch.bin") == 6 * 3073U);

  // The parent directory is accepted as well as cifar-10-batches-bin itself.
  const auto train = dm::read_cifar10(dm::Split::train, dir.path());
  CHECK(train.size == 15);
  CHECK(train.channels == 3);
  CHECK(train.height == 32);
  CHECK(train.width == 32);
  CHECK(train.classes == 10);
  CHECK(train.labels == all_labels);
  REQUIRE(train.images.size() == all_pixels.size());
  for (std::size_t p = 0; p < all_pixels.size(); p += 97) {
    const std::size_t channel = (p % kPixels) / 1024;
    const float expected =
        (static_cast<float>(all_pixels[p]) / 255.0f - dm::kCifar10Mean[channel]) / dm::kCifar10Std[channel];
    CHECK(train.images[p] == dbench::testing::approx(expected));
  }
  const auto test = dm::read_cifar10(dm::Split::test, batches);
  CHECK(test.size == 6);
}

TEST_CASE("models::cifar10: rejects missing files and partial records") {
  TempDir dir;
  CHECK_THROWS_WITH_AS(dm::read_cifar10(dm::Split::test, dir.path()),
                       doctest::Contains("cifar-10-binary.tar.gz"), dm::DataError);
  write_bytes(dir.path() / "test_batch.bin", std::vector<std::uint8_t>(3073 + 10, 1));
  CHECK_THROWS_WITH_AS(dm::read_cifar10(dm::Split::test, dir.path()),
                       doctest::Contains("not a whole number of 3073-byte"), dm::DataError);
  std::vector<std::uint8_t> bad_label(3073, 0);
  bad_label[0] = 10;
  write_bytes(dir.path() / "test_batch.bin", bad_label);
  CHECK_THROWS_WITH_AS(dm::read_cifar10(dm::Split::test, dir.path()), doctest::Contains("outside 0..9"),
                       dm::DataError);
  const std::vector<std::uint8_t> pixels(10, 0);
  const std::vector<std::int32_t> labels{1};
  CHECK_THROWS_AS(dm::write_cifar10_batch(dir.path() / "x.bin", pixels, labels), dm::DataError);
}

namespace {

/// The inputs of every sample of a data set, written one by one.
std::vector<float> all_inputs(const dm::Dataset& data) {
  std::vector<float> out(static_cast<std::size_t>(data.size * data.sample_elements()));
  for (std::int64_t i = 0; i < data.size; ++i) {
    data.write_sample(i, out.data() + i * data.sample_elements());
  }
  return out;
}

}  // namespace

TEST_CASE("models::synthetic: the same seed gives the same data, another seed other data") {
  dm::SyntheticSpec spec;
  spec.train_size = 500;
  spec.test_size = 100;
  const auto a = dm::make_synthetic(spec, dm::Split::train);
  const auto b = dm::make_synthetic(spec, dm::Split::train);
  CHECK(a.size == 500);
  CHECK(a.labels.size() == 500U);
  CHECK(all_inputs(a).size() == 500U * 32U);
  CHECK(all_inputs(a) == all_inputs(b));
  CHECK(a.labels == b.labels);
  spec.seed = 2;
  const auto c = dm::make_synthetic(spec, dm::Split::train);
  CHECK(all_inputs(c) != all_inputs(a));
  CHECK(c.labels != a.labels);
}

TEST_CASE("models::synthetic: a sample is a function of (seed, split, index) alone, and is never stored") {
  dm::SyntheticSpec spec;
  spec.train_size = 2000;
  const auto small = dm::make_synthetic(spec, dm::Split::train);
  spec.train_size = 200000;
  const auto large = dm::make_synthetic(spec, dm::Split::train);
  // Only the labels are held: 200,000 samples of 32 inputs would be 25.6 MB of floats.
  CHECK_FALSE(large.stored());
  CHECK(large.images.capacity() == 0U);
  CHECK(large.labels.size() == 200000U);
  // The larger set extends the smaller one, sample for sample, whatever order they are written in.
  std::vector<float> x(32);
  std::vector<float> y(32);
  for (const std::int64_t i : {1999, 0, 777, 1}) {
    CAPTURE(i);
    small.write_sample(i, x.data());
    large.write_sample(i, y.data());
    CHECK(x == y);
    CHECK(small.labels[static_cast<std::size_t>(i)] == large.labels[static_cast<std::size_t>(i)]);
    // The same sample twice: the same bytes.
    large.write_sample(i, y.data());
    CHECK(x == y);
  }
  // Neighbouring samples differ, and the label is the teacher's on exactly these inputs.
  const dm::SyntheticTask task(spec, dm::Split::train);
  large.write_sample(150000, x.data());
  large.write_sample(150001, y.data());
  CHECK(x != y);
  CHECK(task.label(x.data()) == large.labels[150000]);
  CHECK(task.label(y.data()) == large.labels[150001]);
  std::vector<float> z(32);
  task.write(150000, z.data());
  CHECK(z == x);
}

TEST_CASE("models::synthetic: train and test share the teacher but not the inputs") {
  dm::SyntheticSpec spec;
  spec.train_size = 300;
  spec.test_size = 200;
  spec.channels = 2;
  spec.height = 3;
  spec.width = 4;
  spec.classes = 5;
  const auto train = dm::make_synthetic(spec, dm::Split::train);
  const auto test = dm::make_synthetic(spec, dm::Split::test);
  CHECK(test.size == 200);
  CHECK(test.sample_elements() == 24);
  const auto train_inputs = all_inputs(train);
  const auto test_inputs = all_inputs(test);
  CHECK(std::vector<float>(train_inputs.begin(), train_inputs.begin() + 24) !=
        std::vector<float>(test_inputs.begin(), test_inputs.begin() + 24));
  // The teacher is shared: it labels a train sample the same through the test split's task.
  const dm::SyntheticTask test_task(spec, dm::Split::test);
  for (std::size_t i = 0; i < 300; ++i) {
    CHECK(test_task.label(train_inputs.data() + i * 24) == train.labels[i]);
  }
  // A longer test split extends the shorter one: same stream, same teacher.
  spec.test_size = 250;
  const auto longer = dm::make_synthetic(spec, dm::Split::test);
  const auto longer_inputs = all_inputs(longer);
  CHECK(std::equal(test_inputs.begin(), test_inputs.end(), longer_inputs.begin()));
  CHECK(std::equal(test.labels.begin(), test.labels.end(), longer.labels.begin()));
}

TEST_CASE("models::synthetic: classes are roughly balanced and inputs standard normal") {
  dm::SyntheticSpec spec;
  spec.train_size = 20000;
  spec.classes = 10;
  for (std::uint64_t seed : {1, 2, 3}) {
    spec.seed = seed;
    const auto data = dm::make_synthetic(spec, dm::Split::train);
    std::vector<int> per_class(10, 0);
    for (auto label : data.labels) {
      ++per_class[static_cast<std::size_t>(label)];
    }
    CAPTURE(seed);
    MESSAGE("seed " << seed << ": smallest class " << *std::min_element(per_class.begin(), per_class.end())
                    << ", largest " << *std::max_element(per_class.begin(), per_class.end()));
    for (int count : per_class) {
      CHECK(count > 1500);  // uniform share: 2000
      CHECK(count < 2500);
    }
    const auto inputs = all_inputs(data);
    const double mean =
        std::accumulate(inputs.begin(), inputs.end(), 0.0) / static_cast<double>(inputs.size());
    double var = 0.0;
    for (float v : inputs) {
      var += (v - mean) * (v - mean);
    }
    var /= static_cast<double>(inputs.size());
    CHECK(std::abs(mean) < 0.01);
    CHECK(std::abs(var - 1.0) < 0.02);
  }
}

TEST_CASE("models::dataset: gather copies the indexed samples into a batch") {
  dm::SyntheticSpec spec;
  spec.train_size = 10;
  spec.width = 3;
  const auto data = dm::make_synthetic(spec, dm::Split::train);
  const auto inputs = all_inputs(data);
  std::vector<float> images;
  std::vector<std::int32_t> labels;
  const std::vector<std::int64_t> indices{7, 2, 7};
  dm::gather(data, indices, images, labels);
  REQUIRE(images.size() == 9U);
  CHECK(images[0] == inputs[21]);
  CHECK(images[5] == inputs[8]);
  CHECK(labels == std::vector<std::int32_t>{data.labels[7], data.labels[2], data.labels[7]});
  const std::vector<std::int64_t> bad{10};
  CHECK_THROWS_AS(dm::gather(data, bad, images, labels), dm::DataError);
}
