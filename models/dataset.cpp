#include "models/dataset.hpp"

#include <fmt/format.h>
#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <utility>

#include "models/errors.hpp"
#include "models/rng.hpp"

namespace dbench::models {

namespace {

constexpr std::uint32_t kIdxImagesMagic = 0x00000803;  // unsigned byte data, 3 dimensions
constexpr std::uint32_t kIdxLabelsMagic = 0x00000801;  // unsigned byte data, 1 dimension
constexpr int kFashionMnistClasses = 10;
constexpr int kCifarClasses = 10;
constexpr std::int64_t kCifarSide = 32;
constexpr std::int64_t kCifarPixels = 3 * kCifarSide * kCifarSide;
constexpr std::int64_t kCifarRecord = 1 + kCifarPixels;

/// A file read through zlib, which passes un-gzipped files through unchanged.
class GzReader {
 public:
  explicit GzReader(const std::filesystem::path& path) : path_(path), file_(gzopen(path.c_str(), "rb")) {
    if (file_ == nullptr) {
      throw DataError(fmt::format("cannot open {}: check that it exists and is readable", path.string()));
    }
    // A 1 MiB buffer keeps inflate out of the small-read path: the 47 MB training images load in ~0.2 s.
    gzbuffer(file_, 1U << 20U);
  }
  GzReader(const GzReader&) = delete;
  GzReader& operator=(const GzReader&) = delete;
  ~GzReader() { gzclose(file_); }

  /// Reads up to out.size() bytes and returns how many were read.
  std::size_t read_some(std::span<std::uint8_t> out) {
    std::size_t total = 0;
    while (total < out.size()) {
      // gzread takes an unsigned count: read in chunks well below its limit.
      const auto chunk = static_cast<unsigned>(std::min<std::size_t>(out.size() - total, 1U << 30U));
      const int got = gzread(file_, out.data() + total, chunk);
      if (got < 0) {
        int code = 0;
        const char* message = gzerror(file_, &code);
        throw DataError(fmt::format("{}: corrupt or unreadable ({}); reinstall or re-download the file",
                                    path_.string(), message));
      }
      if (got == 0) {
        break;
      }
      total += static_cast<std::size_t>(got);
    }
    return total;
  }

  /// Reads exactly out.size() bytes; what names the part for the error message.
  void read_exact(std::span<std::uint8_t> out, const char* what) {
    const std::size_t got = read_some(out);
    if (got != out.size()) {
      throw DataError(fmt::format("{}: truncated {}: expected {} bytes, found {}", path_.string(), what,
                                  out.size(), got));
    }
  }

  /// Throws unless the file has no bytes left.
  void expect_end() {
    std::array<std::uint8_t, 1> extra{};
    if (read_some(extra) != 0) {
      throw DataError(fmt::format("{}: longer than its header declares; the file does not match its header",
                                  path_.string()));
    }
  }

  /// Reads the whole remaining contents.
  std::vector<std::uint8_t> read_all() {
    std::vector<std::uint8_t> data;
    std::size_t used = 0;
    for (;;) {
      data.resize(std::max<std::size_t>(used * 2, 1U << 20U));
      const std::size_t got = read_some(std::span(data).subspan(used));
      used += got;
      if (used < data.size()) {
        break;
      }
    }
    data.resize(used);
    return data;
  }

