#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "models/augment.hpp"
#include "models/errors.hpp"
#include "models/partition.hpp"
#include "models/rng.hpp"

namespace dm = dbench::models;

namespace {

constexpr float kBlack = -0.81f;

/// `images` random 1 x 28 x 28 images (no two pixels alike, so different views give different bytes).
dm::Dataset random_images(std::int64_t images, std::uint64_t seed = 3) {
  dm::Dataset d;
  d.size = images;
  d.channels = 1;
  d.height = 28;
  d.width = 28;
  d.classes = 10;
  d.black = {kBlack};
  dm::Rng rng(seed);
  d.images.resize(static_cast<std::size_t>(images * d.sample_elements()));
  for (float& v : d.images) {
    v = static_cast<float>(rng.normal());
  }
  for (std::int64_t i = 0; i < images; ++i) {
    d.labels.push_back(static_cast<std::int32_t>(i % 10));
  }
  return d;
}

std::vector<float> sample(const dm::Dataset& d, const dm::Augmentation& views, std::int64_t s) {
  std::vector<float> out(static_cast<std::size_t>(d.sample_elements()));
  views.write(s, d.image(views.image_of(s)).data(), out.data());
  return out;
}

/// The view by its definition, pixel by pixel: out(y, x) = in(y - dy, x' ) with x' = x - dx, mirrored if
/// flipped; black outside the image.
std::vector<float> reference_view(const dm::Dataset& d, std::int64_t image, const dm::ViewTransform& v) {
  const auto in = d.image(image);
  std::vector<float> out;
  for (int y = 0; y < d.height; ++y) {
    for (int x = 0; x < d.width; ++x) {
      const int sy = y - v.dy;
      int sx = x - v.dx;
      if (sy < 0 || sy >= d.height || sx < 0 || sx >= d.width) {
        out.push_back(kBlack);
        continue;
      }
      if (v.flip) {
        sx = d.width - 1 - sx;
      }
      out.push_back(in[static_cast<std::size_t>(sy * d.width + sx)]);
    }
  }
  return out;
}

}  // namespace

TEST_CASE("models::augment: copy 0 is the original image, and one copy is the data set itself") {
  const auto d = random_images(5);
  const dm::Augmentation one(d, 1, 7);
  const dm::Augmentation twenty(d, 20, 7);
  CHECK(one.size() == 5);
  CHECK(twenty.size() == 100);
  for (std::int64_t i = 0; i < 5; ++i) {
    const auto original = d.image(i);
    CHECK(sample(d, one, i) == std::vector<float>(original.begin(), original.end()));
    CHECK(sample(d, twenty, i) == std::vector<float>(original.begin(), original.end()));
    const auto t = twenty.transform(i, 0);
    CHECK(t.dx == 0);
    CHECK(t.dy == 0);
    CHECK_FALSE(t.flip);
  }
  std::vector<std::int64_t> all(5);
  std::iota(all.begin(), all.end(), 0);
  std::vector<float> plain;
  std::vector<float> viewed;
  std::vector<std::int32_t> plain_labels;
  std::vector<std::int32_t> viewed_labels;
  dm::gather(d, all, plain, plain_labels);
  dm::gather(d, one, all, viewed, viewed_labels);
  CHECK(plain == viewed);
  CHECK(plain_labels == viewed_labels);
}

TEST_CASE("models::augment: a view is a pure function of (seed, image, copy)") {
  const auto d = random_images(4);
  const dm::Augmentation a(d, 20, 11);
  const dm::Augmentation b(d, 20, 11);
  const dm::Augmentation larger(d, 30, 11);
  const dm::Augmentation other_seed(d, 20, 12);
  int differ_by_seed = 0;
  for (std::int64_t copy = 1; copy < 20; ++copy) {
    for (std::int64_t image = 0; image < 4; ++image) {
      const std::int64_t s = copy * 4 + image;
      CHECK(a.image_of(s) == image);
      CHECK(a.copy_of(s) == copy);
      // The same bytes twice, from another object and from a set with more copies.
      CHECK(sample(d, a, s) == sample(d, b, s));
      CHECK(sample(d, a, s) == sample(d, larger, s));
      differ_by_seed += sample(d, a, s) != sample(d, other_seed, s) ? 1 : 0;
    }
  }
  CHECK(differ_by_seed > 60);
}

