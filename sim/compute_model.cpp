#include "sim/compute_model.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <numeric>

namespace dbench::sim {
namespace {

// SplitMix64's finaliser: a well-mixed 64-bit value from any input.
std::uint64_t mix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// A uniform draw in (0, 1) from the 53 high bits.
double unit(std::uint64_t bits) {
  return (static_cast<double>(bits >> 11) + 0.5) * 0x1.0p-53;
}

}  // namespace

ComputeModel::ComputeModel(const PlatformSpec& platform, int gpus, std::uint64_t seed)
    : gpus_(gpus),
      seed_(seed),
      slowdown_(gpus > 1 ? platform.multi_gpu_slowdown : 1.0),
      sigma_(std::sqrt(std::log1p(platform.compute_jitter_cv * platform.compute_jitter_cv))),
      tail_probability_(platform.compute_tail_probability),
      tail_factor_(platform.compute_tail_factor),
      straggler_factor_(platform.straggler_factor),
      is_straggler_(static_cast<std::size_t>(std::max(gpus, 0)), 0) {
  // A seeded partial Fisher-Yates shuffle picks the stragglers.
  const int k = std::clamp(platform.stragglers, 0, gpus);
  std::vector<int> order(static_cast<std::size_t>(std::max(gpus, 0)));
  std::iota(order.begin(), order.end(), 0);
  for (int i = 0; i < k; ++i) {
    const auto span = static_cast<std::uint64_t>(gpus - i);
    const auto pick =
        i + static_cast<int>(mix64(seed ^ mix64(0x5354524147ULL + static_cast<std::uint64_t>(i))) % span);
    std::swap(order[static_cast<std::size_t>(i)], order[static_cast<std::size_t>(pick)]);
    stragglers_.push_back(order[static_cast<std::size_t>(i)]);
    is_straggler_[static_cast<std::size_t>(order[static_cast<std::size_t>(i)])] = 1;
  }
  std::sort(stragglers_.begin(), stragglers_.end());
  const bool no_tail = tail_probability_ <= 0.0 || tail_factor_ == 1.0;
  const bool no_stragglers = k == 0 || straggler_factor_ == 1.0;
  uniform_ = sigma_ == 0.0 && no_tail && no_stragglers;
}

void ComputeModel::factors(std::int64_t iteration, std::span<double> factors) const {
  const double mu = -0.5 * sigma_ * sigma_;  // E[exp(N(mu, sigma^2))] = 1
  const std::uint64_t base = mix64(seed_ ^ mix64(static_cast<std::uint64_t>(iteration)));
  for (int g = 0; g < gpus_; ++g) {
    double f = slowdown_;
    const std::uint64_t stream = mix64(base + static_cast<std::uint64_t>(g));
    if (sigma_ > 0.0) {
      // Box-Muller from two independent uniforms.
      const double u1 = unit(stream);
      const double u2 = unit(mix64(stream ^ 0x4a49545445ULL));
      const double normal = std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
      f *= std::exp(mu + sigma_ * normal);
    }
    if (tail_probability_ > 0.0 && unit(mix64(stream ^ 0x5441494cULL)) < tail_probability_) {
      f *= tail_factor_;
    }
    if (is_straggler_[static_cast<std::size_t>(g)] != 0) {
      f *= straggler_factor_;
    }
    factors[static_cast<std::size_t>(g)] = f;
  }
}

}  // namespace dbench::sim
