// An ImageNet-style folder of JPEG images, one sub-folder per class, decoded with libjpeg into a Dataset.
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>

#include "models/dataset.hpp"

namespace dbench::runtime {

/// How images of a folder become samples.
struct ImageFolderSpec {
  /// Samples are resized to height x width (bilinear), 3 channels (grayscale JPEGs are replicated).
  int height = 32;
  /// See height.
  int width = 32;
};

/// ImageNet's per-channel (R, G, B) mean of pixels scaled to [0, 1].
inline constexpr float kImageNetMean[3] = {0.485f, 0.456f, 0.406f};
/// ImageNet's per-channel (R, G, B) standard deviation of pixels scaled to [0, 1].
inline constexpr float kImageNetStd[3] = {0.229f, 0.224f, 0.225f};

/// Reads `dir`/train (Split::train) or `dir`/val (Split::test), or `dir` itself when it has no such
/// sub-folder: every sub-folder is a class, labelled by its name's rank in sorted order among the train
/// split's classes (so both splits agree), and every *.jpg / *.jpeg file in it (sorted by name) a sample,
/// normalised with ImageNet's mean and std. Throws models::DataError naming the folder or file at fault.
models::Dataset read_image_folder(models::Split split, const std::filesystem::path& dir,
                                  const ImageFolderSpec& spec = {});

/// Writes height x width RGB pixels (row-major, interleaved R, G, B bytes) as a baseline JPEG of `quality`
/// (1-100). Throws models::DataError when the file cannot be written.
void write_jpeg(const std::filesystem::path& file, std::span<const std::uint8_t> rgb, int height, int width,
                int quality = 90);

}  // namespace dbench::runtime