 private:
  std::filesystem::path path_;
  gzFile file_;
};

std::uint32_t big_endian_u32(std::span<const std::uint8_t> bytes) {
  return (std::uint32_t{bytes[0]} << 24U) | (std::uint32_t{bytes[1]} << 16U) |
         (std::uint32_t{bytes[2]} << 8U) | std::uint32_t{bytes[3]};
}

/// dir/base.gz if present, else dir/base; DataError naming both and the Debian package otherwise.
std::filesystem::path find_idx_file(const std::filesystem::path& dir, const std::string& base) {
  const auto gz = dir / (base + ".gz");
  const auto raw = dir / base;
  if (std::filesystem::exists(gz)) {
    return gz;
  }
  if (std::filesystem::exists(raw)) {
    return raw;
  }
  throw DataError(
      fmt::format("Fashion-MNIST file not found: {} (nor un-gzipped {}); install Debian's "
                  "dataset-fashion-mnist package (apt-get install dataset-fashion-mnist) or point "
                  "to the directory holding the IDX files",
                  gz.string(), raw.string()));
}

std::array<float, 256> normalisation_table(float mean, float std_dev) {
  std::array<float, 256> table{};
  for (std::size_t v = 0; v < table.size(); ++v) {
    table[v] = (static_cast<float>(v) / 255.0f - mean) / std_dev;
  }
  return table;
}

std::vector<std::int32_t> read_idx_labels(const std::filesystem::path& path, std::int64_t expected) {
  GzReader in(path);
  std::array<std::uint8_t, 8> header{};
  in.read_exact(header, "IDX label header");
  const std::uint32_t magic = big_endian_u32(std::span(header).first(4));
  if (magic != kIdxLabelsMagic) {
    throw DataError(
        fmt::format("{}: magic number {:#010x} is not an IDX label file's ({:#010x}); "
                    "is this an image file or a corrupt download?",
                    path.string(), magic, kIdxLabelsMagic));
  }
  const std::int64_t count = big_endian_u32(std::span(header).subspan(4, 4));
  if (count != expected) {
    throw DataError(
        fmt::format("{}: holds {} labels but the image file holds {} images; the two files must "
                    "come from the same split",
                    path.string(), count, expected));
  }
  std::vector<std::uint8_t> raw(static_cast<std::size_t>(count));
  in.read_exact(raw, "labels");
  in.expect_end();
  std::vector<std::int32_t> labels(raw.size());
  for (std::size_t i = 0; i < raw.size(); ++i) {
    if (raw[i] >= kFashionMnistClasses) {
      throw DataError(fmt::format("{}: label {} at index {} is outside 0..{}", path.string(), raw[i], i,
                                  kFashionMnistClasses - 1));
    }
    labels[i] = raw[i];
  }
  return labels;
}

void read_idx_images(const std::filesystem::path& path, Dataset& data) {
  GzReader in(path);
  std::array<std::uint8_t, 16> header{};
  in.read_exact(header, "IDX image header");
  const std::uint32_t magic = big_endian_u32(std::span(header).first(4));
  if (magic != kIdxImagesMagic) {
    throw DataError(
        fmt::format("{}: magic number {:#010x} is not an IDX image file's ({:#010x}); "
                    "is this a label file or a corrupt download?",
                    path.string(), magic, kIdxImagesMagic));
  }
  const std::uint32_t count = big_endian_u32(std::span(header).subspan(4, 4));
  const std::uint32_t rows = big_endian_u32(std::span(header).subspan(8, 4));
  const std::uint32_t cols = big_endian_u32(std::span(header).subspan(12, 4));
  if (rows == 0 || cols == 0 || rows > 4096 || cols > 4096) {
    throw DataError(
        fmt::format("{}: image size {}x{} is implausible for an IDX image file", path.string(), rows, cols));
  }
  data.size = count;
  data.channels = 1;
  data.height = static_cast<int>(rows);
  data.width = static_cast<int>(cols);
  data.classes = kFashionMnistClasses;
  std::vector<std::uint8_t> pixels(static_cast<std::size_t>(data.size * data.sample_elements()));
  in.read_exact(pixels, "pixel data");
  in.expect_end();
  const auto table = normalisation_table(kFashionMnistMean, kFashionMnistStd);
  data.images.resize(pixels.size());
  std::transform(pixels.begin(), pixels.end(), data.images.begin(), [&](std::uint8_t v) { return table[v]; });
  data.black = {table[0]};
}

std::filesystem::path cifar_dir(const std::filesystem::path& dir) {
  // Accept the directory the archive extracts into as well as its parent.
  if (!std::filesystem::exists(dir / "test_batch.bin") &&
      !std::filesystem::exists(dir / "data_batch_1.bin") &&
      std::filesystem::is_directory(dir / "cifar-10-batches-bin")) {
    return dir / "cifar-10-batches-bin";
  }
  return dir;
}

void append_cifar_file(const std::filesystem::path& path, Dataset& data,
                       const std::array<std::array<float, 256>, 3>& tables) {
  if (!std::filesystem::exists(path)) {
    throw DataError(
        fmt::format("CIFAR-10 file not found: {}; download the binary version "
                    "(cifar-10-binary.tar.gz) from https://www.cs.toronto.edu/~kriz/cifar.html "
                    "and extract it into that directory",
                    path.string()));
  }
  const std::vector<std::uint8_t> bytes = GzReader(path).read_all();
  const auto length = static_cast<std::int64_t>(bytes.size());
  if (length == 0 || length % kCifarRecord != 0) {
    throw DataError(
        fmt::format("{}: {} bytes is not a whole number of {}-byte CIFAR-10 records (label + "
                    "3x32x32 pixels); the file is truncated or not CIFAR-10's binary version",
                    path.string(), length, kCifarRecord));
  }
  const std::int64_t records = length / kCifarRecord;
  const auto first_image = data.images.size();
  data.images.resize(first_image + static_cast<std::size_t>(records * kCifarPixels));
  data.labels.reserve(data.labels.size() + static_cast<std::size_t>(records));
  for (std::int64_t r = 0; r < records; ++r) {
    const std::uint8_t* record = bytes.data() + r * kCifarRecord;
    if (record[0] >= kCifarClasses) {
      throw DataError(fmt::format("{}: label {} of record {} is outside 0..{}", path.string(), record[0], r,
                                  kCifarClasses - 1));
    }
    data.labels.push_back(record[0]);
    float* out = data.images.data() + first_image + r * kCifarPixels;
    for (std::int64_t p = 0; p < kCifarPixels; ++p) {
      out[p] = tables[static_cast<std::size_t>(p / (kCifarSide * kCifarSide))][record[1 + p]];
    }
  }
  data.size += records;
}

/// Row-major dense layer y = W x + b in double, so the teacher's labels do not depend on float rounding.
void dense(const std::vector<double>& weights, const std::vector<double>& bias, std::span<const double> x,
           std::span<double> y) {
  const std::size_t in = x.size();
  for (std::size_t o = 0; o < y.size(); ++o) {
    double sum = bias[o];
    const double* row = weights.data() + o * in;
    for (std::size_t i = 0; i < in; ++i) {
      sum += row[i] * x[i];
    }
    y[o] = sum;
  }
}

}  // namespace

/// Fixed random two-layer ReLU network that labels the synthetic inputs.
class SyntheticTask::Teacher {
 public:
  Teacher(const SyntheticSpec& spec, std::int64_t inputs) : inputs_(inputs), hidden_(spec.teacher_hidden) {
    Rng rng(derive_seed(spec.seed, {kTeacherStream}));
    const auto classes = static_cast<std::size_t>(spec.classes);
    w1_.resize(static_cast<std::size_t>(hidden_ * inputs_));
    b1_.resize(static_cast<std::size_t>(hidden_));
    w2_.resize(static_cast<std::size_t>(hidden_) * classes);
    b2_.assign(classes, 0.0);
    // 1/sqrt(fan-in) scaling keeps every layer's outputs O(1) whatever the widths.
    const double scale1 = 1.0 / std::sqrt(static_cast<double>(inputs_));
    const double scale2 = 1.0 / std::sqrt(static_cast<double>(hidden_));
    for (auto& w : w1_) {
      w = rng.normal() * scale1;
    }
    for (auto& b : b1_) {
      b = 0.1 * rng.normal();
    }
    for (auto& w : w2_) {
      w = rng.normal() * scale2;
    }
    balance_classes(spec);
  }

