// The data-parallel training step and the evaluation loop.
#include "attnlab/model/trainer.hpp"

#include "attnlab/model/recall_model.hpp"

#include <fmt/format.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <exception>
#include <limits>
#include <mutex>
#include <numeric>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>

namespace attnlab {

namespace {

// Eigen's own threading off while chunks run in parallel (each GEMM on one thread, the same
// kernel whatever the thread count); the previous setting restored on exit.
struct EigenSingleThreaded {
  int saved = Eigen::nbThreads();
  EigenSingleThreaded() { Eigen::setNbThreads(1); }
  ~EigenSingleThreaded() { Eigen::setNbThreads(saved); }
};

// Runs body(c) for c = 0 .. chunks-1 over OpenMP threads; the first exception is rethrown here.
template <typename Body>
void parallel_chunks(Eigen::Index chunks, const Body& body) {
  std::exception_ptr error;
  std::mutex mutex;
#pragma omp parallel for schedule(static)
  for (Eigen::Index c = 0; c < chunks; ++c) {
    try {
      body(c);
    } catch (...) {
      const std::lock_guard<std::mutex> lock(mutex);
      if (!error) error = std::current_exception();
    }
  }
  if (error) std::rethrow_exception(error);
}

}  // namespace

template <typename T, typename Model>
Trainer<T, Model>::Trainer(Model& model, const AdamOptions& adam) : model_(model), adam_(model.parameter_tensors(), adam) {}

template <typename T, typename Model>
Trainer<T, Model>::Trainer(Model& model, Adam<T> state) : model_(model), adam_(std::move(state)) {}

template <typename T, typename Model>
double Trainer<T, Model>::step(const typename Model::Data& data, std::span<const std::int64_t> batch, double lr) {
  const auto B = static_cast<Eigen::Index>(batch.size());
  if (B == 0) throw std::invalid_argument("Trainer::step: empty batch");
  const Eigen::Index chunks = (B + kChunkImages - 1) / kChunkImages;
  while (static_cast<Eigen::Index>(act_.size()) < chunks) {
    act_.emplace_back();
    grads_.push_back(model_.zero_grads());
    labels_.emplace_back();
    losses_.push_back(0.0);
  }
  // The views into each chunk's gradient buffers (stable: grads_ is not resized below).
  grad_refs_.clear();
  for (auto& g : grads_) grad_refs_.push_back(model_.gradient_tensors(g));

  // The labels first, chunk by chunk: the batch's mean is over its labelled rows (an image has one, a recall
  // sequence one per query), so every row's loss is scaled by 1 / their count.
  std::size_t rows = 0;
  for (Eigen::Index c = 0; c < chunks; ++c) {
    auto& labels = labels_[static_cast<std::size_t>(c)];
    labels.clear();
    const Eigen::Index first = c * kChunkImages, size = std::min(kChunkImages, B - first);
    for (Eigen::Index i = first; i < first + size; ++i) data.append_labels(batch[static_cast<std::size_t>(i)], labels);
    rows += labels.size();
  }
  const EigenSingleThreaded single;
  const double scale = 1.0 / static_cast<double>(rows);  // each chunk adds its share of the batch mean
  parallel_chunks(chunks, [&](Eigen::Index c) {
    const auto cu = static_cast<std::size_t>(c);
    const Eigen::Index first = c * kChunkImages, size = std::min(kChunkImages, B - first);
    const auto items = batch.subspan(static_cast<std::size_t>(first), static_cast<std::size_t>(size));
    for (auto& t : grad_refs_[cu]) Eigen::Map<Vec<T>>(t.data, t.size()).setZero();
    model_.set_inputs(act_[cu], data, items);
    losses_[cu] = model_.forward_backward(act_[cu], labels_[cu], scale, &grads_[cu]);
  });
  // The fixed reduction: chunk 0 += chunk 1, += chunk 2, ... in index order, tensor by tensor.
  double loss = losses_[0];
  for (Eigen::Index c = 1; c < chunks; ++c) {
    const auto cu = static_cast<std::size_t>(c);
    loss += losses_[cu];
    for (std::size_t i = 0; i < grad_refs_[0].size(); ++i)
      Eigen::Map<Vec<T>>(grad_refs_[0][i].data, grad_refs_[0][i].size()) +=
          Eigen::Map<const Vec<T>>(grad_refs_[cu][i].data, grad_refs_[cu][i].size());
  }
  // A non-finite loss or gradient would turn every weight Adam touches into NaN at once and leave nothing to
  // inspect: the step is refused instead, and the caller (fit) ends the run there with finite weights.
  last_step_applied_ = std::isfinite(loss);
  for (std::size_t i = 0; last_step_applied_ && i < grad_refs_[0].size(); ++i)
    last_step_applied_ = Eigen::Map<const Vec<T>>(grad_refs_[0][i].data, grad_refs_[0][i].size()).allFinite();
  if (!last_step_applied_) return loss;
  adam_.step(model_.parameter_tensors(), grad_refs_[0], lr);
  // From finite gradients Adam moves each weight by about lr at most: only an absurd rate overflows here.
  for (const auto& t : model_.parameter_tensors())
    if (!Eigen::Map<const Vec<T>>(t.data, t.size()).allFinite())
      throw std::runtime_error(fmt::format("Trainer::step: Adam's update at learning rate {:g} made {}", lr, t.name) +
                               " non-finite (from finite gradients)");
  return loss;
}

namespace {

// The summed cross-entropy of the rows of `logits` that are finite, and how many are not (an image's loss
// log sum_c exp(l_c) - l_label, shifted by the row's maximum so that no exp() overflows).
template <typename Derived>
std::pair<double, std::int64_t> finite_rows_loss(const Eigen::MatrixBase<Derived>& logits, std::span<const std::uint8_t> labels) {
  double sum = 0.0;
  std::int64_t bad = 0;
  for (Eigen::Index i = 0; i < logits.rows(); ++i) {
    if (!logits.row(i).allFinite()) {
      ++bad;
      continue;
    }
    const double top = static_cast<double>(logits.row(i).maxCoeff());
    double z = 0.0;
    for (Eigen::Index c = 0; c < logits.cols(); ++c) z += std::exp(static_cast<double>(logits(i, c)) - top);
    sum += std::log(z) + top - static_cast<double>(logits(i, labels[static_cast<std::size_t>(i)]));
  }
  return {sum, bad};
}

}  // namespace

template <typename Model>
Evaluation evaluate(const Model& model, const typename Model::Data& data, std::int64_t count) {
  const std::int64_t N = count < 0 ? data.count() : std::min(count, data.count());
  Evaluation e;
  if (N == 0) return e;
  const Eigen::Index chunks = (N + kChunkImages - 1) / kChunkImages;
  std::vector<double> losses(static_cast<std::size_t>(chunks));
  std::vector<std::int64_t> correct(static_cast<std::size_t>(chunks)), nonfinite(static_cast<std::size_t>(chunks)),
      rows(static_cast<std::size_t>(chunks));
  std::vector<typename Model::Activations> act(static_cast<std::size_t>(omp_get_max_threads()));
  const EigenSingleThreaded single;
  parallel_chunks(chunks, [&](Eigen::Index c) {
    auto& a = act[static_cast<std::size_t>(omp_get_thread_num())];
    const Eigen::Index first = c * kChunkImages, size = std::min<Eigen::Index>(kChunkImages, N - first);
    std::vector<std::int64_t> items(static_cast<std::size_t>(size));
    std::iota(items.begin(), items.end(), first);
    std::vector<std::uint8_t> labels;
    for (std::int64_t i : items) data.append_labels(i, labels);
    model.set_inputs(a, data, items);
    const auto cu = static_cast<std::size_t>(c);
    losses[cu] = model.forward_backward(a, labels, 1.0, nullptr);
    // The model's own loss where every logit is finite (the usual case, its bits unchanged); else the
    // finite rows' loss, and the others counted.
    if (!a.logits.allFinite()) std::tie(losses[cu], nonfinite[cu]) = finite_rows_loss(a.logits, labels);
    std::int64_t right = 0;
    for (Eigen::Index i = 0; i < a.logits.rows(); ++i) {
      if (!a.logits.row(i).allFinite()) continue;
      Eigen::Index arg = 0;
      a.logits.row(i).maxCoeff(&arg);
      right += arg == labels[static_cast<std::size_t>(i)] ? 1 : 0;
    }
    correct[cu] = right;
    rows[cu] = static_cast<std::int64_t>(labels.size());
  });
  double loss = 0.0;
  for (std::size_t c = 0; c < losses.size(); ++c) {
    loss += losses[c];
    e.correct += correct[c];
    e.nonfinite += nonfinite[c];
    e.count += rows[c];
  }
  e.loss = e.nonfinite < e.count ? loss / static_cast<double>(e.count - e.nonfinite) : std::numeric_limits<double>::quiet_NaN();
  return e;
}

template <typename Model>
Mat<typename Model::Scalar> predict_logits(const Model& model, const typename Model::Data& data,
                                           std::span<const std::int64_t> items) {
  const auto N = static_cast<Eigen::Index>(items.size());
  typename Model::Activations a;
  std::vector<Mat<typename Model::Scalar>> chunks;
  std::vector<std::uint8_t> labels;  // only for append_labels' check of each index
  Eigen::Index rows = 0;
  for (Eigen::Index first = 0; first < N; first += kChunkImages) {
    const Eigen::Index size = std::min(kChunkImages, N - first);
    const auto chunk = items.subspan(static_cast<std::size_t>(first), static_cast<std::size_t>(size));
    for (std::int64_t i : chunk) data.append_labels(i, labels);
    model.set_inputs(a, data, chunk);
    model.forward_backward(a, {}, 1.0, nullptr);
    chunks.push_back(a.logits);
    rows += a.logits.rows();
  }
  Mat<typename Model::Scalar> out(rows, chunks.empty() ? 0 : chunks.front().cols());
  Eigen::Index at = 0;
  for (const auto& c : chunks) {
    out.middleRows(at, c.rows()) = c;
    at += c.rows();
  }
  return out;
}

// The models trained here, in float (the experiments) and double (the checks and the score probe).
#define ATTNLAB_TRAINED_MODEL(T, M)                                                                     \
  template class Trainer<T, M>;                                                                       \
  template Evaluation evaluate<M>(const M&, const M::Data&, std::int64_t);                            \
  template Mat<T> predict_logits<M>(const M&, const M::Data&, std::span<const std::int64_t>);
ATTNLAB_TRAINED_MODEL(float, ViT<float>)
ATTNLAB_TRAINED_MODEL(double, ViT<double>)
ATTNLAB_TRAINED_MODEL(float, PixelLogistic<float>)
ATTNLAB_TRAINED_MODEL(double, PixelLogistic<double>)
ATTNLAB_TRAINED_MODEL(float, RecallModel<float>)
ATTNLAB_TRAINED_MODEL(double, RecallModel<double>)
#undef ATTNLAB_TRAINED_MODEL

}  // namespace attnlab
