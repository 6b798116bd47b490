#include "attnlab/lab/shard.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fmt/format.h>
#include <stdexcept>

namespace attnlab {

namespace {
constexpr int kMaxShards = 100000;
}

Shard::Shard(int index, int count) : index_(index), count_(count) {
  if (count < 1 || count > kMaxShards || index < 1 || index > count)
    throw std::invalid_argument(fmt::format("shard {}/{}: need 1 <= I <= N <= {}", index, count, kMaxShards));
}

Shard Shard::parse(std::string_view text) {
  const auto slash = text.find('/');
  auto number = [&](std::string_view s, int& v) {
    if (s.empty() || s.find_first_not_of("0123456789") != std::string_view::npos) return false;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    return ec == std::errc() && end == s.data() + s.size();
  };
  int i = 0, n = 0;
  if (slash == std::string_view::npos || !number(text.substr(0, slash), i) || !number(text.substr(slash + 1), n))
    throw std::invalid_argument(fmt::format("'{}' is not a shard I/N (for example 2/3)", text));
  if (n < 1 || n > kMaxShards || i < 1 || i > n)
    throw std::invalid_argument(fmt::format("'{}': a shard I/N needs 1 <= I <= N <= {}", text, kMaxShards));
  return Shard(i, n);
}

std::string Shard::label() const { return fmt::format("{}/{}", index_, count_); }

Shard::Range Shard::range(std::size_t size) const {
  // size * count fits in 64 bits for any sweep a machine can enumerate (count <= 1e5).
  sizes_.push_back(size);
  const auto n = static_cast<std::size_t>(count_), i = static_cast<std::size_t>(index_ - 1);
  return {i * size / n, (i + 1) * size / n};
}

Shard::Range Shard::range(std::span<const double> costs) const {
  double total = 0;
  for (std::size_t j = 0; j < costs.size(); ++j) {
    if (!(std::isfinite(costs[j]) && costs[j] > 0))
      throw std::invalid_argument(fmt::format("Shard::range: the cost of configuration {} is {}, not a positive finite number",
                                              j, costs[j]));
    total += costs[j];
  }
  if (!std::isfinite(total)) throw std::invalid_argument("Shard::range: the costs sum to more than a double holds");
  sizes_.push_back(costs.size());
  // The block of configuration j: floor(N midpoint / total), clamped to N - 1 against rounding at the end.
  const auto block = [&, n = static_cast<double>(count_)](double midpoint) {
    return std::min(static_cast<int>(std::floor(n * midpoint / total)), count_ - 1);
  };
  Range r{costs.size(), costs.size()};
  double before = 0;  // the cost of configurations 0 .. j-1, summed in index order by every shard alike
  for (std::size_t j = 0; j < costs.size(); ++j) {
    const int b = block(before + costs[j] / 2);
    if (b == index_ - 1 && r.begin == costs.size()) r.begin = j;
    if (b > index_ - 1) {
      if (r.begin == costs.size()) r.begin = j;  // an empty block, placed where it would start
      r.end = j;
      return r;
    }
    before += costs[j];
  }
  return r;
}

bool Shard::runs_whole(std::size_t ordinal) const {
  return static_cast<int>(ordinal % static_cast<std::size_t>(count_)) == index_ - 1;
}

}  // namespace attnlab
