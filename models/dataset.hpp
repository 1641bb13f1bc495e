#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <vector>

#include "models/large_alloc.hpp"

namespace dbench::models {

class SyntheticTask;

/// Labelled images held in memory, normalised per channel: (pixel / 255 - mean) / std.
struct Dataset {
  /// Number of samples.
  std::int64_t size = 0;
  /// Image channels.
  int channels = 0;
  /// Image height in pixels.
  int height = 0;
  /// Image width in pixels.
  int width = 0;
  /// Number of classes; labels lie in [0, classes).
  int classes = 0;
  /// size x channels x height x width floats, sample-major, channel planes within a sample (NCHW). Training
  /// gathers samples at random, so a large set lies in huge pages (LargeAllocator).
  std::vector<float, LargeAllocator<float>> images;
  /// size labels.
  std::vector<std::int32_t> labels;
  /// Per channel, the normalised value of a black pixel (0 before normalisation): what a shifted view's
  /// uncovered border holds. Empty where the samples are not images (the synthetic task).
  std::vector<float> black;
  /// Where the samples are computed instead of stored (the synthetic task): sample i's inputs are a pure
  /// function of (seed, split, i) that `generator` writes on demand, `images` stays empty and only the labels
  /// are held, so a set of 10 million samples costs its 40 MB of labels. Null for a stored set.
  std::shared_ptr<const SyntheticTask> generator;

  /// Floats per sample (channels x height x width).
  std::int64_t sample_elements() const { return std::int64_t{channels} * height * width; }
  /// Whether the samples' inputs lie in `images` (false: the generator computes them).
  bool stored() const { return generator == nullptr; }
  /// Writes sample i's inputs (sample_elements() floats) to out: copied from `images`, or computed.
  void write_sample(std::int64_t i, float* out) const;
  /// The pixels of sample i of a stored set.
  std::span<const float> image(std::int64_t i) const {
    return std::span<const float>(images).subspan(static_cast<std::size_t>(i * sample_elements()),
                                                  static_cast<std::size_t>(sample_elements()));
  }
};

/// Which half of a data set to read.
enum class Split { train, test };

/// Per-channel mean and standard deviation of Fashion-MNIST's training pixels scaled to [0, 1].
inline constexpr float kFashionMnistMean = 0.2860f;
/// See kFashionMnistMean.
inline constexpr float kFashionMnistStd = 0.3530f;
/// Per-channel (R, G, B) mean of CIFAR-10's training pixels scaled to [0, 1].
inline constexpr std::array<float, 3> kCifar10Mean = {0.4914f, 0.4822f, 0.4465f};
/// Per-channel (R, G, B) standard deviation of CIFAR-10's training pixels scaled to [0, 1].
inline constexpr std::array<float, 3> kCifar10Std = {0.2470f, 0.2435f, 0.2616f};

/// Where Debian's dataset-fashion-mnist package installs the IDX files.
inline constexpr const char* kFashionMnistDefaultDir = "/usr/share/datasets/fashion-mnist";

/// Reads Fashion-MNIST (or MNIST) IDX files from dir: {train,t10k}-{images-idx3,labels-idx1}-ubyte, gzipped
/// (".gz", preferred) or not. Checks magic numbers, dimensions, file lengths and labels; throws DataError
/// naming the file.
Dataset read_fashion_mnist(Split split, const std::filesystem::path& dir = kFashionMnistDefaultDir);

/// Reads CIFAR-10's binary version from dir (data_batch_1..5.bin for train, test_batch.bin for test; dir may
/// also be the parent of cifar-10-batches-bin). Any whole number of 3073-byte records per file is accepted.
Dataset read_cifar10(Split split, const std::filesystem::path& dir);

/// Writes one CIFAR-10 binary batch file: per sample a label byte then 3 x 32 x 32 pixel bytes (R, G, B
/// planes). pixels holds labels.size() x 3072 bytes.
void write_cifar10_batch(const std::filesystem::path& file, std::span<const std::uint8_t> pixels,
                         std::span<const std::int32_t> labels);

/// A teacher-student classification task: Gaussian inputs labelled by a fixed random teacher network.
struct SyntheticSpec {
  /// Samples in the train split.
  std::int64_t train_size = 60000;
  /// Samples in the test split.
  std::int64_t test_size = 10000;
  /// Input channels.
  int channels = 1;
  /// Input height.
  int height = 1;
  /// Input width.
  int width = 32;
  /// Number of classes.
  int classes = 10;
  /// Hidden width of the teacher (one ReLU layer).
  int teacher_hidden = 64;
  /// Seeds the teacher (shared by both splits) and, with the split, the inputs.
  std::uint64_t seed = 1;
};

/// The synthetic task's samples, each computed from (seed, split, index) alone: inputs are N(0, 1) (already
/// normalised) drawn from a stream of the sample's own, its label the argmax of the teacher
/// teacher(x) = W2 relu(W1 x + b1) + b2, with b2 calibrated so that the classes are roughly balanced. No
/// sample depends on another or on the split's size, so a longer split extends a shorter one.
class SyntheticTask {
 public:
  /// The task `spec` describes, for one split (train and test share the teacher, not the inputs). Throws
  /// DataError on non-positive dimensions, fewer than 2 classes or a non-positive teacher width.
  SyntheticTask(const SyntheticSpec& spec, Split split);
  ~SyntheticTask();
  SyntheticTask(const SyntheticTask&) = delete;
  SyntheticTask& operator=(const SyntheticTask&) = delete;

  /// Floats per sample.
  std::int64_t inputs() const { return inputs_; }
  /// Writes sample `index`'s inputs (inputs() floats) to out.
  void write(std::int64_t index, float* out) const;
  /// The teacher's label of the inputs x (inputs() floats).
  std::int32_t label(const float* x) const;

 private:
  class Teacher;
  std::int64_t inputs_ = 0;
  std::uint64_t stream_ = 0;
  std::unique_ptr<const Teacher> teacher_;
};

/// A split of the synthetic task as a data set whose inputs are computed (Dataset::generator) and whose
/// labels are held: spec.train_size or spec.test_size samples.
Dataset make_synthetic(const SyntheticSpec& spec, Split split);

/// Copies (or, for a computed set, writes) the samples at indices into a batch (images N x C x H x W, labels
/// N), resizing the outputs.
void gather(const Dataset& data, std::span<const std::int64_t> indices, std::vector<float>& images,
            std::vector<std::int32_t>& labels);

}  // namespace dbench::models
