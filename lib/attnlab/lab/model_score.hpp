// A trained model scored on its test set (Fashion-MNIST images, recall sequences): its logits, predictions and
// accuracy with a 95% Clopper-Pearson interval over the labelled rows (an image is one, a recall sequence one per
// query), and how far another model's predictions and logits are from it (R12, U18).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "attnlab/lab/statistics.hpp"
#include "attnlab/model/recall_model.hpp"
#include "attnlab/model/trainer.hpp"
#include "attnlab/model/vit.hpp"

namespace attnlab {

struct ModelScore {
  std::string attention;       // the model's method as it describes itself
  Mat<float> logits;           // (rows, classes): the labelled rows of the first `count` test items
  std::vector<int> predicted;  // index of each row's first maximum (Evaluation's rule)
  std::int64_t correct = 0;
  Interval cp;                 // 95% Clopper-Pearson of correct / count
  std::int64_t count() const { return logits.rows(); }
  double accuracy() const { return static_cast<double>(correct) / static_cast<double>(count()); }
};

// The first `count` test items, chunk by chunk over the threads (each chunk its own rows: the same bits for
// any thread count). Model: ViT<float> or RecallModel<float>.
template <typename Model>
ModelScore score_model(const Model& model, const typename Model::Data& test, std::int64_t count);

// How `other` departs from `base` on the same items.
struct ScoreChange {
  double agreement = 0;            // share of rows with the same prediction
  double max_abs_logit_change = 0, mean_abs_logit_change = 0;
};
ScoreChange score_change(const ModelScore& base, const ModelScore& other);

}  // namespace attnlab
