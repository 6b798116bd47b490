// Statistics for verdicts: Clopper-Pearson intervals, log-log slopes, medians.
#include "attnlab/lab/statistics.hpp"

#include <algorithm>
#include <boost/math/distributions/beta.hpp>
#include <boost/math/distributions/students_t.hpp>
#include <cmath>
#include <stdexcept>
#include <string>

namespace attnlab {

Interval clopper_pearson(std::size_t successes, std::size_t trials, double confidence) {
  if (trials == 0) throw std::invalid_argument("clopper_pearson: trials must be positive");
  if (successes > trials)
    throw std::invalid_argument("clopper_pearson: successes (= " + std::to_string(successes) +
                                ") exceed trials (= " + std::to_string(trials) + ")");
  if (!(confidence > 0 && confidence < 1))
    throw std::invalid_argument("clopper_pearson: confidence must lie in (0, 1)");
  const double alpha = 1 - confidence;
  const double k = static_cast<double>(successes), n = static_cast<double>(trials);
  Interval ci{0.0, 1.0};
  // The Beta(k, n-k+1) and Beta(k+1, n-k) quantiles are the exact binomial tail inversions.
  if (successes > 0) ci.lower = boost::math::quantile(boost::math::beta_distribution<>(k, n - k + 1), alpha / 2);
  if (successes < trials) ci.upper = boost::math::quantile(boost::math::beta_distribution<>(k + 1, n - k), 1 - alpha / 2);
  return ci;
}

PowerLawFit fit_line(const std::vector<double>& x, const std::vector<double>& y, double confidence) {
  if (x.size() != y.size()) throw std::invalid_argument("fit_line: x and y differ in length");
  const std::size_t n = x.size();
  if (n < 3) throw std::invalid_argument("fit_line: needs at least 3 points, got " + std::to_string(n));
  for (std::size_t i = 0; i < n; ++i)
    if (!std::isfinite(x[i]) || !std::isfinite(y[i]))
      throw std::invalid_argument("fit_line: point " + std::to_string(i) + " is not finite");
  double mx = 0, my = 0;
  for (std::size_t i = 0; i < n; ++i) { mx += x[i]; my += y[i]; }
  mx /= static_cast<double>(n);
  my /= static_cast<double>(n);
  double sxx = 0, sxy = 0, syy = 0;
  for (std::size_t i = 0; i < n; ++i) {
    sxx += (x[i] - mx) * (x[i] - mx);
    sxy += (x[i] - mx) * (y[i] - my);
    syy += (y[i] - my) * (y[i] - my);
  }
  if (sxx == 0) throw std::invalid_argument("fit_line: all x are equal");
  PowerLawFit fit;
  fit.points = n;
  fit.confidence = confidence;
  fit.x_min = *std::min_element(x.begin(), x.end());
  fit.x_max = *std::max_element(x.begin(), x.end());
  fit.slope = sxy / sxx;
  fit.intercept = my - fit.slope * mx;
  double sse = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double r = y[i] - (fit.intercept + fit.slope * x[i]);
    sse += r * r;
  }
  fit.r_squared = syy > 0 ? 1 - sse / syy : 1.0;
  const double dof = static_cast<double>(n - 2);
  fit.slope_stderr = std::sqrt(sse / dof / sxx);
  const double t = boost::math::quantile(boost::math::students_t_distribution<>(dof), 0.5 + confidence / 2);
  fit.slope_interval = {fit.slope - t * fit.slope_stderr, fit.slope + t * fit.slope_stderr};
  return fit;
}

PowerLawFit fit_power_law(const std::vector<double>& x, const std::vector<double>& y, double confidence) {
  if (x.size() != y.size()) throw std::invalid_argument("fit_power_law: x and y differ in length");
  const std::size_t n = x.size();
  if (n < 3) throw std::invalid_argument("fit_power_law: needs at least 3 points, got " + std::to_string(n));
  std::vector<double> lx(n), ly(n);
  for (std::size_t i = 0; i < n; ++i) {
    if (!(x[i] > 0) || !(y[i] > 0) || !std::isfinite(x[i]) || !std::isfinite(y[i]))
      throw std::invalid_argument("fit_power_law: point " + std::to_string(i) + " is not positive and finite");
    lx[i] = std::log(x[i]);
    ly[i] = std::log(y[i]);
  }
  try {
    PowerLawFit fit = fit_line(lx, ly, confidence);
    fit.x_min = *std::min_element(x.begin(), x.end());
    fit.x_max = *std::max_element(x.begin(), x.end());
    return fit;
  } catch (const std::invalid_argument&) {
    throw std::invalid_argument("fit_power_law: all x are equal");
  }
}

double median(std::vector<double> values) {
  if (values.empty()) throw std::invalid_argument("median: no values");
  const std::size_t mid = values.size() / 2;
  std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(mid), values.end());
  const double upper = values[mid];
  if (values.size() % 2) return upper;
  const double lower = *std::max_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(mid));
  return 0.5 * (lower + upper);
}

}  // namespace attnlab
