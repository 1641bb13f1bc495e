// The fuzz's generators: hostile values, the fixture of every case's folder, the options read off a
// command's --help, the base files and the ways they are damaged.
#include "experiments/fuzz_inputs.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <fstream>
#include <sstream>

namespace dbench::testing::fuzz {

namespace fs = std::filesystem;

const std::vector<std::string>& hostile_values() {
  static const std::vector<std::string> values = {"",
                                                  "0",
                                                  "1",
                                                  "2",
                                                  "3",
                                                  "-1",
                                                  "-0",
                                                  "nan",
                                                  "inf",
                                                  "-inf",
                                                  "1e308",
                                                  "-1e308",
                                                  "1e-300",
                                                  "4294967296",
                                                  "2147483648",
                                                  "9223372036854775807",
                                                  "18446744073709551616",
                                                  "1e19",
                                                  "0x10",
                                                  "1.5x",
                                                  "abc",
                                                  " ",
                                                  "\n",
                                                  "\t1",
                                                  "$(touch pwned)",
                                                  "`touch pwned`",
                                                  "; touch pwned",
                                                  "a'b\"c",
                                                  "%s%n%x",
                                                  "{",
                                                  "[",
                                                  "=",
                                                  "a=b",
                                                  "train.workers=-5",
                                                  "train={workers=8}",
                                                  "train.nosuch=1",
                                                  "platform.preset=nosuch",
                                                  std::string(5000, 'a'),
                                                  "\xff\xfe",
                                                  "é",
                                                  "--",
                                                  "-",
                                                  ".",
                                                  "..",
                                                  "--help",
                                                  "fifo",
                                                  "file.txt",
                                                  "dir",
                                                  "dangling",
                                                  "dirlink",
                                                  "missing/deep/path",
                                                  "/dev/zero",
                                                  "/dev/null",
                                                  "/proc/self/status",
                                                  "file.toml",
                                                  "file.json",
                                                  "empty.toml",
                                                  "run",
                                                  "ring",
                                                  "exponential",
                                                  "centralized",
                                                  "ada",
                                                  "mlp",
                                                  "lenet",
                                                  "resnet50",
                                                  "frontier",
                                                  "dgx-h100",
                                                  "4",
                                                  "8",
                                                  "16",
                                                  "0.5",
                                                  "1/2",
                                                  "3/2",
                                                  "0/1",
                                                  "--cfg=network/model:nosuch",
                                                  "network/model:LV08",
                                                  "root.thres:info",
                                                  "contexts/stack-size:1",
                                                  "garbage",
                                                  "cpu",
                                                  "cuda",
                                                  "cuda:7"};
  return values;
}

void make_case_folder(const fs::path& dir) {
  fs::create_directories(dir / "dir");
  std::ofstream(dir / "file.txt") << "not a config\n";
  std::ofstream(dir / "file.toml") << "[train]\nworkers = 2\n";
  std::ofstream(dir / "file.json") << "{\"a\": 1}\n";
  std::ofstream(dir / "empty.toml");
  ::mkfifo((dir / "fifo").c_str(), 0644);
  fs::create_symlink(dir / "nowhere", dir / "dangling");
  fs::create_directory_symlink(dir / "dir", dir / "dirlink");
}

std::vector<Option> options_of(const std::string& help) {
  std::vector<Option> found;
  std::istringstream lines(help);
  bool positionals = false;
  for (std::string line; std::getline(lines, line);) {
    if (line.starts_with("Positionals:")) {
      positionals = true;
      continue;
    }
    if (line.starts_with("Options:")) {
      positionals = false;
      continue;
    }
    if (line.size() < 3 || line[0] != ' ' || line[1] != ' ' || line[2] == ' ') {
      continue;
    }
    std::istringstream words(line.substr(2));
    std::string name;
    std::string type;
    words >> name >> type;
    if (positionals) {
      found.push_back({"", true});
      continue;
    }
    if (const auto comma = name.rfind(','); comma != std::string::npos) {
      name = name.substr(comma + 1);
    }
    if (!name.starts_with("--") || name == "--help" || name == "--version") {
      continue;
    }
    const bool takes = !type.empty() && std::isupper(static_cast<unsigned char>(type[0])) != 0;
    found.push_back({name, takes});
  }
  return found;
}

const char* const kBaseConfig = R"(name = "fz"
seed = 1
[train]
workers = 2
batch_per_worker = 4
iterations = 3
eval_every = 3
eval_samples = 100
replica_eval_samples = 16
mlp_hidden = [8]
dataset = "synthetic"
synthetic_samples = 1000
lr = 0.1
[algorithm]
kind = "dpsgd"
graph = "ring"
[platform]
preset = "frontier"
timing_model = "mlp"
)";

