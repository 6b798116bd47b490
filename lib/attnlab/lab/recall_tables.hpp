// The tables exp_recall_training writes, named once: its writer, its judge (U19) and the experiments that cite
// them (the sentence on the baseline without attention in every trained claim's recall part) spell every file and
// column from here, so that a rename cannot split them.
#pragma once

namespace attnlab::recall_tables {

// Files.
inline constexpr const char* kStepsFile = "recall_training_steps.csv";
inline constexpr const char* kEvalsFile = "recall_training_evals.csv";
inline constexpr const char* kRunsFile = "recall_training_runs.csv";
inline constexpr const char* kTimingFile = "recall_training_timing.csv";
// U19.c's confirming sweep: one row per run, the runs table's columns (exp_recall_training).
inline constexpr const char* kConfirmFile = "recall_training_confirm.csv";
// Derived by the judge: the main point's training curve (mean over seeds per method and step), its accuracy per
// method, and the capacity curve (per method and number of pairs).
inline constexpr const char* kEvalMeansFile = "recall_training_eval_means.csv";
inline constexpr const char* kMethodMeansFile = "recall_training_method_means.csv";
inline constexpr const char* kCapacityFile = "recall_capacity.csv";
// The main point's test set (keys.npy, values.npy, labels.npy, manifest.json), written by the judge.
inline constexpr const char* kTestSetDir = "recall_test";

// Columns (the ones more than one place reads).
inline constexpr const char* kMethod = "method";
inline constexpr const char* kPairs = "pairs";
inline constexpr const char* kSeed = "seed";  // the seed index k of run seed base + k
inline constexpr const char* kEvaluation = "evaluation";
inline constexpr const char* kStep = "step";
inline constexpr const char* kSplit = "split";
inline constexpr const char* kAccuracy = "query_accuracy";
inline constexpr const char* kAccuracyMean = "query_accuracy_mean";
inline constexpr const char* kQueries = "queries";
inline constexpr const char* kSequences = "test_sequences";
inline constexpr const char* kNonfinite = "nonfinite";
inline constexpr const char* kSteps = "steps";
inline constexpr const char* kPlannedSteps = "planned_steps";
inline constexpr const char* kBatch = "batch";
inline constexpr const char* kPeakLr = "peak_lr";
inline constexpr const char* kKeys = "keys";
inline constexpr const char* kValues = "values";
inline constexpr const char* kTokens = "tokens";
inline constexpr const char* kD = "D";
inline constexpr const char* kHeads = "heads";
inline constexpr const char* kLayers = "layers";
inline constexpr const char* kMlp = "mlp";
inline constexpr const char* kStatus = "status";
inline constexpr const char* kCheckpoint = "checkpoint";
inline constexpr const char* kSeedsCount = "seeds";  // of the derived means: how many seeds a mean is over
// A run's status: it completed every step, or it diverged (fit.hpp) and stopped there.
inline constexpr const char* kCompleted = "completed";
inline constexpr const char* kDiverged = "diverged";

}  // namespace attnlab::recall_tables
