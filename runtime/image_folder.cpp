#include "runtime/image_folder.hpp"

#include <fmt/core.h>

// libjpeg's header needs FILE and size_t declared first.
#include <jpeglib.h>

#include <algorithm>
#include <csetjmp>
#include <cstddef>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "models/errors.hpp"

namespace dbench::runtime {
namespace {

namespace fs = std::filesystem;

/// libjpeg reports errors through a callback that must not return: it jumps back to the decoder's call site
/// (no C++ objects with destructors live between the two).
struct ErrorManager {
  jpeg_error_mgr base;
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];

  /// libjpeg's standard manager whose fatal errors jump to `jump` with `message` set: a (de)compressor's
  /// `err`. The caller sets `jump` with setjmp before its first libjpeg call.
  jpeg_error_mgr* reporting();
};

void on_error(j_common_ptr info) {
  auto* manager = reinterpret_cast<ErrorManager*>(info->err);
  (*info->err->format_message)(info, manager->message);
  std::longjmp(manager->jump, 1);
}

jpeg_error_mgr* ErrorManager::reporting() {
  jpeg_std_error(&base);
  base.error_exit = on_error;
  return &base;
}

struct FileCloser {
  void operator()(std::FILE* f) const { std::fclose(f); }
};
using File = std::unique_ptr<std::FILE, FileCloser>;

/// Decodes one JPEG to interleaved RGB bytes; returns false with `error` set on a broken file.
bool decode(std::FILE* file, std::vector<std::uint8_t>& rgb, int& height, int& width, std::string& error) {
  jpeg_decompress_struct info;
  ErrorManager errors;
  info.err = errors.reporting();
  if (setjmp(errors.jump) != 0) {
    jpeg_destroy_decompress(&info);
    error = errors.message;
    return false;
  }
  jpeg_create_decompress(&info);
  jpeg_stdio_src(&info, file);
  jpeg_read_header(&info, TRUE);
  info.out_color_space = JCS_RGB;  // grayscale and YCbCr alike come out as RGB
  jpeg_start_decompress(&info);
  height = static_cast<int>(info.output_height);
  width = static_cast<int>(info.output_width);
  rgb.resize(static_cast<std::size_t>(height) * static_cast<std::size_t>(width) * 3);
  while (info.output_scanline < info.output_height) {
    JSAMPROW row =
        rgb.data() + static_cast<std::size_t>(info.output_scanline) * static_cast<std::size_t>(width) * 3;
    jpeg_read_scanlines(&info, &row, 1);
  }
  jpeg_finish_decompress(&info);
  jpeg_destroy_decompress(&info);
  return true;
}

/// Bilinear resize of interleaved RGB into normalised CHW floats (pixel centres aligned, as PIL does).
void resize_normalise(const std::vector<std::uint8_t>& rgb, int h, int w, const ImageFolderSpec& spec,
                      float* out) {
  const auto plane = static_cast<std::size_t>(spec.height) * static_cast<std::size_t>(spec.width);
  const double sy = static_cast<double>(h) / spec.height;
  const double sx = static_cast<double>(w) / spec.width;
  for (int y = 0; y < spec.height; ++y) {
    const double fy = std::clamp((y + 0.5) * sy - 0.5, 0.0, static_cast<double>(h - 1));
    const int y0 = static_cast<int>(fy);
    const int y1 = std::min(y0 + 1, h - 1);
    const double wy = fy - y0;
    for (int x = 0; x < spec.width; ++x) {
      const double fx = std::clamp((x + 0.5) * sx - 0.5, 0.0, static_cast<double>(w - 1));
      const int x0 = static_cast<int>(fx);
      const int x1 = std::min(x0 + 1, w - 1);
      const double wx = fx - x0;
      for (int c = 0; c < 3; ++c) {
        auto at = [&](int yy, int xx) {
          return static_cast<double>(rgb[(static_cast<std::size_t>(yy) * static_cast<std::size_t>(w) +
                                          static_cast<std::size_t>(xx)) *
                                             3 +
                                         static_cast<std::size_t>(c)]);
        };
        const double v = (1 - wy) * ((1 - wx) * at(y0, x0) + wx * at(y0, x1)) +
                         wy * ((1 - wx) * at(y1, x0) + wx * at(y1, x1));
        out[static_cast<std::size_t>(c) * plane +
            static_cast<std::size_t>(y) * static_cast<std::size_t>(spec.width) +
            static_cast<std::size_t>(x)] =
            (static_cast<float>(v / 255.0) - kImageNetMean[c]) / kImageNetStd[c];
      }
    }
  }
}

std::vector<fs::path> sorted_entries(const fs::path& dir, bool directories) {
  std::vector<fs::path> out;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (directories ? entry.is_directory() : entry.is_regular_file()) {
      out.push_back(entry.path());
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

bool is_jpeg(const fs::path& file) {
  std::string ext = file.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return ext == ".jpg" || ext == ".jpeg";
}

}  // namespace

models::Dataset read_image_folder(models::Split split, const fs::path& dir, const ImageFolderSpec& spec) {
  if (spec.height < 1 || spec.width < 1) {
    throw models::DataError(fmt::format("image size must be positive, got {}x{}", spec.height, spec.width));
  }
  const bool has_splits = fs::is_directory(dir / "train");
  const fs::path class_root = has_splits ? dir / "train" : dir;
  const fs::path root = has_splits ? dir / (split == models::Split::train ? "train" : "val") : dir;
  if (!fs::is_directory(root)) {
    throw models::DataError(models::RunInput::data_dir,
                            fmt::format("{} is not a folder of class sub-folders", root.string()));
  }
  std::vector<std::string> classes;
  for (const auto& c : sorted_entries(class_root, true)) {
    classes.push_back(c.filename().string());
  }
  if (classes.empty()) {
    throw models::DataError(models::RunInput::data_dir,
                            fmt::format("{} has no class sub-folders", class_root.string()));
  }
  models::Dataset data;
  data.channels = 3;
  data.height = spec.height;
  data.width = spec.width;
  data.classes = static_cast<int>(classes.size());
  const auto sample = static_cast<std::size_t>(data.sample_elements());
  std::vector<std::uint8_t> rgb;
  for (const auto& class_dir : sorted_entries(root, true)) {
    const auto it = std::find(classes.begin(), classes.end(), class_dir.filename().string());
    if (it == classes.end()) {
      throw models::DataError(fmt::format("{}: class '{}' is not among the training classes",
                                          class_dir.string(), class_dir.filename().string()));
    }
    const auto label = static_cast<std::int32_t>(it - classes.begin());
    for (const auto& file : sorted_entries(class_dir, false)) {
      if (!is_jpeg(file)) {
        continue;
      }
      File f(std::fopen(file.c_str(), "rb"));
      if (!f) {
        throw models::DataError(fmt::format("{}: cannot open", file.string()));
      }
      int h = 0;
      int w = 0;
      std::string error;
      if (!decode(f.get(), rgb, h, w, error)) {
        throw models::DataError(fmt::format("{}: not a readable JPEG: {}", file.string(), error));
      }
      data.images.resize(data.images.size() + sample);
      resize_normalise(rgb, h, w, spec, data.images.data() + data.images.size() - sample);
      data.labels.push_back(label);
    }
  }
  data.size = static_cast<std::int64_t>(data.labels.size());
  if (data.size == 0) {
    throw models::DataError(models::RunInput::data_dir,
                            fmt::format("{} holds no .jpg images", root.string()));
  }
  return data;
}

void write_jpeg(const fs::path& file, std::span<const std::uint8_t> rgb, int height, int width, int quality) {
  if (rgb.size() != static_cast<std::size_t>(height) * static_cast<std::size_t>(width) * 3) {
    throw models::DataError(
        fmt::format("{}: {} bytes for a {}x{} RGB image", file.string(), rgb.size(), height, width));
  }
  File f(std::fopen(file.c_str(), "wb"));
  if (!f) {
    throw models::DataError(fmt::format("{}: cannot create", file.string()));
  }
  jpeg_compress_struct info;
  ErrorManager errors;
  info.err = errors.reporting();
  if (setjmp(errors.jump) != 0) {
    jpeg_destroy_compress(&info);
    throw models::DataError(fmt::format("{}: cannot encode: {}", file.string(), errors.message));
  }
  jpeg_create_compress(&info);
  jpeg_stdio_dest(&info, f.get());
  info.image_width = static_cast<JDIMENSION>(width);
  info.image_height = static_cast<JDIMENSION>(height);
  info.input_components = 3;
  info.in_color_space = JCS_RGB;
  jpeg_set_defaults(&info);
  jpeg_set_quality(&info, quality, TRUE);
  jpeg_start_compress(&info, TRUE);
  while (info.next_scanline < info.image_height) {
    auto* row = const_cast<JSAMPROW>(rgb.data() + static_cast<std::size_t>(info.next_scanline) *
                                                      static_cast<std::size_t>(width) * 3);
    jpeg_write_scanlines(&info, &row, 1);
  }
  jpeg_finish_compress(&info);
  jpeg_destroy_compress(&info);
}

}  // namespace dbench::runtime
