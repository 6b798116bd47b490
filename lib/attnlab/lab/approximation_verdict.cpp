// Verdicts for "approximates X, better as its parameter grows": a fitted error trend per group.
#include "attnlab/lab/approximation_verdict.hpp"

#include "attnlab/lab/verdict.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <stdexcept>

namespace attnlab {

ErrorTrend fit_error_trend(const std::string& group, const std::vector<double>& parameter,
                           const std::vector<double>& error) {
  if (parameter.empty()) throw std::invalid_argument("fit_error_trend: group '" + group + "' has no points");
  ErrorTrend t;
  t.group = group;
  t.fit = fit_power_law(parameter, error);
  const auto largest = std::max_element(parameter.begin(), parameter.end()) - parameter.begin();
  // Several points may share the largest parameter (repeated trials): take the worst of them.
  for (std::size_t i = 0; i < parameter.size(); ++i)
    if (parameter[i] == parameter[static_cast<std::size_t>(largest)])
      t.error_at_largest = std::max(t.error_at_largest, error[i]);
  return t;
}

ApproximationVerdict judge_approximation(const std::vector<ErrorTrend>& trends, double threshold,
                                         const std::string& parameter_name) {
  if (trends.empty()) throw std::invalid_argument("judge_approximation: no groups");
  ApproximationVerdict v;
  std::vector<std::string> good, bad;
  for (const auto& t : trends) {
    v.observed = std::max(v.observed, t.error_at_largest);
    if (t.improving() && t.error_at_largest <= threshold)
      good.push_back(t.group);
    else
      bad.push_back(fmt::format("{} (slope {:.2f} [{:.2f}, {:.2f}], error {:.3g} at largest {})", t.group,
                                t.fit.slope, t.fit.slope_interval.lower, t.fit.slope_interval.upper,
                                t.error_at_largest, parameter_name));
  }
  const auto join = [](const std::vector<std::string>& xs) { return fmt::format("{}", fmt::join(xs, "; ")); };
  v.verdict = triage(bad.empty(), !good.empty());
  if (v.verdict == Verdict::holds) {
    v.note = fmt::format("every group improves with {} and ends below {:g}", parameter_name, threshold);
  } else if (v.verdict == Verdict::fails) {
    v.note = "no group both improves and ends below the threshold: " + join(bad);
  } else {
    v.note = fmt::format("holds for {}; not for {}", join(good), join(bad));
  }
  return v;
}

}  // namespace attnlab
