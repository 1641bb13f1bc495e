// Training sets larger than their images: every image seen as several deterministic views, computed when a
// batch is gathered and never stored, so a set of K x N samples holds the memory of its N images.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "models/dataset.hpp"

namespace dbench::models {

/// How one view moves its image: a horizontal flip (if `flip`), then a shift by (dx, dy) pixels, the border
/// uncovered by the shift at the value of a black pixel.
struct ViewTransform {
  int dx = 0;         ///< columns to the right (negative: to the left)
  int dy = 0;         ///< rows down (negative: up)
  bool flip = false;  ///< mirrored left to right before the shift
};

/// The largest shift of a view in each direction, in pixels: +-2 on 28 x 28 images (2 of 28 pixels, about
/// 7 %) is the standard augmentation for MNIST-like data.
inline constexpr int kMaxViewShift = 2;

/// Distinct views of an image: 5 x 5 shifts, flipped or not. The original is one of them, so at most this
/// many copies of a set are all different.
inline constexpr int kDistinctViews = (2 * kMaxViewShift + 1) * (2 * kMaxViewShift + 1) * 2;

/// An image data set expanded to copies x images samples. Sample s is view s / images of image s % images
/// (copy-major: the first `images` samples are the originals, so one copy is the data set itself). Copy 0 is
/// the image unchanged; copy c >= 1 is a shifted and possibly flipped view that is a pure function of (seed,
/// image, c), and the copies 1 .. kDistinctViews - 1 of one image are different views.
class Augmentation {
 public:
  /// `copies` views of every image of `data`, drawn with the run's `seed` (on a stream of their own, so
  /// every engine that is given the same seed reads the same samples). Throws DataError naming
  /// train.augment_copies when copies is outside [1, kDistinctViews], or above 1 for samples that are not
  /// images (no black value: the synthetic task).
  Augmentation(const Dataset& data, int copies, std::uint64_t seed);

  /// Views per image.
  int copies() const { return copies_; }
  /// Images the views are taken from.
  std::int64_t images() const { return images_; }
  /// Samples of the expanded set: copies x images.
  std::int64_t size() const { return images_ * copies_; }
  /// The image sample s is a view of.
  std::int64_t image_of(std::int64_t sample) const { return copies_ == 1 ? sample : sample % images_; }
  /// Which copy of its image sample s is (0: the original).
  std::int64_t copy_of(std::int64_t sample) const { return copies_ == 1 ? 0 : sample / images_; }
  /// How copy `copy` of image `image` moves it (the identity for copy 0).
  ViewTransform transform(std::int64_t image, std::int64_t copy) const;
  /// Writes sample s to out (sample_elements floats), its image's pixels read from `pixels`, which may lie
  /// anywhere (a shard kept apart, the data set's buffer). A set whose samples are computed (the synthetic
  /// task) ignores `pixels`, which may be null, and writes the sample from its index.
  void write(std::int64_t sample, const float* pixels, float* out) const;
  /// Whether the samples are computed from their index rather than read from stored pixels.
  bool computed() const { return generator_ != nullptr; }

 private:
  int copies_ = 1;
  std::uint64_t seed_ = 0;
  std::int64_t images_ = 0;
  int channels_ = 0;
  int height_ = 0;
  int width_ = 0;
  std::vector<float> black_;
  std::shared_ptr<const SyntheticTask> generator_;
};

/// The label of every sample of the expanded set (a view keeps its image's label), for partitioning it.
std::vector<std::int32_t> augmented_labels(const Dataset& data, const Augmentation& views);

/// Copies the expanded set's samples at indices into a batch (images N x C x H x W, labels N), resizing the
/// outputs: gather() with every index a sample of `views`.
void gather(const Dataset& data, const Augmentation& views, std::span<const std::int64_t> indices,
            std::vector<float>& images, std::vector<std::int32_t>& labels);

}  // namespace dbench::models