const char* const kBaseSweep = R"(name = "fzs"
timing_only = true
[set]
"train.iterations" = 3
"train.model" = "mlp"
"platform.timing_model" = "mlp"
[grid]
algorithm = ["centralized", "ring"]
"train.workers" = [2, 4]
)";

const char* const kBaseCalibration = R"(base = "custom"
gpu_flops_per_s = 1e12
iteration_overhead_s = 1e-4
nic_bandwidth_Bps = 1e9
nic_latency_s = 1e-6
intra_node_bandwidth_Bps = 1e10
intra_node_latency_s = 1e-6
gpus_per_node = 2
)";

std::string mutate(std::string text, std::mt19937_64& rng) {
  const auto pick = [&](std::size_t n) {
    return static_cast<std::size_t>(rng() % std::max<std::size_t>(n, 1));
  };
  const auto& values = hostile_values();
  const int rounds = 1 + static_cast<int>(rng() % 3);
  for (int r = 0; r < rounds; ++r) {
    std::vector<std::string> lines;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) {
      lines.push_back(line);
    }
    if (lines.empty()) {
      lines.emplace_back();
    }
    const std::size_t at = pick(lines.size());
    const std::string& value = values[pick(values.size())];
    switch (rng() % 9) {
      case 0:
      case 1: {  // a value replaced, raw
        const auto eq = lines[at].find('=');
        if (eq != std::string::npos) {
          lines[at] = lines[at].substr(0, eq + 1) + " " + value;
        }
        break;
      }
      case 2: {  // a value replaced, as a string or a list
        const auto eq = lines[at].find('=');
        if (eq != std::string::npos) {
          lines[at] =
              lines[at].substr(0, eq + 1) + (rng() % 2 == 0 ? " \"" + value + "\"" : " [" + value + "]");
        }
        break;
      }
      case 3:
        lines.erase(lines.begin() + static_cast<std::ptrdiff_t>(at));
        break;
      case 4:
        lines.insert(lines.begin() + static_cast<std::ptrdiff_t>(at), lines[at]);
        break;
      case 5:
        lines.insert(lines.begin() + static_cast<std::ptrdiff_t>(at),
                     rng() % 2 == 0 ? "[" + value + "]" : "nosuch_" + std::to_string(rng() % 100) + " = 1");
        break;
      default:
        break;
    }
    text.clear();
    for (const auto& line : lines) {
      text += line + "\n";
    }
    if (rng() % 4 == 0 && !text.empty()) {  // bytes flipped
      for (int k = 0; k < 1 + static_cast<int>(rng() % 4); ++k) {
        text[pick(text.size())] = static_cast<char>(rng() % 256);
      }
    }
    if (rng() % 6 == 0) {  // cut short
      text.resize(pick(text.size() + 1));
    }
  }
  return text;
}

std::string damage(std::string bytes, std::mt19937_64& rng) {
  const auto pick = [&](std::size_t n) {
    return static_cast<std::size_t>(rng() % std::max<std::size_t>(n, 1));
  };
  switch (rng() % 5) {
    case 0:
      bytes.resize(pick(bytes.size()));
      break;
    case 1:
      for (int k = 0; k < 1 + static_cast<int>(rng() % 8); ++k) {
        bytes[pick(bytes.size())] = static_cast<char>(rng() % 256);
      }
      break;
    case 2: {  // eight bytes of 0xff or a large count somewhere: a length read from the file
      const std::size_t at = pick(bytes.size() > 8 ? bytes.size() - 8 : 1);
      const std::uint64_t big = rng() % 2 == 0 ? ~std::uint64_t{0} : (std::uint64_t{1} << (20 + rng() % 40));
      for (std::size_t k = 0; k < 8 && at + k < bytes.size(); ++k) {
        bytes[at + k] = static_cast<char>((big >> (8 * k)) & 0xff);
      }
      break;
    }
    case 3:
      bytes += std::string(pick(4096), static_cast<char>(rng() % 256));
      break;
    default:
      bytes.insert(pick(bytes.size()), std::string(1 + pick(16), '\0'));
      break;
  }
  return bytes;
}

}  // namespace dbench::testing::fuzz
