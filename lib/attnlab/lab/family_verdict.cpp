// The verdict of a claim checked instance by instance over named families of inputs.
#include "attnlab/lab/family_verdict.hpp"

#include "attnlab/lab/verdict.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <limits>

namespace attnlab {

FamilyJudgement judge_by_family(const std::map<std::string, std::pair<int, int>>& pass_total,
                                const std::map<std::string, std::pair<double, double>>* cond) {
  std::string passing, failing;
  double pass_lo = std::numeric_limits<double>::infinity(), pass_hi = 0, fail_lo = pass_lo, fail_hi = 0;
  for (const auto& [family, pt] : pass_total) {
    const bool pass = pt.first == pt.second;
    std::string& list = pass ? passing : failing;
    list += fmt::format("{}{} {}/{}", list.empty() ? "" : "; ", family, pt.first, pt.second);
    if (cond) {
      const auto& [lo, hi] = cond->at(family);
      (pass ? pass_lo : fail_lo) = std::min(pass ? pass_lo : fail_lo, lo);
      (pass ? pass_hi : fail_hi) = std::max(pass ? pass_hi : fail_hi, hi);
    }
  }
  FamilyJudgement j;
  j.verdict = triage(failing.empty(), !passing.empty());
  j.note = fmt::format("all instances pass in: [{}]; not in: [{}]", passing, failing);
  if (cond && !passing.empty())
    j.note += fmt::format("; cond(X) in passing families {:.12g}..{:.12g}", pass_lo, pass_hi);
  if (cond && !failing.empty()) {
    if (passing.empty()) j.note += fmt::format("; cond(X) {:.4g}..{:.4g}", fail_lo, fail_hi);
    else j.note += fmt::format(", in the others {:.4g}..{:.4g}", fail_lo, fail_hi);
  }
  return j;
}

}  // namespace attnlab
