// The median of repeated timings with its distribution-free interval from order statistics.
#pragma once

#include <cstddef>
#include <vector>

#include "attnlab/lab/statistics.hpp"

namespace attnlab {

struct MedianInterval {
  double median = 0;     // the sample median (mean of the two middle values for an even count)
  Interval interval;     // [x_(l), x_(u)], the l-th and u-th smallest values
  std::size_t count = 0;
  std::size_t lower_rank = 0, upper_rank = 0;  // l and u = count + 1 - l (1-based)
  double coverage = 0;   // P(x_(l) <= population median <= x_(u)) = P(l <= B <= count - l), B ~ Binomial(count, 1/2)
};

// The median of `values` and a distribution-free interval for the median of the distribution they were drawn
// from: the pair of order statistics [x_(l), x_(count + 1 - l)] with the largest l whose exact coverage is at
// least `confidence`. Why it needs no model of the noise: each value falls below the population median with
// probability 1/2, independently, so the number below it is Binomial(count, 1/2) whatever the distribution
// (Boost.Math's binomial gives the coverage). Timings on a shared machine are skewed and heavy-tailed (a burst
// of load makes some runs twice as slow), which is why neither a normal model nor the mean fits them.
// For example 9 values at 0.95: [x_(2), x_(8)], coverage 1 - 2 (1 + 9) / 2^9 = 0.961, the fastest and the
// slowest run left out; 20 values: [x_(6), x_(15)], coverage 0.959.
// Throws std::invalid_argument for a confidence outside (0, 1), a non-finite value, or fewer values than
// min_median_interval_count(confidence) (no pair of order statistics reaches the confidence).
MedianInterval median_interval(std::vector<double> values, double confidence = 0.95);

// The fewest values for which median_interval exists at `confidence`: their [min, max] covers the median with
// probability 1 - 2^(1 - count). 6 at 0.95 (coverage 0.969); 5 values reach only 0.9375.
std::size_t min_median_interval_count(double confidence = 0.95);

}  // namespace attnlab
