// The corrected statements' definitions and rows (correction.hpp).
#include "attnlab/lab/correction.hpp"

#include <stdexcept>

#include "attnlab/core/rng.hpp"

namespace attnlab {

const std::vector<CorrectionDefinition>& correction_definitions() {
  static const std::vector<CorrectionDefinition> all = [] {
    std::vector<CorrectionDefinition> out;
#define ATTNLAB_CORRECTION(id, basis, threshold, metric, statement)                                             \
  out.push_back({id, std::string(id).substr(0, std::string(id).rfind(".c")), basis, static_cast<double>(threshold), \
                 metric, statement});
#include "attnlab/lab/corrections.inc"
#undef ATTNLAB_CORRECTION
    for (const auto& c : out) {
      if (c.id != correction_id(c.corrects))
        throw std::logic_error("lib/attnlab/lab/corrections.tsv: '" + c.id + "' is not a claim's id followed by .c");
      if (c.basis != "mathematics" && c.basis != "measured")
        throw std::logic_error("lib/attnlab/lab/corrections.tsv: " + c.id + "'s basis '" + c.basis +
                               "' is neither mathematics nor measured");
    }
    return out;
  }();
  return all;
}

const CorrectionDefinition& correction_definition(const std::string& id) {
  for (const auto& c : correction_definitions())
    if (c.id == id) return c;
  throw std::logic_error("no corrected statement '" + id + "' in lib/attnlab/lab/corrections.tsv");
}

ClaimRow correction_row(const std::string& id, Verdict verdict, double observed, const std::string& evidence,
                        const std::string& note) {
  const CorrectionDefinition& c = correction_definition(id);
  ClaimRow row{c.id, verdict, c.metric, observed, c.threshold, evidence, note};
  row.corrects = c.corrects;
  return row;
}

ClaimRow correction_by_condition(const std::string& id, const WorstByCondition& worst, const std::string& evidence,
                                 const std::string& note) {
  const Judgement j = judge_by_condition(worst, correction_definition(id).threshold);
  const std::string joined = j.note.empty() ? note : note.empty() ? j.note : j.note + " " + note;
  return correction_row(id, j.verdict, j.observed, evidence, joined);
}

std::uint64_t confirming_seed(std::uint64_t seed) {
  // A salt no sweep uses: derive_seed(seed, i) with the trial index i, which stays far below it.
  return derive_seed(seed, 0xC0FF1E5EEDULL);
}

}  // namespace attnlab