  /// Teacher logits of one input, without the output bias.
  void raw_logits(std::span<const double> x, std::span<double> logits) const {
    std::vector<double> h(static_cast<std::size_t>(hidden_));
    dense(w1_, b1_, x, h);
    for (auto& v : h) {
      v = std::max(v, 0.0);
    }
    const std::vector<double> zero(logits.size(), 0.0);
    dense(w2_, zero, h, logits);
  }

  /// Number of classes.
  std::size_t classes() const { return b2_.size(); }

  /// Argmax of the logits with the calibrated output bias.
  std::int32_t label(std::span<const double> raw) const {
    std::size_t best = 0;
    for (std::size_t k = 1; k < raw.size(); ++k) {
      if (raw[k] + b2_[k] > raw[best] + b2_[best]) {
        best = k;
      }
    }
    return static_cast<std::int32_t>(best);
  }

 private:
  static constexpr std::uint64_t kTeacherStream = 0x7EAC4E5;
  static constexpr std::uint64_t kCalibrationStream = 0xCA11B;

  /// A random teacher's argmax favours some classes; shifting the output bias by the log of each class's
  /// over-representation on a calibration sample evens them out.
  void balance_classes(const SyntheticSpec& spec) {
    constexpr int kSamples = 4096;
    constexpr int kRounds = 200;
    const auto classes = static_cast<std::size_t>(spec.classes);
    Rng rng(derive_seed(spec.seed, {kCalibrationStream}));
    std::vector<double> raw(kSamples * classes);
    std::vector<double> x(static_cast<std::size_t>(inputs_));
    for (std::size_t s = 0; s < kSamples; ++s) {
      for (auto& v : x) {
        v = rng.normal();
      }
      raw_logits(x, std::span(raw).subspan(s * classes, classes));
    }
    // Steps shrink with the round and are capped, so that the argmax counts settle instead of oscillating
    // between classes; their scale follows the spread of the logits.
    double sum = 0.0;
    double sum_sq = 0.0;
    for (double v : raw) {
      sum += v;
      sum_sq += v * v;
    }
    const double mean = sum / static_cast<double>(raw.size());
    const double spread = std::sqrt(std::max(sum_sq / static_cast<double>(raw.size()) - mean * mean, 1e-12));
    const double uniform_share = static_cast<double>(kSamples) / static_cast<double>(classes);
    for (int round = 0; round < kRounds; ++round) {
      std::vector<double> counts(classes, 0.0);
      for (std::size_t s = 0; s < kSamples; ++s) {
        counts[static_cast<std::size_t>(label(std::span(raw).subspan(s * classes, classes)))] += 1.0;
      }
      const double step = 0.5 * spread / std::sqrt(1.0 + round);
      for (std::size_t k = 0; k < classes; ++k) {
        const double excess = std::log((counts[k] + 1.0) / (uniform_share + 1.0));
        b2_[k] -= step * std::clamp(excess, -1.0, 1.0);
      }
    }
  }

