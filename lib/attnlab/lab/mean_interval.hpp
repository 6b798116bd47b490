// The mean of a few repeated measurements (e.g. test accuracy over seeds) with its Student-t interval.
#pragma once

#include <vector>

#include "attnlab/lab/statistics.hpp"

namespace attnlab {

struct MeanInterval {
  double mean = 0;
  Interval interval;  // two-sided Student-t with count - 1 degrees of freedom; [mean, mean] for one value
  std::size_t count = 0;
};

// Mean of `values` and its Student-t interval at `confidence` (std::invalid_argument when empty).
MeanInterval student_t_mean_interval(const std::vector<double>& values, double confidence = 0.95);

}  // namespace attnlab
