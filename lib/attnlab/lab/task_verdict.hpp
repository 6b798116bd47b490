// One ledger verdict for a claim measured on several trained testbeds (the Fashion-MNIST ViT and the recall model):
// each task's judgement, combined by one rule fixed here before any result was seen.
#pragma once

#include <string>
#include <vector>

#include "attnlab/lab/verdict.hpp"

namespace attnlab {

// A claim's judgement on one task, or `measured` false when the run had no models of that task (its checkpoints
// absent): the task is then named in the note and left out of the verdict.
struct TaskJudgement {
  std::string task;  // as the tables' `task` column names it ("fashion-mnist", "recall")
  bool measured = false;
  Judgement judgement{Verdict::untested, 0.0, ""};
  double threshold = 0.0;  // the task's own threshold (L5's k = ceil(n/8) differs between tasks)
};

// The combined verdict, over the measured tasks:
//   conditional   some task holds (in full or in part) and some other fails, or some task is itself conditional
//                 (the note names where it holds, where in part, and where it fails);
//   fails         some task fails and none holds: it fails wherever the data decide (an inconclusive task does
//                 not decide);
//   inconclusive  no task fails or is conditional, and some task is inconclusive;
//   holds         it holds on every measured task;
//   untested      no task was measured.
// A conditional task wins over an inconclusive one: the claim already fails in part there, and no outcome of the
// undecided task could make it hold or fail in full.
// observed and `threshold` are those of the task with the worst verdict (fails, then inconclusive, then
// conditional, then holds; the first such task on a tie); the note gives every task's verdict, observed value,
// threshold and note, in order. Throws std::invalid_argument for no tasks.
struct CombinedJudgement {
  Judgement judgement;
  double threshold = 0.0;
};
CombinedJudgement combine_task_judgements(const std::vector<TaskJudgement>& tasks);

}  // namespace attnlab
