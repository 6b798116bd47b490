// Whether a method's models learned more than the linear baseline trained beside them in the same sweep
// (model/pixel_logistic.hpp): the sentence every trained claim's ledger note carries, computed from
// vit_training_runs.csv, never typed.
#pragma once

#include <filesystem>
#include <string>

#include "attnlab/lab/mean_interval.hpp"
#include "attnlab/lab/verdict.hpp"

namespace attnlab {

struct BaselineComparison {
  bool measured = false;          // the runs table has both the method's rows and the baseline's
  MeanInterval method, baseline;  // mean test accuracy over seeds, 95% Student-t
  bool above = false;             // the method's interval lies strictly above the baseline's
  std::string sentence;           // for a ledger note, whichever the case (measured or not)
};

// From `runs_file` (exp_vit_training's vit_training_runs.csv; absent or without the rows: measured false and
// a sentence saying that no comparison was made). The test is judge_best_of's: above when the method's
// lower bound exceeds the baseline's upper bound.
BaselineComparison compare_with_baseline(const std::filesystem::path& runs_file, const std::string& method = "exact");

// The same for the recall models: exp_recall_training's recall_training_runs.csv at its main point (the first run's
// number of pairs), the exact models' mean query accuracy against the model without attention trained beside them
// (no-attention-baseline), with the chance lines 1/V and 1/N in the sentence.
BaselineComparison compare_with_recall_baseline(const std::filesystem::path& runs_file, const std::string& method = "exact");

}  // namespace attnlab