  std::int64_t inputs_;
  std::int64_t hidden_;
  std::vector<double> w1_;
  std::vector<double> b1_;
  std::vector<double> w2_;
  std::vector<double> b2_;
};

Dataset read_fashion_mnist(Split split, const std::filesystem::path& dir) {
  const std::string prefix = split == Split::train ? "train" : "t10k";
  const auto images_path = find_idx_file(dir, prefix + "-images-idx3-ubyte");
  const auto labels_path = find_idx_file(dir, prefix + "-labels-idx1-ubyte");
  Dataset data;
  read_idx_images(images_path, data);
  data.labels = read_idx_labels(labels_path, data.size);
  return data;
}

Dataset read_cifar10(Split split, const std::filesystem::path& dir) {
  const auto base = cifar_dir(dir);
  std::array<std::array<float, 256>, 3> tables{};
  for (std::size_t c = 0; c < tables.size(); ++c) {
    tables[c] = normalisation_table(kCifar10Mean[c], kCifar10Std[c]);
  }
  Dataset data;
  data.black = {tables[0][0], tables[1][0], tables[2][0]};
  data.channels = 3;
  data.height = static_cast<int>(kCifarSide);
  data.width = static_cast<int>(kCifarSide);
  data.classes = kCifarClasses;
  if (split == Split::train) {
    for (int batch = 1; batch <= 5; ++batch) {
      append_cifar_file(base / fmt::format("data_batch_{}.bin", batch), data, tables);
    }
  } else {
    append_cifar_file(base / "test_batch.bin", data, tables);
  }
  return data;
}

void write_cifar10_batch(const std::filesystem::path& file, std::span<const std::uint8_t> pixels,
                         std::span<const std::int32_t> labels) {
  if (pixels.size() != labels.size() * static_cast<std::size_t>(kCifarPixels)) {
    throw DataError(
        fmt::format("write_cifar10_batch({}): {} pixel bytes for {} labels; expected {} (3x32x32 "
                    "per label)",
                    file.string(), pixels.size(), labels.size(), labels.size() * kCifarPixels));
  }
  std::vector<std::uint8_t> bytes;
  bytes.reserve(labels.size() * static_cast<std::size_t>(kCifarRecord));
  for (std::size_t i = 0; i < labels.size(); ++i) {
    if (labels[i] < 0 || labels[i] >= kCifarClasses) {
      throw DataError(fmt::format("write_cifar10_batch({}): label {} at index {} is outside 0..{}",
                                  file.string(), labels[i], i, kCifarClasses - 1));
    }
    bytes.push_back(static_cast<std::uint8_t>(labels[i]));
    const auto image = pixels.subspan(i * static_cast<std::size_t>(kCifarPixels), kCifarPixels);
    bytes.insert(bytes.end(), image.begin(), image.end());
  }
  std::FILE* out = std::fopen(file.c_str(), "wb");
  if (out == nullptr) {
    throw DataError(
        fmt::format("cannot create {}: check that its directory exists and is writable", file.string()));
  }
  const std::size_t written = std::fwrite(bytes.data(), 1, bytes.size(), out);
  const bool closed = std::fclose(out) == 0;
  if (written != bytes.size() || !closed) {
    throw DataError(fmt::format("writing {} failed after {} of {} bytes (disk full?)", file.string(), written,
                                bytes.size()));
  }
}

SyntheticTask::SyntheticTask(const SyntheticSpec& spec, Split split) {
  if (spec.channels < 1 || spec.height < 1 || spec.width < 1 || spec.classes < 2 || spec.teacher_hidden < 1) {
    throw DataError(
        fmt::format("synthetic data set: need positive input dimensions ({}x{}x{}), at least 2 classes ({}) "
                    "and a positive teacher width ({})",
                    spec.channels, spec.height, spec.width, spec.classes, spec.teacher_hidden));
  }
  inputs_ = std::int64_t{spec.channels} * spec.height * spec.width;
  // Train and test inputs come from different streams; the teacher is shared.
  stream_ = derive_seed(spec.seed, {split == Split::train ? 1U : 2U});
  teacher_ = std::make_unique<const Teacher>(spec, inputs_);
}

SyntheticTask::~SyntheticTask() = default;

void SyntheticTask::write(std::int64_t index, float* out) const {
  // Every batch writes its samples again, so this is on the training loop's path: Marsaglia's polar method
  // draws a pair of normals with one logarithm and no sine or cosine (about twice as fast as Rng::normal's
  // Box-Muller), from uniforms in (-1, 1) accepted inside the unit disc (pi / 4 of them).
  Rng rng(derive_seed(stream_, {static_cast<std::uint64_t>(index)}));
  for (std::int64_t i = 0; i < inputs_;) {
    const double u = 2.0 * rng.uniform() - 1.0;
    const double v = 2.0 * rng.uniform() - 1.0;
    const double r2 = u * u + v * v;
    if (r2 >= 1.0 || r2 == 0.0) {
      continue;
    }
    const double scale = std::sqrt(-2.0 * std::log(r2) / r2);
    out[i++] = static_cast<float>(u * scale);
    if (i < inputs_) {
      out[i++] = static_cast<float>(v * scale);
    }
  }
}

std::int32_t SyntheticTask::label(const float* x) const {
  // The teacher sees exactly the float inputs a model trains on, in double.
  const std::vector<double> inputs(x, x + inputs_);
  std::vector<double> logits(teacher_->classes());
  teacher_->raw_logits(inputs, logits);
  return teacher_->label(logits);
}

void Dataset::write_sample(std::int64_t i, float* out) const {
  if (generator != nullptr) {
    generator->write(i, out);
    return;
  }
  const auto pixels = image(i);
  std::copy(pixels.begin(), pixels.end(), out);
}

Dataset make_synthetic(const SyntheticSpec& spec, Split split) {
  const std::int64_t size = split == Split::train ? spec.train_size : spec.test_size;
  if (size < 0) {
    throw DataError(fmt::format("synthetic data set: the {} split's size must not be negative, got {}",
                                split == Split::train ? "train" : "test", size));
  }
  Dataset data;
  data.size = size;
  data.channels = spec.channels;
  data.height = spec.height;
  data.width = spec.width;
  data.classes = spec.classes;
  auto task = std::make_shared<const SyntheticTask>(spec, split);
  // Labelling runs the teacher once over every sample; the inputs are written again whenever a batch
  // gathers them.
  data.labels.resize(static_cast<std::size_t>(size));
  std::vector<float> x(static_cast<std::size_t>(task->inputs()));
  for (std::int64_t s = 0; s < size; ++s) {
    task->write(s, x.data());
    data.labels[static_cast<std::size_t>(s)] = task->label(x.data());
  }
  data.generator = std::move(task);
  return data;
}

void gather(const Dataset& data, std::span<const std::int64_t> indices, std::vector<float>& images,
            std::vector<std::int32_t>& labels) {
  const auto per_sample = static_cast<std::size_t>(data.sample_elements());
  images.resize(indices.size() * per_sample);
  labels.resize(indices.size());
  for (std::size_t i = 0; i < indices.size(); ++i) {
    const std::int64_t index = indices[i];
    if (index < 0 || index >= data.size) {
      throw DataError(fmt::format("sample index {} is outside the data set's 0..{}", index, data.size - 1));
    }
    data.write_sample(index, images.data() + i * per_sample);
    labels[i] = data.labels[static_cast<std::size_t>(index)];
  }
}

}  // namespace dbench::models
