// The verdict of a claim checked instance by instance over named families of inputs (G4-G6, G8, G9 on
// random families of X; G11 on the inputs of trained layers): every instance of a family must pass.
#pragma once

#include <map>
#include <string>
#include <utility>

#include "attnlab/io/ledger.hpp"

namespace attnlab {

struct FamilyJudgement {
  Verdict verdict = Verdict::fails;
  std::string note;
};

// pass_total[family] = (instances that pass, instances). holds if every family passes every instance;
// conditional if some families pass all and some do not (the note names those that pass, and the
// counts of the others); fails if no family passes all. With `cond` (min, max cond(X) by family) the
// note also gives the range of cond(X) (nonzero singular values) seen in the passing and in the other
// families (or in all of them, when none passes). Families appear in the note in the map's (alphabetical) order.
FamilyJudgement judge_by_family(const std::map<std::string, std::pair<int, int>>& pass_total,
                                const std::map<std::string, std::pair<double, double>>* cond = nullptr);

}  // namespace attnlab
