// Helpers shared by the model checks: central finite differences with a scaled ratio, and a small
// test-only attention method (exact softmax with a learned temperature) so the layers and the model
// can be checked without depending on any library method.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "attnlab/attention/trainable.hpp"
#include "attnlab/core/matrix.hpp"
#include "attnlab/core/rng.hpp"
#include "support.hpp"

namespace attnlab::testing {

// L = sum(R .* y), the loss of the finite-difference checks: its gradient w.r.t. y is R, a random direction
// that exercises every output entry.
inline double dot_loss(const Mat<double>& r, const Mat<double>& y) { return (r.array() * y.array()).sum(); }

// The base seed of the model checks (ATTNLAB_TEST_SEED overrides it).
inline const std::uint64_t kModelTestSeed = test_seed(20251125);

// Central differences in double, step h = 1e-5 on inputs of unit scale, Richardson-extrapolated:
// D(h) = (L(x + h) - L(x - h)) / 2h = L' + h^2 L'''/6 + O(h^4), so (4 D(h) - D(2h)) / 3 = L' + O(h^4 L^(5)).
// Why not D(h) alone: its h^2 |L'''| / 6 ~ 2e-11 |L'''| is small only while L''' is; LayerNorm over D = 2
// values whose two entries nearly coincide computes +-delta / sqrt(delta^2 + eps), whose third derivative
// grows like 1 / delta^4, and plain central differences missed by 1.07e-6 there (N 12, D 2 with
// ATTNLAB_TEST_SEED=1 ATTNLAB_TEST_REPEAT=10) for a correct backward. Extrapolated, the truncation error is
// (h / delta)^2 times smaller again. Rounding adds about 1.5 eps |L| / h ~ 3e-11 |L|. Both are far below 1e-6
// of the gradient's largest entry for the O(1) losses used here, while a wrong backward (a missing term, a
// transposed index, a factor) is off by a ratio of order one. kFdTolerance leaves a factor of >= 30 to the
// expected error.
inline constexpr double kFdStep = 1e-5;
inline constexpr double kFdTolerance = 1e-6;

// The scaled ratio max_i |fd_i - analytic_i| / max(max_i |analytic_i|, max_i |fd_i|, 1e-3 max(1, |L|)) over
// the entries `which` of the parameter (all entries when `which` is empty). loss() re-evaluates the loss
// with the parameter's current values. The floor 1e-3 |L| makes a gradient that is zero in exact
// arithmetic (a key bias under softmax, LayerNorm over 2 values) compare absolutely: finite differences
// then measure rounding, about 1.5 eps |L| / h ~ 3e-11 |L|, a ratio of 3e-8, still 30 times below the tolerance.
inline double fd_ratio(double* param, const double* analytic, Eigen::Index size, const std::function<double()>& loss,
                       const std::vector<Eigen::Index>& which = {}) {
  std::vector<Eigen::Index> entries = which;
  if (entries.empty())
    for (Eigen::Index i = 0; i < size; ++i) entries.push_back(i);
  double worst = 0.0, scale = 1e-3 * std::max(1.0, std::abs(loss()));
  for (Eigen::Index i : entries) {
    const double saved = param[i];
    const auto central = [&](double h) {
      param[i] = saved + h;
      const double up = loss();
      param[i] = saved - h;
      const double down = loss();
      param[i] = saved;
      return (up - down) / (2 * h);
    };
    const double fd = (4 * central(kFdStep) - central(2 * kFdStep)) / 3;
    worst = std::max(worst, std::abs(fd - analytic[i]));
    scale = std::max({scale, std::abs(fd), std::abs(analytic[i])});
  }
  return worst / scale;
}

template <typename Derived, typename Derived2>
double fd_ratio(Eigen::MatrixBase<Derived>& param, const Eigen::MatrixBase<Derived2>& analytic,
                const std::function<double()>& loss, const std::vector<Eigen::Index>& which = {}) {
  return fd_ratio(param.derived().data(), analytic.derived().data(), param.size(), loss, which);
}

// Up to `count` distinct entry indices of a tensor of `size` entries, drawn with rng (all when size <= count).
inline std::vector<Eigen::Index> sample_entries(Eigen::Index size, Eigen::Index count, Rng& rng) {
  std::vector<Eigen::Index> all(static_cast<std::size_t>(size));
  for (Eigen::Index i = 0; i < size; ++i) all[static_cast<std::size_t>(i)] = i;
  if (size <= count) return all;
  for (Eigen::Index i = 0; i < count; ++i) {
    const auto j = i + static_cast<Eigen::Index>(rng.uniform() * static_cast<double>(size - i));
    std::swap(all[static_cast<std::size_t>(i)], all[static_cast<std::size_t>(j)]);
  }
  all.resize(static_cast<std::size_t>(count));
  return all;
}

// The model checks' sizes: edge sizes 1, 2, 3 and one random size in [4, 12] (support.hpp, test_sizes).
inline std::vector<Eigen::Index> model_test_sizes(Rng& rng) { return test_sizes(rng, {4, 12}, 1); }

// out = softmax(t q k^T / sqrt(d_k)) v with a learned scalar temperature t (a 1 x 1 parameter, init 1),
// written out directly: the test's stand-in for a method with parameters of its own.
template <typename T>
class TemperatureSoftmaxAttention final : public TrainableAttention<T> {
 public:
  struct Tape final : AttentionTape {
    Mat<T> q, k, v, p;
  };
  TemperatureSoftmaxAttention() : t_(Mat<T>::Constant(1, 1, T(1))) {}
  std::string name() const override { return "test-temperature-softmax"; }
  std::string describe() const override { return "softmax(t q k^T / sqrt(d_k)) v, learned t (test only)"; }
  std::vector<std::string> parameter_names() const override { return {"t"}; }
  std::vector<Mat<T>*> parameters() override { return {&t_}; }
  void forward(Eigen::Index, const Mat<T>& q, const Mat<T>& k, const Mat<T>& v, Mat<T>& out,
               std::unique_ptr<AttentionTape>* tape) const override {
    const T c = t_(0, 0) / std::sqrt(static_cast<T>(q.cols()));
    Mat<T> p = c * q * k.transpose();
    for (Eigen::Index i = 0; i < p.rows(); ++i) {
      p.row(i).array() = (p.row(i).array() - p.row(i).maxCoeff()).exp();
      p.row(i) /= p.row(i).sum();
    }
    out = p * v;
    if (tape != nullptr) {
      auto tp = std::make_unique<Tape>();
      tp->q = q;
      tp->k = k;
      tp->v = v;
      tp->p = std::move(p);
      *tape = std::move(tp);
    }
  }
  void backward(Eigen::Index, const AttentionTape& tape_base, const Mat<T>& d_out, Mat<T>& d_q, Mat<T>& d_k,
                Mat<T>& d_v, std::vector<Mat<T>>* param_grads) const override {
    const auto& tp = dynamic_cast<const Tape&>(tape_base);
    const T inv_sqrt = T(1) / std::sqrt(static_cast<T>(tp.q.cols()));
    d_v = tp.p.transpose() * d_out;
    const Mat<T> dp = d_out * tp.v.transpose();
    // Softmax backward per row: ds = p * (dp - sum_j p_j dp_j); ds is dL/d(scores), scores = t qk^T/sqrt(d_k).
    Mat<T> ds = tp.p.array() * (dp.array().colwise() - (dp.array() * tp.p.array()).rowwise().sum());
    if (param_grads != nullptr && !param_grads->empty())
      (*param_grads)[0](0, 0) += (ds.array() * (tp.q * tp.k.transpose()).array()).sum() * inv_sqrt;
    ds *= t_(0, 0) * inv_sqrt;
    d_q = ds * tp.k;
    d_k = ds.transpose() * tp.q;
  }

 private:
  Mat<T> t_;
};

}  // namespace attnlab::testing
