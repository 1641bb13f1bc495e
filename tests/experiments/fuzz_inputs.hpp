// The fuzz's generators (test_fuzz.cpp): what it feeds every command's options and every kind of file
// DBench reads.
#pragma once

#include <filesystem>
#include <random>
#include <string>
#include <vector>

namespace dbench::testing::fuzz {

/// Values a hostile user might give anything: numbers at and past every limit, non-numbers, shell and
/// format syntax, control characters, very long text, and paths to things that are not regular files.
const std::vector<std::string>& hostile_values();

/// A fixture every case's folder starts with: a FIFO, a file, a folder, links (one dangling, one to a
/// folder inside the case) and small configs the hostile paths name.
void make_case_folder(const std::filesystem::path& dir);

/// The options of one command, read off its --help: name and whether it takes a value; positionals first.
struct Option {
  std::string name;  ///< "--out", or "" for a positional
  bool value = false;
};

/// The options listed in a command's --help text.
std::vector<Option> options_of(const std::string& help);

/// A small config every generated file starts from: two workers, a tiny MLP, a few iterations.
extern const char* const kBaseConfig;
/// A timing-only sweep over kBaseConfig.
extern const char* const kBaseSweep;
/// A calibration file of a small custom platform.
extern const char* const kBaseCalibration;

/// Text mutated the way damaged or hostile files are: a value replaced, a line dropped, doubled or
/// moved into another section, bytes flipped, the file cut short, a key added.
std::string mutate(std::string text, std::mt19937_64& rng);

/// Binary damage: bytes flipped, a length field made huge, the file cut short or grown.
std::string damage(std::string bytes, std::mt19937_64& rng);

}  // namespace dbench::testing::fuzz
