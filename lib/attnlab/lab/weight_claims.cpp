// The rules that judge the seeds' claims about W_Q, W_K (weight_claims.hpp).
#include "attnlab/lab/weight_claims.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <limits>

namespace attnlab {

void S1Tally::add(std::int64_t d, std::int64_t d_k, std::int64_t merged, std::int64_t factored) {
  ++points_;
  mismatches_ += (factored < merged) != (d > 2 * d_k);
}

Judgement S1Tally::judge() const {
  return {mismatches_ == 0 ? Verdict::holds : Verdict::fails, static_cast<double>(mismatches_), ""};
}

void S2Tally::add(std::int64_t n, std::int64_t d, std::int64_t d_k, double factored_madds, double merged_madds) {
  const bool cheaper = factored_madds < merged_madds;
  points_.add(fmt::format("{},{},{}", n, d, d_k), "", cheaper ? 0.0 : 1.0);
  cheaper_ += cheaper;
  ++added_;
}

Judgement S2Tally::judge() const {
  Judgement j = judge_by_condition(points_, 0.0);
  j.observed = static_cast<double>(cheaper_) / static_cast<double>(points());
  j.note.clear();  // a note listing every grid point helps no one: callers say where the crossover lies
  return j;
}

void G1Tally::add_shape(const std::vector<std::int64_t>& counts, std::int64_t disallowed) {
  ++shapes_;
  disallowed_ += disallowed;
  if (counts.empty()) return;
  const auto [lo, hi] = std::minmax_element(counts.begin(), counts.end());
  worst_spread_ = std::max(worst_spread_, *hi - *lo);
}

Judgement G1Tally::judge() const {
  return {worst_spread_ <= kCountSpreadThreshold ? Verdict::holds : Verdict::fails, static_cast<double>(worst_spread_), ""};
}

}  // namespace attnlab
