// The score probe: exact attention that records S and dL/dS per head and adds given offsets to S.
#include "attnlab/model/analysis/score_probe.hpp"

#include <cmath>
#include <stdexcept>
#include <string>

#include "attnlab/attention/common_train.hpp"
#include "attnlab/attention/exact_train.hpp"

namespace attnlab {

namespace {

// Exact attention, pass for pass as ExactTrain (the same operations in the same order, so with no offset
// its outputs and gradients are bit-identical to the trained model's: verify/test_score_probe.cpp),
// plus three probe steps: record S, add the offset, record dL/dS.
template <typename T>
class ProbingExact final : public TrainableAttention<T> {
 public:
  ProbingExact(const detail::TrainShape& shape, ScoreProbeLayer<T>* layer) : shape_(shape), layer_(layer) {
    layer_->offsets.assign(static_cast<std::size_t>(shape.heads), Mat<T>());
    layer_->s.assign(static_cast<std::size_t>(shape.heads), Mat<T>());
    layer_->g.assign(static_cast<std::size_t>(shape.heads), Mat<T>());
  }
  std::string name() const override { return "exact"; }
  std::string describe() const override { return "exact (score probe)"; }

  void forward(Eigen::Index head, const Mat<T>& q, const Mat<T>& k, const Mat<T>& v, Mat<T>& out,
               std::unique_ptr<AttentionTape>* tape) const override {
    detail::check_train_call("score probe", shape_, head, q, k, v);
    const auto h = static_cast<std::size_t>(head);
    const T scale = T(1) / std::sqrt(static_cast<T>(q.cols()));
    std::unique_ptr<ExactTape<T>> local;
    auto& t = detail::reuse_tape(tape, local);
    Mat<T>& pt = t.pt;  // (n_keys, n_queries) = S^T, then P^T
    pt.resize(k.rows(), q.rows());
    // pass 1: S^T = K Q^T / sqrt(d_k), recorded as S.
    pt.noalias() = k * q.transpose();
    pt *= scale;
    layer_->s[h] = pt.transpose();
    // probe: S + offset.
    const Mat<T>& offset = layer_->offsets[h];
    if (offset.size() != 0) {
      if (offset.rows() != shape_.n || offset.cols() != shape_.n)
        throw std::invalid_argument("score probe: offset of head " + std::to_string(head) + " is " +
                                    std::to_string(offset.rows()) + " x " + std::to_string(offset.cols()) +
                                    ", the scores are " + std::to_string(shape_.n) + " x " + std::to_string(shape_.n));
      pt += offset.transpose();
    }
    // pass 2: softmax of each column (max-subtracted, as in ExactTrain).
    detail::softmax_cols_inplace(pt);
    // pass 3: out = P V.
    out.resize(q.rows(), v.cols());
    out.noalias() = pt.transpose() * v;
    if (tape != nullptr) {
      t.q = q;
      t.k = k;
      t.v = v;
    }
  }

  void backward(Eigen::Index head, const AttentionTape& tape, const Mat<T>& d_out, Mat<T>& d_q, Mat<T>& d_k,
                Mat<T>& d_v, std::vector<Mat<T>>* /*no parameters*/) const override {
    const auto& t = detail::tape_as<ExactTape<T>>("score probe", tape);
    detail::check_train_call("score probe", shape_, head, t.q, t.k, t.v);
    detail::check_train_d_out("score probe", shape_, d_out);
    const T scale = T(1) / std::sqrt(static_cast<T>(t.q.cols()));
    // pass 1: dV = P^T dO.
    d_v.resize(t.v.rows(), t.v.cols());
    d_v.noalias() = t.pt * d_out;
    // pass 2: dP^T = V dO^T.
    Mat<T> dst(t.k.rows(), t.q.rows());
    dst.noalias() = t.v * d_out.transpose();
    // pass 3: dS^T through the softmax, recorded as dS.
    detail::softmax_cols_backward_inplace(t.pt, dst);
    layer_->g[static_cast<std::size_t>(head)] = dst.transpose();
    // pass 4: dQ = dS K / sqrt(d_k), dK = dS^T Q / sqrt(d_k).
    d_q.resize(t.q.rows(), t.q.cols());
    d_q.noalias() = dst.transpose() * t.k;
    d_q *= scale;
    d_k.resize(t.k.rows(), t.k.cols());
    d_k.noalias() = dst * t.q;
    d_k *= scale;
  }

