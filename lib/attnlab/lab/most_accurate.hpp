// Seed 002's "Linformer is the most accurate of the five" judged from per-seed accuracies, one rule for every task
// it is tested on (U17 on Fashion-MNIST, U19 on recall): judge_best_of over the seed-002 methods' 95% Student-t
// intervals of the mean accuracy over seeds, the methods reported beside it (seed 000's symmetric, a baseline)
// listed in the note but never judged.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "attnlab/lab/mean_interval.hpp"
#include "attnlab/lab/verdict.hpp"

namespace attnlab {

// The methods seed 002 compares (its five attentions, both linear forms and both random-feature forms), in the
// order tables list them; "linformer" is the one it calls the most accurate.
const std::vector<std::string>& seed002_methods();
inline constexpr const char* kSeed002Best = "linformer";

struct MostAccurate {
  bool judged = false;     // linformer and another seed-002 method have accuracies
  Judgement judgement;     // judge_best_of's (when judged)
  std::string means;       // "exact 0.97 [0.96, 0.98]; ...; beside them, seed 000's symmetric ..." (four decimals)
  std::size_t seeds = 0;   // the first method's number of seeds
};

// accuracy[method]: one accuracy per seed. The seed-002 methods present are judged; every method of `beside` that
// is present is appended to `means` as "beside them, <label> m [lo, hi]" (labels[i] names beside[i]).
MostAccurate judge_most_accurate(const std::map<std::string, std::vector<double>>& accuracy,
                                 const std::vector<std::string>& beside, const std::vector<std::string>& labels);

// U19.c, what is true instead of U19 on recall: exact softmax attention is the most accurate of the seed-002 methods
// (no other's interval lies above its own) and Linformer's interval lies below those of every method of
// kLinformerBelow. Six parts, each decided from the 95% Student-t intervals of the mean accuracy over seeds:
//   "none above exact"       fails when some seed-002 method's interval lies strictly above exact's, else holds;
//   "linformer below <m>"    holds when Linformer's upper bound is below m's lower bound, fails when its lower bound
//                            is above m's upper bound, undecided (inconclusive) when the intervals touch or overlap;
// combined by judge_outcomes_by_condition (all hold: holds; all fail: fails; some of each: conditional; else
// inconclusive). observed is the number of parts that fail, judged against 0. Throws std::invalid_argument when a
// seed-002 method has fewer than two accuracies (no interval).
inline const std::vector<std::string> kLinformerBelow = {"exact", "favor", "linear-elu", "linear-shen", "nystrom"};
Judgement judge_exact_best_linformer_below(const std::map<std::string, std::vector<double>>& accuracy);

}  // namespace attnlab
