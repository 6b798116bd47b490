// The corrected statements (lib/attnlab/lab/corrections.tsv): for a claim that fails or holds only under a
// condition, what is true instead, judged like a claim and written to the second ledger, corrections.csv.
// Each lives in the experiment that measures the claim it corrects, judged beside it on a confirming sweep
// (another base seed, and fresh sizes or families where they make sense) whose tables are kept apart.
//
//   const CorrectionDefinition& c = correction_definition("R5.c");
//   rows.push_back(correction_row("R5.c", j.verdict, j.observed, cli.evidence_path(kConfirmTable), j.note));
#pragma once

#include <string>
#include <vector>

#include "attnlab/io/ledger.hpp"
#include "attnlab/lab/verdict.hpp"

namespace attnlab {

struct CorrectionDefinition {
  std::string id;         // "R5.c"
  std::string corrects;   // "R5"
  std::string basis;      // "mathematics" (an identity, a count, a formula) or "measured" (a boundary in the data)
  double threshold = 0;   // fixed before the confirming run
  std::string metric;     // the ledger's metric column
  std::string statement;  // one sentence a reader can quote
};

// Every definition, in the file's order.
const std::vector<CorrectionDefinition>& correction_definitions();

// The definition of `id`; std::logic_error for an id the file does not define (a defect of the experiment).
const CorrectionDefinition& correction_definition(const std::string& id);

// The ledger row of correction `id`: its definition's metric and threshold, this run's verdict, observed value,
// evidence (the confirming run's table) and note. The experiment fills in itself (ExperimentCli::write_claims).
ClaimRow correction_row(const std::string& id, Verdict verdict, double observed, const std::string& evidence,
                        const std::string& note);

// The row of correction `id` judged by judge_by_condition: each condition's worst value against the definition's
// threshold (holds, conditional or fails). Its note is the judgement's (the conditions where the statement fails,
// if any) followed by `note`.
//   WorstByCondition w;  w.add("gaussian", "gaussian weights", ratio);  ...
//   rows.push_back(correction_by_condition("R4.c", w, cli.evidence_path(kConfirmTable), "288 configurations"));
ClaimRow correction_by_condition(const std::string& id, const WorstByCondition& worst, const std::string& evidence,
                                 const std::string& note);

// The seed of a correction's confirming sweep: a base seed no claim's sweep derives from `seed`, so that the
// data that suggested a statement never confirms it.
std::uint64_t confirming_seed(std::uint64_t seed);

}  // namespace attnlab
