#include "sim/simgrid_options.hpp"

#include <fmt/core.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <utility>
#include <vector>

namespace dbench::sim {
namespace {

/// How an item's value is checked: one of `choices`, a yes/no, or a number in [min, max] (an integer where
/// `integer`).
struct Item {
  std::string_view name;
  std::vector<std::string_view> choices;
  bool boolean = false;
  bool integer = false;
  double min = 0.0;
  double max = 0.0;
  std::string_view unit;
};

Item choice(std::string_view name, std::vector<std::string_view> choices) {
  return {name, std::move(choices), false, false, 0.0, 0.0, ""};
}

Item yes_no(std::string_view name) {
  return {name, {}, true, false, 0.0, 0.0, ""};
}

Item number(std::string_view name, double min, double max, std::string_view unit, bool integer = false) {
  return {name, {}, false, integer, min, max, unit};
}

// The network and solver items that change a timing, and the actors' stack. Left out: host, CPU and disk
// models (no computation is simulated), parallel contexts (crash beyond ~200 actors in SimGrid 3.32),
// selective update (SimGrid aborts when it is off under the lazy solver) and everything of the model checker
// and SMPI.
const std::vector<Item>& items() {
  static const std::vector<Item> kItems = {
      // Constant has no links, and SimGrid aborts on a platform that has them.
      choice("network/model", {"CM02", "LV08", "SMPI"}),
      choice("network/optim", {"Lazy", "Full"}),
      yes_no("network/crosstraffic"),
      number("network/TCP-gamma", 0.0, 1e12, "bytes"),
      number("network/latency-factor", 1e-6, 1e6, ""),
      number("network/bandwidth-factor", 1e-6, 1e6, ""),
      number("network/weight-S", 0.0, 1e12, ""),
      number("surf/precision", 1e-15, 1.0, "s"),
      number("maxmin/precision", 1e-15, 1e-1, ""),
      // Below 64 KiB an actor overruns its stack (1 KiB crashes); above 1 GiB a thousand actors cannot fit.
      number("contexts/stack-size", 64, 1 << 20, "KiB", true),
      number("contexts/guard-size", 0, 64, "pages", true),
      choice("contexts/factory", {"thread", "raw", "ucontext"}),
  };
  return kItems;
}

const std::array<std::string_view, 7> kLevels = {"trace",   "debug", "verbose", "info",
                                                 "warning", "error", "critical"};
const std::array<std::string_view, 8> kBooleans = {"yes", "no", "on", "off", "true", "false", "1", "0"};

std::vector<std::string_view> item_names() {
  std::vector<std::string_view> names;
  for (const auto& item : items()) {
    names.push_back(item.name);
  }
  return names;
}

std::string check_value(const Item& item, std::string_view value) {
  if (!item.choices.empty()) {
    return std::find(item.choices.begin(), item.choices.end(), value) != item.choices.end()
               ? ""
               : fmt::format("{} must be one of {}, got '{}'", item.name, fmt::join(item.choices, ", "),
                             value);
  }
  if (item.boolean) {
    return std::find(kBooleans.begin(), kBooleans.end(), value) != kBooleans.end()
               ? ""
               : fmt::format("{} must be yes or no (1 or 0), got '{}'", item.name, value);
  }
  double number = 0.0;
  const auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), number);
  const bool parsed = error == std::errc() && end == value.data() + value.size() && std::isfinite(number);
  const std::string range =
      fmt::format("[{}, {}]{}{}", item.min, item.max, item.unit.empty() ? "" : " ", item.unit);
  if (!parsed || (item.integer && number != std::floor(number))) {
    return fmt::format("{} must be {} in {}, got '{}'", item.name, item.integer ? "an integer" : "a number",
                       range, value);
  }
  if (number < item.min || number > item.max) {
    return fmt::format("{} must be in {}, got '{}'", item.name, range, value);
  }
  return "";
}

}  // namespace

std::span<const std::string_view> known_simgrid_items() noexcept {
  static const std::vector<std::string_view> kNames = item_names();
  return kNames;
}

std::string check_simgrid_cfg(std::string_view setting) {
  const auto colon = setting.find(':');
  if (colon == std::string_view::npos || colon == 0 || colon + 1 == setting.size()) {
    return fmt::format("expected ITEM:VALUE (e.g. network/model:LV08), got '{}'", setting);
  }
  const std::string_view name = setting.substr(0, colon);
  const auto& all = items();
  const auto item = std::find_if(all.begin(), all.end(), [&](const Item& i) { return i.name == name; });
  if (item == all.end()) {
    return fmt::format("'{}' is not a SimGrid setting DBench passes on (known: {})", name,
                       fmt::join(known_simgrid_items(), ", "));
  }
  return check_value(*item, setting.substr(colon + 1));
}

std::string check_simgrid_log(std::string_view setting) {
  const auto colon = setting.find(':');
  const auto dot = setting.rfind('.', colon);
  const std::string expected =
      fmt::format("expected CATEGORY.thres:LEVEL (e.g. root.thres:info), got '{}'", setting);
  if (colon == std::string_view::npos || dot == std::string_view::npos || dot == 0) {
    return expected;
  }
  const std::string_view category = setting.substr(0, dot);
  const std::string_view what = setting.substr(dot + 1, colon - dot - 1);
  const std::string_view level = setting.substr(colon + 1);
  const bool name_ok = std::all_of(category.begin(), category.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
  });
  if (!name_ok) {
    return expected;
  }
  if (what != "thres" && what != "threshold") {
    return fmt::format("only thresholds can be set (CATEGORY.thres:LEVEL), got '{}'", setting);
  }
  if (std::find(kLevels.begin(), kLevels.end(), level) == kLevels.end()) {
    return fmt::format("the level must be one of {}, got '{}'", fmt::join(kLevels, ", "), level);
  }
  return "";
}

}  // namespace dbench::sim
