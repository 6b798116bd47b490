// Scoring a model on the test images (model_score.hpp).
#include "attnlab/lab/model_score.hpp"

#include <algorithm>
#include <stdexcept>

#include "attnlab/lab/parallel_trials.hpp"

namespace attnlab {

template <typename Model>
ModelScore score_model(const Model& model, const typename Model::Data& test, std::int64_t count) {
  if (count <= 0 || count > test.count()) throw std::invalid_argument("score_model: count outside 1 .. the test items");
  ModelScore s;
  s.attention = model.attention(0).describe();
  // The labels first: their count per chunk places each chunk's rows.
  const std::int64_t chunks = (count + kChunkImages - 1) / kChunkImages;
  std::vector<std::uint8_t> labels;
  std::vector<Eigen::Index> first_row(static_cast<std::size_t>(chunks) + 1, 0);
  for (std::int64_t i = 0; i < count; ++i) {
    test.append_labels(i, labels);
    first_row[static_cast<std::size_t>(i / kChunkImages) + 1] = static_cast<Eigen::Index>(labels.size());
  }
  s.logits.resize(static_cast<Eigen::Index>(labels.size()), model.params().head_W.cols());
  parallel_trials(static_cast<std::size_t>(chunks), [&](std::size_t c) {
    const std::int64_t first = static_cast<std::int64_t>(c) * kChunkImages, size = std::min<std::int64_t>(kChunkImages, count - first);
    std::vector<std::int64_t> items(static_cast<std::size_t>(size));
    for (std::int64_t i = 0; i < size; ++i) items[static_cast<std::size_t>(i)] = first + i;
    s.logits.middleRows(first_row[c], first_row[c + 1] - first_row[c]) = predict_logits(model, test, items);
  });
  s.predicted.resize(labels.size());
  for (Eigen::Index i = 0; i < s.logits.rows(); ++i) {
    int best = 0;
    for (Eigen::Index c = 1; c < s.logits.cols(); ++c)
      if (s.logits(i, c) > s.logits(i, best)) best = static_cast<int>(c);
    s.predicted[static_cast<std::size_t>(i)] = best;
    s.correct += best == labels[static_cast<std::size_t>(i)];
  }
  s.cp = clopper_pearson(static_cast<std::size_t>(s.correct), labels.size());
  return s;
}

template ModelScore score_model<ViT<float>>(const ViT<float>&, const ImageSet&, std::int64_t);
template ModelScore score_model<RecallModel<float>>(const RecallModel<float>&, const RecallSet&, std::int64_t);

ScoreChange score_change(const ModelScore& base, const ModelScore& other) {
  if (base.count() != other.count()) throw std::invalid_argument("score_change: scores of different image counts");
  ScoreChange c;
  std::int64_t agree = 0;
  for (std::size_t i = 0; i < base.predicted.size(); ++i) agree += base.predicted[i] == other.predicted[i];
  c.agreement = static_cast<double>(agree) / static_cast<double>(base.count());
  const Mat<double> d = (other.logits - base.logits).cast<double>();
  c.max_abs_logit_change = d.cwiseAbs().maxCoeff();
  c.mean_abs_logit_change = d.cwiseAbs().mean();
  return c;
}

}  // namespace attnlab
