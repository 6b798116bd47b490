// The tables exp_vit_training writes, named once: its writer, its judge (U17) and the experiments that cite
// them (the linear-baseline sentence of every trained claim's note) spell every file and column from here,
// so that a rename cannot split them.
#pragma once

namespace attnlab::training_tables {

// Files.
inline constexpr const char* kStepsFile = "vit_training_steps.csv";
inline constexpr const char* kEpochsFile = "vit_training_epochs.csv";
inline constexpr const char* kRunsFile = "vit_training_runs.csv";
inline constexpr const char* kTimingFile = "vit_training_timing.csv";
// Derived by the judge: mean test accuracy per method and epoch over the seeds, 95% interval (the report's band).
inline constexpr const char* kEpochMeansFile = "vit_training_epoch_means.csv";
// Derived by the judge: each method's mean test accuracy over its seeds (the report's table beside U19's).
inline constexpr const char* kMethodMeansFile = "vit_training_method_means.csv";

// Columns (the ones more than one place reads).
inline constexpr const char* kMethod = "method";
inline constexpr const char* kSeed = "seed";        // the seed index k of run seed base + k
inline constexpr const char* kEpoch = "epoch";
inline constexpr const char* kTestAccuracy = "test_accuracy";
inline constexpr const char* kTestImages = "test_images";
inline constexpr const char* kTrainImages = "train_images";
inline constexpr const char* kEpochs = "epochs";
inline constexpr const char* kSeedsCount = "seeds";  // of the epoch means: how many seeds a mean is over

}  // namespace attnlab::training_tables
