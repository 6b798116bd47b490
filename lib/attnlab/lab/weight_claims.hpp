// The rules that judge the seeds' claims about W_Q, W_K from measurements: each rule and threshold in one
// place, for the experiments on random weights (exp_qk_spectrum, exp_qk_merge, exp_param_growth) and for
// attnlab_inspect on a user's model alike.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "attnlab/lab/verdict.hpp"

namespace attnlab {

// R2 and R5 compare a count with d_k: the claim holds where count / d_k <= 1.
inline constexpr double kCountRatioThreshold = 1.0;
inline constexpr const char* kR2Metric = "max numerical rank(W_Q W_K^T) / d_k (SVD, tol max(d,d) eps sigma_max)";
inline constexpr const char* kR5Metric = "max count of nonzero eigenvalues of S_w / d_k (tol d eps max|lambda|)";
inline constexpr const char* kR5Note =
    "S_w = (M + M^T)/2 has rank up to 2 d_k, with eigenvalues of both signs (see positive_eig_S, negative_eig_S).";
// R6 is judged against kResidualRatioThreshold (linalg/residual_ratio.hpp).

// S1: the claim's rule "the factored form (2 d d_k parameters) is smaller than the merged one (d^2) iff
// d > 2 d_k" against exact counts; a single point where they disagree fails it.
inline constexpr double kNoMismatch = 0;
inline constexpr const char* kS1Metric = "grid points where (2 d d_k < d^2) differs from (d > 2 d_k) (count)";
class S1Tally {
 public:
  void add(std::int64_t d, std::int64_t d_k, std::int64_t merged, std::int64_t factored);
  std::int64_t points() const { return points_; }
  // holds when no point disagrees, else fails; observed: the number that disagree.
  Judgement judge() const;

 private:
  std::int64_t points_ = 0, mismatches_ = 0;
};

// S2: "computing X W_Q (X W_K)^T is cheaper than X W' X^T" per (n, d, d_k) by counted multiply-adds:
// holds if cheaper at every point, fails if at none, conditional otherwise (judge_by_condition with one
// condition per point); observed: the fraction of points where it is cheaper, against 1.
inline constexpr const char* kS2Metric = "fraction of (n, d, d_k) grid points where factored multiply-adds < merged";
class S2Tally {
 public:
  void add(std::int64_t n, std::int64_t d, std::int64_t d_k, double factored_madds, double merged_madds);
  std::int64_t points() const { return added_; }
  std::int64_t cheaper() const { return cheaper_; }
  Judgement judge() const;

 private:
  WorstByCondition points_;
  std::int64_t added_ = 0, cheaper_ = 0;
};

// G1: a shape's parameter count (2 d_e d_k/h + d_e d_v/h) h + d_v d_e is the same for every allowed h;
// exact integers, so any spread fails it.
inline constexpr double kCountSpreadThreshold = 0;
inline constexpr const char* kG1Metric = "max over shapes of (max - min) parameter count over allowed h (count)";
class G1Tally {
 public:
  // One shape's counts over the head numbers allowed for it, and how many of 1..max_h were not allowed.
  void add_shape(const std::vector<std::int64_t>& counts, std::int64_t disallowed);
  std::int64_t shapes() const { return shapes_; }
  std::int64_t disallowed() const { return disallowed_; }
  // holds when every shape's spread is 0; observed: the largest spread.
  Judgement judge() const;

 private:
  std::int64_t shapes_ = 0, disallowed_ = 0, worst_spread_ = 0;
};

}  // namespace attnlab
