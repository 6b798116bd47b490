// The Student-t interval of a mean.
#include "attnlab/lab/mean_interval.hpp"

#include <boost/math/distributions/students_t.hpp>
#include <cmath>
#include <stdexcept>

namespace attnlab {

MeanInterval student_t_mean_interval(const std::vector<double>& values, double confidence) {
  if (values.empty()) throw std::invalid_argument("student_t_mean_interval: no values");
  MeanInterval r;
  r.count = values.size();
  for (double v : values) r.mean += v;
  r.mean /= static_cast<double>(values.size());
  r.interval = {r.mean, r.mean};
  if (values.size() < 2) return r;
  double ss = 0;
  for (double v : values) ss += (v - r.mean) * (v - r.mean);
  const double n = static_cast<double>(values.size());
  const double se = std::sqrt(ss / (n - 1) / n);
  const boost::math::students_t dist(n - 1);
  const double t = boost::math::quantile(boost::math::complement(dist, (1 - confidence) / 2));
  r.interval = {r.mean - t * se, r.mean + t * se};
  return r;
}

}  // namespace attnlab
