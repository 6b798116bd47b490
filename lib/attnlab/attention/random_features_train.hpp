// Random feature attention, trainable: the UCU report's random Fourier features ("random-fourier") and
// Performer's FAVOR+ ("favor"), the definitions of random_features.hpp, with fixed per-head draws.
#pragma once

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "attnlab/attention/common_train.hpp"
#include "attnlab/attention/random_features.hpp"
#include "attnlab/attention/trainable.hpp"

namespace attnlab {

// The feature count both methods default to: attend's default (apps/attend.cpp, --features).
inline constexpr Eigen::Index kTrainDefaultFeatures = 256;

// What random-fourier's backward needs: the forward's passes (random_fourier_attention() in
// random_features.hpp), the keys, the values and the output.
template <typename T>
struct RandomFourierTape : AttentionTape, RandomFourierPasses<T> {
  Mat<T> k, v;          // n x d_k, n x d_v
  Mat<T> out;           // n x d_v
  // The backward's n x 2D and n x D scratch, kept with the tape so that a reused tape makes a step
  // allocate nothing (fresh blocks of this size come from mmap and cost page faults: 9 ms instead
  // of 0.7 ms per backward at n = 196, D = 256). Only backward writes them: one backward per tape
  // at a time.
  mutable Mat<T> scratch_dphi, scratch_dproj;
};

// The report's random feature attention (random_fourier_attention() in random_features.hpp) with
// temperature tau = sqrt(d_k) (or the `temperature` given) and w_r ~ N(0, I / tau): an unbiased estimate of
// the numerator and the denominator of softmax(q k^T / tau) v. The denominator is a signed estimate and can be near
// zero; the method has no protection against that, in training either (a loss that blows up is a
// finding about the method). One draw of D directions per head, from derive_seed(seed, head), kept
// as buffers: fixed for the whole training, never redrawn.
template <typename T>
class RandomFourierTrain final : public TrainableAttention<T> {
 public:
  // temperature 0: tau = sqrt(d_k), the trainer's (attend's --temperature for attnlab.attend_grad otherwise).
  RandomFourierTrain(const detail::TrainShape& shape, Eigen::Index features, std::uint64_t seed, double temperature = 0);
  std::string name() const override { return "random-fourier"; }
  std::string describe() const override;
  std::vector<std::string> buffer_names() const override;
  std::vector<Mat<T>*> buffers() override;
  void forward(Eigen::Index head, const Mat<T>& q, const Mat<T>& k, const Mat<T>& v, Mat<T>& out,
               std::unique_ptr<AttentionTape>* tape) const override;
  void backward(Eigen::Index head, const AttentionTape& tape, const Mat<T>& d_out, Mat<T>& d_q, Mat<T>& d_k,
                Mat<T>& d_v, std::vector<Mat<T>>* param_grads) const override;

 private:
  // tau in T: sqrt(d_k) computed in T as the trainer always has, or the temperature given.
  T tau(Eigen::Index d_k) const { return temperature_ > 0 ? static_cast<T>(temperature_) : std::sqrt(static_cast<T>(d_k)); }

  detail::TrainShape shape_;
  std::uint64_t seed_;
  double temperature_ = 0;
  std::vector<Mat<T>> w_;  // one D x d_k draw per head
};

// What FAVOR+'s backward needs: the forward's passes (favor_attention() in random_features.hpp), the values
// and the output.
template <typename T>
struct FavorTape : AttentionTape, FavorPasses<T> {
  Mat<T> v;    // n x d_v
  Mat<T> out;  // n x d_v
};

// Performer's FAVOR+ (favor_attention() in random_features.hpp): positive features
// exp(w^T x - |x|^2 / 2) / sqrt(D) of x = d_k^(-1/4) q and d_k^(-1/4) k, w orthogonal in blocks of d_k
// (draw_favor_features with orthogonal = true): an estimate of softmax(q k^T / sqrt(d_k)) v. One draw
// per head from derive_seed(seed, head), kept as buffers: fixed, never redrawn.
template <typename T>
class FavorTrain final : public TrainableAttention<T> {
 public:
  FavorTrain(const detail::TrainShape& shape, Eigen::Index features, std::uint64_t seed);
  std::string name() const override { return "favor"; }
  std::string describe() const override;
  std::vector<std::string> buffer_names() const override;
  std::vector<Mat<T>*> buffers() override;
  void forward(Eigen::Index head, const Mat<T>& q, const Mat<T>& k, const Mat<T>& v, Mat<T>& out,
               std::unique_ptr<AttentionTape>* tape) const override;
  void backward(Eigen::Index head, const AttentionTape& tape, const Mat<T>& d_out, Mat<T>& d_q, Mat<T>& d_k,
                Mat<T>& d_v, std::vector<Mat<T>>* param_grads) const override;

 private:
  detail::TrainShape shape_;
  std::uint64_t seed_;
  std::vector<Mat<T>> w_;  // one D x d_k draw per head
};

}  // namespace attnlab