 private:
  detail::TrainShape shape_;
  ScoreProbeLayer<T>* layer_;  // owned by the ScoreProbe; written by const calls (one image at a time)
};

}  // namespace

template <typename T, typename Model>
ScoreProbe<T, Model>::ScoreProbe(const Model& model) {
  for (Eigen::Index l = 0; l < model.config().layers; ++l)
    if (model.attention(l).name() != "exact")
      throw std::invalid_argument("score probe: layer " + std::to_string(l) + " uses " + model.attention(l).name() +
                                  " attention; the probe needs exact attention in every layer");
  model_ = std::make_unique<Model>(model.config(), [this](const TrainableAttentionConfig& c) {
    layers_.push_back(std::make_unique<ScoreProbeLayer<T>>());
    return std::make_unique<ProbingExact<T>>(detail::TrainShape{c.n, c.d_k, c.d_v, c.heads}, layers_.back().get());
  });
  model_->params() = model.params();
  scratch_ = model_->zero_grads();
}

template <typename T, typename Model>
void ScoreProbe<T, Model>::load_item(const Data& data, std::int64_t item) {
  if (item < 0 || item >= data.count())
    throw std::out_of_range("score probe: item " + std::to_string(item) + " outside 0.." + std::to_string(data.count() - 1));
  const std::int64_t one[1] = {item};
  model_->set_inputs(act_, data, one);
  labels_.clear();
  data.append_labels(item, labels_);
}

template <typename T, typename Model>
double ScoreProbe<T, Model>::run(const Data& data, std::int64_t item, double scale, ImageScores<T>& out,
                                 typename Model::Grads* grads) {
  load_item(data, item);
  for (auto& layer : layers_)
    for (auto& o : layer->offsets) o.resize(0, 0);
  const double loss = model_->forward_backward(act_, labels_, scale, grads != nullptr ? grads : &scratch_);
  const auto L = layers_.size();
  out.z.resize(L);
  out.s.resize(L);
  out.g.resize(L);
  for (std::size_t l = 0; l < L; ++l) {
    out.z[l] = act_.blocks[l].ln1_out;
    out.s[l] = layers_[l]->s;
    out.g[l] = layers_[l]->g;
  }
  return loss;
}

template <typename T, typename Model>
double ScoreProbe<T, Model>::loss_with_offsets(const Data& data, std::int64_t item, Eigen::Index layer,
                                               const std::vector<Mat<T>>& offsets, double scale) {
  if (layer < 0 || layer >= static_cast<Eigen::Index>(layers_.size()))
    throw std::invalid_argument("score probe: layer " + std::to_string(layer) + " outside [0, " +
                                std::to_string(layers_.size()) + ")");
  if (offsets.size() != static_cast<std::size_t>(model_->config().heads))
    throw std::invalid_argument("score probe: " + std::to_string(offsets.size()) + " offsets for " +
                                std::to_string(model_->config().heads) + " heads");
  load_item(data, item);
  for (std::size_t l = 0; l < layers_.size(); ++l)
    for (std::size_t h = 0; h < layers_[l]->offsets.size(); ++h)
      if (static_cast<Eigen::Index>(l) == layer)
        layers_[l]->offsets[h] = offsets[h];
      else
        layers_[l]->offsets[h].resize(0, 0);
  const double loss = model_->forward_backward(act_, labels_, scale, nullptr);
  for (auto& o : layers_[static_cast<std::size_t>(layer)]->offsets) o.resize(0, 0);
  return loss;
}

template class ScoreProbe<float>;
template class ScoreProbe<double>;
template class ScoreProbe<float, RecallModel<float>>;
template class ScoreProbe<double, RecallModel<double>>;

}  // namespace attnlab
