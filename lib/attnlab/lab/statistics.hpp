// Statistics for verdicts: Clopper-Pearson intervals, log-log slopes, medians.
#pragma once

#include <cstddef>
#include <vector>

namespace attnlab {

struct Interval {
  double lower = 0;
  double upper = 0;
};

// Exact (Clopper-Pearson) two-sided interval for a binomial proportion with
// `successes` out of `trials`, at the given confidence level, from Beta quantiles.
Interval clopper_pearson(std::size_t successes, std::size_t trials, double confidence = 0.95);

// Least-squares fit of log(y) = intercept + slope * log(x) with a Student-t interval
// for the slope: the fitted complexity exponent of y(x) and its uncertainty.
struct PowerLawFit {
  double slope = 0;
  double intercept = 0;        // natural-log intercept
  double slope_stderr = 0;
  Interval slope_interval;     // at `confidence`
  double r_squared = 0;
  std::size_t points = 0;
  double confidence = 0.95;    // of slope_interval
  double x_min = 0, x_max = 0;  // the fitted points' range of x (of x itself, not its logarithm, for a power law)
};

// Needs at least 3 points with x, y > 0 and two distinct x; throws std::invalid_argument otherwise.
PowerLawFit fit_power_law(const std::vector<double>& x, const std::vector<double>& y, double confidence = 0.95);

// Least-squares line y = intercept + slope * x with the same Student-t interval for the
// slope (fit_power_law is this fit on the logarithms). Needs 3 finite points, two distinct x.
PowerLawFit fit_line(const std::vector<double>& x, const std::vector<double>& y, double confidence = 0.95);

// Median of the values (mean of the two middle ones for an even count); throws on empty input.
double median(std::vector<double> values);

}  // namespace attnlab
