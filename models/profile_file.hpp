// Model profiles from files: a user's own model, timed wherever a built-in name works
// (`platform.timing_model = "path/to/profile.toml"`). The format is documented in the README ("Your own
// model") and written back by profile_file_text.
#pragma once

#include <filesystem>
#include <string>

#include "models/model_profile.hpp"

namespace dbench::models {

/// Whether a key that takes a built-in name or a file (platform.timing_model, platform.preset) names a
/// file: the value ends in .toml or .json.
bool names_file(std::string_view value);

/// Reads a profile file (TOML, or JSON when the name ends in .json). Throws ModelError naming the file and
/// the field for a missing or unknown field, a wrong type, a zero, negative or non-finite size or FLOP count,
/// forward FLOPs per sample outside [1, 1e18] or a backward/forward ratio outside [0.01, 100], a tensor or a
/// model of more than 2^48 elements, a duplicate tensor name, an unknown data type, or a file that cannot be
/// read (not a regular file, over 16 MiB) or parsed.
ModelProfile read_profile_file(const std::filesystem::path& path);

/// The profile as a TOML profile file; read_profile_file gives the same profile back.
std::string profile_file_text(const ModelProfile& profile);

}  // namespace dbench::models
