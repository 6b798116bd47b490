// A training run: epochs of shuffled mini-batches (or of fresh items from a stream) with the cosine schedule, the
// test set evaluated after every epoch (vit_spec.md's and recall_spec.md's protocols; the experiments and the
// benchmark share it).
#pragma once

#include <cstdint>
#include <functional>

#include "attnlab/model/trainer.hpp"

namespace attnlab {

struct FitOptions {
  int epochs = 1;
  Eigen::Index batch = 64;
  double lr = 5e-4;                 // peak learning rate, annealed to 0 over epochs * steps_per_epoch
  std::uint64_t shuffle_seed = 0;   // Rng(shuffle_seed) draws each epoch's order
  std::int64_t train_images = -1;   // the first this many training items (all when < 0); with `fresh`, per epoch
  std::int64_t test_images = -1;    // the first this many test items (all when < 0)
  // The training set is a stream of fresh items (recall_spec.md: sequences drawn from the run's seed, never
  // repeated, so nothing can be memorised): epoch e (from 0) trains on items e * train_images ..
  // (e + 1) * train_images - 1 in order, unshuffled, and the set must hold epochs * train_images items. An
  // epoch is then only the interval between two evaluations.
  bool fresh = false;
};

struct StepRecord {
  int epoch = 0;          // 1-based
  std::int64_t step = 0;  // 0-based over the run
  double lr = 0, loss = 0;
};

struct EpochRecord {
  int epoch = 0;  // 1-based
  std::int64_t steps = 0;
  Evaluation test;
  double train_seconds = 0, eval_seconds = 0;  // wall clock of this epoch's steps and of its evaluation
};

// How a run ended. A run diverges at the first step whose training loss or gradient is not finite (the
// trainer then leaves the weights as they were, Trainer::step): it stops there, and `test` evaluates the
// weights it stopped with, the last finite ones. A run that did not diverge has `test` = its last epoch's.
struct FitResult {
  bool diverged = false;
  int epoch = 0;           // the epoch the run ended in (1-based)
  std::int64_t steps = 0;  // Adam steps applied: every step of the run, or those before the divergence
  double loss = 0;         // the diverging step's training loss (NaN, an infinity, or finite with a non-finite gradient)
  Evaluation test;
  // Wall clock of the whole run: the steps computed (the diverging one included) and the evaluations made.
  std::int64_t steps_computed = 0;
  int evaluations = 0;
  double train_seconds = 0, eval_seconds = 0;
};

// steps per epoch: floor(train images / batch) (the last partial batch of each shuffle is dropped).
std::int64_t steps_per_epoch(std::int64_t train_images, Eigen::Index batch);

// Trains trainer.model() (a ViT, the linear baseline, a recall model) and calls on_step after every applied step and
// on_epoch after every completed epoch's evaluation; a diverged run's last, partial epoch has no on_epoch
// (the FitResult says where it stopped). Throws std::invalid_argument when there is not one full batch of
// training items (with `fresh`: when the set holds fewer than epochs * train_images).
template <typename T, typename Model = ViT<T>>
FitResult fit(Trainer<T, Model>& trainer, const typename Model::Data& train, const typename Model::Data& test,
              const FitOptions& options,
         const std::function<void(const StepRecord&)>& on_step, const std::function<void(const EpochRecord&)>& on_epoch);

}  // namespace attnlab
