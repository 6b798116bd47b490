// Verdicts for "approximates X, better as its parameter grows": a fitted error trend per group.
#pragma once

#include <string>
#include <vector>

#include "attnlab/io/ledger.hpp"
#include "attnlab/lab/statistics.hpp"

namespace attnlab {

// The error of one group (an input family, say) against the method's parameter (D, m).
struct ErrorTrend {
  std::string group;
  PowerLawFit fit;              // log(error) against log(parameter)
  double error_at_largest = 0;  // the error at the largest parameter value
  bool improving() const { return fit.slope_interval.upper < 0; }
};

// Fits error = c parameter^slope over the points of one group (at least 3 distinct parameters).
ErrorTrend fit_error_trend(const std::string& group, const std::vector<double>& parameter,
                           const std::vector<double>& error);

struct ApproximationVerdict {
  Verdict verdict = Verdict::untested;
  double observed = 0;  // the largest error_at_largest over the groups
  std::string note;
};

// holds: every group improves (slope interval below 0) and ends at or below `threshold`;
// conditional: some but not all groups do both (the note names which do and which do not);
// fails: no group does both. The note gives the slopes and final errors of the failing groups.
ApproximationVerdict judge_approximation(const std::vector<ErrorTrend>& trends, double threshold,
                                         const std::string& parameter_name);

}  // namespace attnlab
