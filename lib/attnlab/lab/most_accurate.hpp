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

}  // namespace attnlab
