// The median with its order-statistic interval.
#include "attnlab/lab/median_interval.hpp"

#include <algorithm>
#include <boost/math/distributions/binomial.hpp>
#include <cmath>
#include <fmt/format.h>
#include <stdexcept>

namespace attnlab {

namespace {

void check_confidence(const char* who, double confidence) {
  if (!(confidence > 0 && confidence < 1))
    throw std::invalid_argument(fmt::format("{}: confidence {} must lie in (0, 1)", who, confidence));
}

// P(l <= B <= n - l) for B ~ Binomial(n, 1/2): the coverage of [x_(l), x_(n + 1 - l)].
double coverage(std::size_t n, std::size_t l) {
  const boost::math::binomial_distribution<> b(static_cast<double>(n), 0.5);
  return 1 - 2 * boost::math::cdf(b, static_cast<double>(l - 1));
}

}  // namespace

std::size_t min_median_interval_count(double confidence) {
  check_confidence("min_median_interval_count", confidence);
  // [min, max] covers with probability 1 - 2 * 2^-n; the count is the first n where that reaches the confidence.
  std::size_t n = 2;
  while (coverage(n, 1) < confidence) ++n;
  return n;
}

MedianInterval median_interval(std::vector<double> values, double confidence) {
  check_confidence("median_interval", confidence);
  const std::size_t n = values.size();
  for (std::size_t i = 0; i < n; ++i)
    if (!std::isfinite(values[i])) throw std::invalid_argument(fmt::format("median_interval: value {} is {}", i, values[i]));
  const std::size_t need = min_median_interval_count(confidence);
  if (n < need)
    throw std::invalid_argument(fmt::format("median_interval: {} value(s); a {:g}% interval for the median needs at least {}",
                                            n, 100 * confidence, need));
  std::sort(values.begin(), values.end());
  MedianInterval m;
  m.count = n;
  m.median = n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
  // The largest l (the narrowest symmetric pair) that still covers, by bisection: coverage falls as l grows, and
  // l = 1 covers (n >= need).
  std::size_t l = 1, past = (n + 1) / 2 + 1;  // coverage(n, l) >= confidence; l' >= past is out of range or does not cover
  while (past - l > 1) {
    const std::size_t mid = l + (past - l) / 2;
    (coverage(n, mid) >= confidence ? l : past) = mid;
  }
  m.lower_rank = l;
  m.upper_rank = n + 1 - l;
  m.coverage = coverage(n, l);
  m.interval = {values[m.lower_rank - 1], values[m.upper_rank - 1]};
  return m;
}

}  // namespace attnlab
