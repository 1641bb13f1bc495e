// Model profile files: what `platform.timing_model = "FILE"` reads, written back exactly, and every bad field
// refused by name.
#include <doctest/doctest.h>

#include <filesystem>
#include <string>

#include "models/errors.hpp"
#include "models/model_profile.hpp"
#include "models/profile_file.hpp"
#include "support/files.hpp"
#include "support/temp_dir.hpp"

namespace models = dbench::models;
namespace fs = std::filesystem;
using namespace dbench::testing;

namespace {

constexpr const char* kTwoTensors = R"(name = "tiny"
forward_flops_per_sample = 1000.0
[[tensors]]
name = "fc.bias"
shape = [10]
[[tensors]]
name = "fc.weight"
shape = [10, 20]
)";

/// The message read_profile_file throws for `text` written to a file named `name`; empty if none.
std::string error_of(const TempDir& temp, const std::string& text, const std::string& name = "p.toml") {
  const fs::path path = temp.path() / name;
  write_file(path, text);
  try {
    models::read_profile_file(path);
  } catch (const models::ModelError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("models::profile_file: a built-in profile written to a file reads back the same") {
  const TempDir temp;
  for (const std::string name : {"mlp", "lenet", "resnet20", "resnet50"}) {
    CAPTURE(name);
    const models::ModelProfile built = models::model_profile(models::timing_spec(name));
    const fs::path path = temp.path() / (name + ".toml");
    write_file(path, models::profile_file_text(built));
    const models::ModelProfile read = models::read_profile_file(path);
    CHECK(read.name == built.name);
    CHECK(read.forward_flops_per_sample == built.forward_flops_per_sample);
    CHECK(read.backward_flops_per_sample == built.backward_flops_per_sample);
    CHECK(read.parameter_count() == built.parameter_count());
    CHECK(read.parameter_bytes() == built.parameter_bytes());
    REQUIRE(read.tensors.size() == built.tensors.size());
    for (std::size_t i = 0; i < built.tensors.size(); ++i) {
      CHECK(read.tensors[i].name == built.tensors[i].name);
      CHECK(read.tensors[i].shape == built.tensors[i].shape);
      CHECK(read.tensors[i].elements == built.tensors[i].elements);
    }
  }
}

TEST_CASE("models::profile_file: tensors come last layer first; 16-bit tensors move half the bytes") {
  const TempDir temp;
  const fs::path path = temp.path() / "tiny.toml";
  write_file(path, kTwoTensors);
  models::ModelProfile p = models::read_profile_file(path);
  REQUIRE(p.tensors.size() == 2);
  CHECK(p.tensors[0].name == "fc.weight");  // named_parameters() order: the file's reversed
  CHECK(p.tensors[1].name == "fc.bias");
  CHECK(p.parameter_count() == 210);
  CHECK(p.parameter_bytes() == 840);
  CHECK(p.backward_flops_per_sample == 2000.0);  // backward_forward_ratio defaults to 2
  CHECK(p.compute_precision == models::Precision::fp32);

  write_file(path, std::string(kTwoTensors) + "precision = \"bf16\"\n");  // on the last tensor, fc.weight
  p = models::read_profile_file(path);
  CHECK(p.tensors[0].precision == models::Precision::bf16);
  CHECK(p.parameter_bytes() == 200 * 2 + 10 * 4);

  write_file(path, R"({"name": "j", "forward_flops_per_sample": 5, "backward_forward_ratio": 3,
    "compute_precision": "fp16", "tensors": [{"name": "w", "elements": 7, "precision": "fp16"}]})");
  const fs::path json = temp.path() / "tiny.json";
  fs::rename(path, json);
  p = models::read_profile_file(json);
  CHECK(p.backward_flops_per_sample == 15.0);
  CHECK(p.compute_precision == models::Precision::fp16);
  CHECK(p.parameter_bytes() == 14);
}

TEST_CASE("models::profile_file: bad profiles are refused naming the field") {
  const TempDir temp;
  const std::string tensor = "[[tensors]]\nname = \"w\"\nshape = [4]\n";
  const std::string flops = "forward_flops_per_sample = 10.0\n";
  struct Case {
    std::string text;
    std::string expected;  // in the message
  };
  const Case cases[] = {
      {flops + tensor, "name: missing"},
      {"name = \"m\"\n" + tensor, "forward_flops_per_sample: missing"},
      {"name = \"m\"\nforward_flops_per_sample = 0.0\n" + tensor,
       "forward_flops_per_sample: must be finite and > 0"},
      {"name = \"m\"\nforward_flops_per_sample = -3.0\n" + tensor,
       "forward_flops_per_sample: must be finite"},
      {"name = \"m\"\nforward_flops_per_sample = inf\n" + tensor, "forward_flops_per_sample: must be finite"},
      {"name = \"m\"\nforward_flops_per_sample = nan\n" + tensor, "forward_flops_per_sample: must be finite"},
      {"name = \"m\"\nforward_flops_per_sample = \"many\"\n" + tensor,
       "forward_flops_per_sample: expected a number"},
      {"name = \"m\"\n" + flops + "backward_forward_ratio = 0.0\n" + tensor,
       "backward_forward_ratio: must be"},
      {"name = \"m\"\n" + flops, "tensors: missing"},
      {"name = \"m\"\n" + flops + "tensors = []\n", "tensors: expected a non-empty list"},
      {"name = \"m\"\n" + flops + "[[tensors]]\nname = \"w\"\nshape = [4, 0]\n",
       "tensors[0]: shape[1]: expected an integer > 0"},
      {"name = \"m\"\n" + flops + "[[tensors]]\nname = \"w\"\nelements = -5\n",
       "tensors[0]: elements: expected an integer > 0"},
      {"name = \"m\"\n" + flops + "[[tensors]]\nname = \"w\"\n", "tensors[0]: shape: missing"},
      {"name = \"m\"\n" + flops + "[[tensors]]\nname = \"w\"\nshape = [2, 3]\nelements = 5\n",
       "tensors[0]: elements: 5 disagrees with the shape's 6"},
      {"name = \"m\"\n" + flops + "[[tensors]]\nshape = [2]\n", "tensors[0]: name: missing"},
      {"name = \"m\"\n" + flops + tensor + "precision = \"fp8\"\n",
       "tensors[0]: precision: expected one of fp32, bf16, fp16"},
      {"name = \"m\"\n" + flops + tensor + "dtype = \"fp16\"\n", "tensors[0]: dtype: unknown field"},
      {"name = \"m\"\nforward_flop_per_sample = 10.0\n" + tensor, "forward_flops_per_sample: missing"},
      {"name = \"m\"\n" + flops + "compute_precison = \"bf16\"\n" + tensor,
       "compute_precison: unknown field"},
      {"name = \"m\"\n" + flops + tensor + tensor, "tensors[0].name: \"w\" is listed twice"},
      {"name = \"m\"\n" + flops + "[[tensors]\n", "TOML syntax error"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.text);
    const std::string message = error_of(temp, c.text);
    CAPTURE(message);
    CHECK(message.find((temp.path() / "p.toml").string()) == 0);
    CHECK(message.find(c.expected) != std::string::npos);
  }
  CHECK(error_of(temp, "{\"name\": ", "p.json").find("JSON syntax error") != std::string::npos);
  try {
    models::read_profile_file(temp.path() / "absent.toml");
    FAIL("no error for a missing file");
  } catch (const models::ModelError& e) {
    CHECK(std::string(e.what()).find("absent.toml: cannot read profile file") != std::string::npos);
  }
}

TEST_CASE("models::profile_file: tensor sizes that overflow 64 bits are refused naming the tensor") {
  const TempDir temp;
  const std::string head = "name = \"m\"\nforward_flops_per_sample = 10.0\n";
  struct Case {
    std::string tensors;
    std::string expected;  // in the message, after the file's name
  };
  const Case cases[] = {
      // 2^96 elements: wraps to 0 in 64 bits.
      {"[[tensors]]\nname = \"w\"\nshape = [4294967296, 4294967296, 4294967296]\n",
       ": tensors[0]: shape: tensor \"w\" has more than the 2^48 elements a tensor may hold"},
      // 2^62 elements: 2^64 bytes in fp32, a negative byte count.
      {"[[tensors]]\nname = \"w\"\nelements = 4611686018427387904\n",
       ": tensors[0]: elements: tensor \"w\" has 4611686018427387904 elements, more than the 2^48"},
      {"[[tensors]]\nname = \"w\"\nshape = [2147483648, 2147483648]\n",
       ": tensors[0]: shape: tensor \"w\" has more than the 2^48"},
      // Each below the limit, together above it.
      {"[[tensors]]\nname = \"a\"\nelements = 200000000000000\n[[tensors]]\nname = \"b\"\nelements = "
       "200000000000000\n",
       ": tensors[0]: with tensor \"a\" the profile has more than the 2^48 elements"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.tensors);
    const std::string message = error_of(temp, head + c.tensors);
    CAPTURE(message);
    CHECK(message.find((temp.path() / "p.toml").string() + c.expected) == 0);
  }
  // The largest tensor allowed reads, with its bytes counted without wrapping.
  const fs::path path = temp.path() / "big.toml";
  write_file(path, head + "[[tensors]]\nname = \"w\"\nshape = [16777216, 16777216]\nprecision = \"fp32\"\n");
  const models::ModelProfile p = models::read_profile_file(path);
  CHECK(p.parameter_bytes() == std::int64_t{4} << 48);
}

TEST_CASE("models::profile_file: FLOP counts outside [1, 1e18] per sample are refused with the range") {
  const TempDir temp;
  const std::string tensor = "[[tensors]]\nname = \"w\"\nshape = [4]\n";
  CHECK(error_of(temp, "name = \"m\"\nforward_flops_per_sample = 1e300\n" + tensor)
            .ends_with(": forward_flops_per_sample: must be in [1, 1e+18], got 1e+300"));
  CHECK(error_of(temp, "name = \"m\"\nforward_flops_per_sample = 1e-300\n" + tensor)
            .ends_with(": forward_flops_per_sample: must be in [1, 1e+18], got 1e-300"));
  CHECK(
      error_of(temp, "name = \"m\"\nforward_flops_per_sample = 10.0\nbackward_forward_ratio = 1e9\n" + tensor)
          .ends_with(": backward_forward_ratio: must be in [0.01, 100], got 1e+09"));
}
