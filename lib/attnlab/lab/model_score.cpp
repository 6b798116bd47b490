// Scoring a model on the test images (model_score.hpp).
#include "attnlab/lab/model_score.hpp"

#include <algorithm>
#include <stdexcept>

#include "attnlab/lab/parallel_trials.hpp"

namespace attnlab {

ModelScore score_model(const ViT<float>& model, const ImageSet& test, std::int64_t count) {
  if (count <= 0 || count > test.count()) throw std::invalid_argument("score_model: count outside 1 .. the test images");
  ModelScore s;
  s.attention = model.attention(0).describe();
  s.logits.resize(count, model.config().classes);
  const std::int64_t chunks = (count + kChunkImages - 1) / kChunkImages;
  parallel_trials(static_cast<std::size_t>(chunks), [&](std::size_t c) {
    const std::int64_t first = static_cast<std::int64_t>(c) * kChunkImages, size = std::min<std::int64_t>(kChunkImages, count - first);
    std::vector<std::int64_t> images(static_cast<std::size_t>(size));
    for (std::int64_t i = 0; i < size; ++i) images[static_cast<std::size_t>(i)] = first + i;
    s.logits.middleRows(first, size) = predict_logits(model, test, images);
  });
  s.predicted.resize(static_cast<std::size_t>(count));
  for (Eigen::Index i = 0; i < count; ++i) {
    int best = 0;
    for (Eigen::Index c = 1; c < s.logits.cols(); ++c)
      if (s.logits(i, c) > s.logits(i, best)) best = static_cast<int>(c);
    s.predicted[static_cast<std::size_t>(i)] = best;
    s.correct += best == test.labels[static_cast<std::size_t>(i)];
  }
  s.cp = clopper_pearson(static_cast<std::size_t>(s.correct), static_cast<std::size_t>(count));
  return s;
}

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