TEST_CASE("models::augment: an image's copies are distinct views, each different from the original") {
  const auto d = random_images(3);
  const dm::Augmentation views(d, dm::kDistinctViews, 5);
  for (std::int64_t image = 0; image < 3; ++image) {
    std::set<std::vector<float>> seen;
    std::set<std::tuple<int, int, bool>> transforms;
    for (std::int64_t copy = 0; copy < dm::kDistinctViews; ++copy) {
      const auto t = views.transform(image, copy);
      CHECK(std::abs(t.dx) <= dm::kMaxViewShift);
      CHECK(std::abs(t.dy) <= dm::kMaxViewShift);
      transforms.emplace(t.dx, t.dy, t.flip);
      const auto bytes = sample(d, views, copy * 3 + image);
      CHECK(bytes == reference_view(d, image, t));
      seen.insert(bytes);
    }
    // All 50 views: the original and the 49 others, once each.
    CHECK(transforms.size() == static_cast<std::size_t>(dm::kDistinctViews));
    CHECK(seen.size() == static_cast<std::size_t>(dm::kDistinctViews));
  }
}

TEST_CASE("models::augment: the uncovered border is black and the labels follow the image") {
  const auto d = random_images(6);
  const dm::Augmentation views(d, 8, 1);
  std::vector<std::int64_t> indices(48);
  std::iota(indices.begin(), indices.end(), 0);
  std::vector<float> images;
  std::vector<std::int32_t> labels;
  dm::gather(d, views, indices, images, labels);
  const auto expanded = dm::augmented_labels(d, views);
  REQUIRE(expanded.size() == 48);
  for (std::size_t i = 0; i < indices.size(); ++i) {
    CHECK(labels[i] == d.labels[i % 6]);
    CHECK(expanded[i] == d.labels[i % 6]);
    const auto t = views.transform(views.image_of(indices[i]), views.copy_of(indices[i]));
    const std::vector<float> got(images.begin() + static_cast<std::ptrdiff_t>(i * 784),
                                 images.begin() + static_cast<std::ptrdiff_t>((i + 1) * 784));
    CHECK(got == reference_view(d, views.image_of(indices[i]), t));
    if (t.dy > 0) {
      CHECK(std::all_of(got.begin(), got.begin() + 28, [](float v) { return v == kBlack; }));
    }
  }
  CHECK_THROWS_WITH_AS(dm::gather(d, views, std::vector<std::int64_t>{48}, images, labels),
                       "sample index 48 is outside the training set's 0..47", dm::DataError);
}

TEST_CASE("models::augment: refuses copies outside [1, 50] and views of samples that are not images") {
  // The error names the input (the command line names its config key) and the reason.
  const auto refusal = [](const dm::Dataset& data, int copies) -> std::string {
    try {
      dm::Augmentation(data, copies, 1);
    } catch (const dm::DataError& e) {
      CHECK(e.input() == dm::RunInput::augment_copies);
      return e.reason();
    }
    FAIL("the copies were accepted");
    return {};
  };
  auto d = random_images(2);
  CHECK(refusal(d, 0).starts_with("must be in [1, 50]"));
  CHECK(refusal(d, 51).ends_with("got 51"));
  d.black.clear();
  CHECK_NOTHROW(dm::Augmentation(d, 1, 1));
  CHECK(refusal(d, 2).starts_with("this data set's samples are not images"));
}

TEST_CASE("models::augment: shards and epochs count the expanded set") {
  const auto d = random_images(100);
  const dm::Augmentation views(d, 20, 1);
  for (const auto scheme : {dm::PartitionScheme::iid, dm::PartitionScheme::dirichlet}) {
    const dm::Partition partition(dm::augmented_labels(d, views), {7, scheme, 0.5, 3});
    std::vector<std::int64_t> covered;
    for (int r = 0; r < 7; ++r) {
      const auto shard = partition.shard(r);
      // 2000 samples over 7 replicas: 286 for the first 5 (2000 mod 7), 285 for the others.
      CHECK(shard.size() == (r < 2000 % 7 ? 286U : 285U));
      covered.insert(covered.end(), shard.begin(), shard.end());
    }
    std::sort(covered.begin(), covered.end());
    std::vector<std::int64_t> all(2000);
    std::iota(all.begin(), all.end(), 0);
    CHECK(covered == all);
    // An epoch is one pass over a replica's expanded shard: floor(285 / 16) full batches.
    dm::BatchSampler sampler(partition, 6, 16);
    CHECK(sampler.batches_per_epoch() == 17);
    CHECK(sampler.epoch_of(17) == 1);
  }
}
