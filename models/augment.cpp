#include "models/augment.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <numeric>

#include "models/errors.hpp"
#include "models/rng.hpp"

namespace dbench::models {

namespace {

constexpr std::uint64_t kViewStream = 0x5A1E3;
// The views other than the original, numbered 0 .. kOtherViews - 1.
constexpr std::uint64_t kOtherViews = kDistinctViews - 1;
constexpr int kShifts = 2 * kMaxViewShift + 1;
// The original's number among all kDistinctViews views (no flip, dx = dy = 0) in view_of()'s numbering.
constexpr std::uint64_t kIdentityView = kMaxViewShift * kShifts + kMaxViewShift;

/// View v of the kDistinctViews: dx from its lowest digit base 5, dy from the next, the flip from the rest.
ViewTransform view_of(std::uint64_t v) {
  return {static_cast<int>(v % kShifts) - kMaxViewShift,
          static_cast<int>((v / kShifts) % kShifts) - kMaxViewShift, v / (kShifts * kShifts) != 0};
}

}  // namespace

Augmentation::Augmentation(const Dataset& data, int copies, std::uint64_t seed)
    : copies_(copies),
      seed_(seed),
      images_(data.size),
      channels_(data.channels),
      height_(data.height),
      width_(data.width),
      black_(data.black),
      generator_(data.generator) {
  if (copies < 1 || copies > kDistinctViews) {
    throw DataError(
        RunInput::augment_copies,
        fmt::format("must be in [1, {}] (the original and the {} distinct shifted or flipped views of "
                    "an image), got {}",
                    kDistinctViews, kDistinctViews - 1, copies));
  }
  if (copies > 1 && black_.size() != static_cast<std::size_t>(data.channels)) {
    throw DataError(RunInput::augment_copies,
                    "this data set's samples are not images to shift and flip; only 1 copy is possible (the "
                    "synthetic task sets its number of samples instead)");
  }
}

ViewTransform Augmentation::transform(std::int64_t image, std::int64_t copy) const {
  if (copy == 0) {
    return {};
  }
  // Copy c >= 1 takes the non-identity view (a (c - 1) + b) mod kOtherViews, a coprime to kOtherViews: an
  // affine permutation per image, so an image's first kOtherViews copies are all different views, while
  // which views they are, and in which order, depend on (seed, image). A plain hash of (seed, image, copy)
  // would give two of 20 copies the same view for most images (birthday bound over 49 views).
  const std::uint64_t h = derive_seed(seed_, {kViewStream, static_cast<std::uint64_t>(image)});
  std::uint64_t a = 1 + (h % (kOtherViews - 1));
  while (std::gcd(a, kOtherViews) != 1) {
    ++a;
  }
  const std::uint64_t b = (h >> 32U) % kOtherViews;
  const std::uint64_t other = (a * static_cast<std::uint64_t>(copy - 1) + b) % kOtherViews;
  return view_of(other < kIdentityView ? other : other + 1);
}

void Augmentation::write(std::int64_t sample, const float* pixels, float* out) const {
  const std::size_t plane = static_cast<std::size_t>(height_) * static_cast<std::size_t>(width_);
  if (generator_ != nullptr) {
    generator_->write(sample, out);
    return;
  }
  const std::int64_t copy = copy_of(sample);
  if (copy == 0) {
    std::memcpy(out, pixels, static_cast<std::size_t>(channels_) * plane * sizeof(float));
    return;
  }
  const ViewTransform v = transform(image_of(sample), copy);
  // out(y, x) = flipped(y - dy, x - dx); the source columns of a row are a contiguous run (reversed when
  // flipped), the rest of the row is border.
  const int x_begin = std::max(0, v.dx);
  const int x_end = std::min(width_, width_ + v.dx);
  for (int c = 0; c < channels_; ++c) {
    const float black = black_[static_cast<std::size_t>(c)];
    const float* in = pixels + static_cast<std::size_t>(c) * plane;
    float* o = out + static_cast<std::size_t>(c) * plane;
    for (int y = 0; y < height_; ++y) {
      float* row = o + static_cast<std::size_t>(y) * static_cast<std::size_t>(width_);
      const int sy = y - v.dy;
      if (sy < 0 || sy >= height_) {
        std::fill(row, row + width_, black);
        continue;
      }
      const float* src = in + static_cast<std::size_t>(sy) * static_cast<std::size_t>(width_);
      std::fill(row, row + x_begin, black);
      if (v.flip) {
        for (int x = x_begin; x < x_end; ++x) {
          row[x] = src[width_ - 1 - (x - v.dx)];
        }
      } else {
        std::memcpy(row + x_begin, src + (x_begin - v.dx),
                    static_cast<std::size_t>(x_end - x_begin) * sizeof(float));
      }
      std::fill(row + x_end, row + width_, black);
    }
  }
}

std::vector<std::int32_t> augmented_labels(const Dataset& data, const Augmentation& views) {
  std::vector<std::int32_t> labels;
  labels.reserve(static_cast<std::size_t>(views.size()));
  for (int c = 0; c < views.copies(); ++c) {
    labels.insert(labels.end(), data.labels.begin(), data.labels.end());
  }
  return labels;
}

void gather(const Dataset& data, const Augmentation& views, std::span<const std::int64_t> indices,
            std::vector<float>& images, std::vector<std::int32_t>& labels) {
  const auto per_sample = static_cast<std::size_t>(data.sample_elements());
  images.resize(indices.size() * per_sample);
  labels.resize(indices.size());
  for (std::size_t i = 0; i < indices.size(); ++i) {
    const std::int64_t index = indices[i];
    if (index < 0 || index >= views.size()) {
      throw DataError(
          fmt::format("sample index {} is outside the training set's 0..{}", index, views.size() - 1));
    }
    const std::int64_t image = views.image_of(index);
    views.write(index, data.stored() ? data.image(image).data() : nullptr, images.data() + i * per_sample);
    labels[i] = data.labels[static_cast<std::size_t>(image)];
  }
}

}  // namespace dbench::models
