// Per-condition means over the seeds' models (seed_means.hpp).
#include "attnlab/lab/seed_means.hpp"

#include <fmt/format.h>

#include <cmath>

namespace attnlab {

void SeedMeans::set(const std::string& condition, std::int64_t seed, double value) {
  if (values_.count(condition) == 0) order_.push_back(condition);
  values_[condition][seed] = value;
}

void SeedMeans::raise(const std::string& condition, std::int64_t seed, double value) {
  if (values_.count(condition) == 0) order_.push_back(condition);
  auto& seeds = values_[condition];
  const auto it = seeds.find(seed);
  if (it == seeds.end()) seeds.emplace(seed, value);
  else if (std::isnan(value) || value > it->second) it->second = value;
}

std::vector<double> SeedMeans::values(const std::string& condition) const {
  std::vector<double> out;
  for (const auto& [seed, v] : values_.at(condition)) out.push_back(v);
  return out;
}

std::vector<ConditionInterval> SeedMeans::intervals(const std::string& what, const std::string& format) const {
  std::vector<ConditionInterval> out;
  for (const auto& c : order_) {
    const MeanInterval m = mean(c);
    out.push_back({c, fmt::format("{} ({} {})", c, what, mean_interval_text(m, format)), m.interval.lower, m.interval.upper});
  }
  return out;
}

std::string mean_interval_text(const MeanInterval& m, const std::string& format) {
  return fmt::format(fmt::runtime(fmt::format("{0} [{0}, {0}]", format)), m.mean, m.interval.lower, m.interval.upper);
}

}  // namespace attnlab
