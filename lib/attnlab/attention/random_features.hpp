// Random feature attention: the UCU report's random Fourier features (Rahimi & Recht; RFA) and
// Performer's FAVOR+ positive (orthogonal) random features. The draws are explicit values.
#pragma once

#include <Eigen/Dense>

#include "attnlab/core/head_stack.hpp"
#include "attnlab/core/matrix.hpp"
#include "attnlab/core/rng.hpp"

namespace attnlab {

// One draw of D random directions in R^d, kept as a value so that tests and tools can reuse
// exactly the same features (all heads of a stack share one draw, as in Performer).
struct RandomFeatureDraw {
  Eigen::MatrixXd w;         // D x d: row r is w_r
  double stddev = 1.0;       // each w_r is N(0, stddev^2 I) marginally
  bool orthogonal = false;   // rows orthogonal within blocks of d (FAVOR+'s ORF)
  Eigen::Index features() const { return w.rows(); }
  Eigen::Index dim() const { return w.cols(); }
};

// w_r ~ N(0, stddev^2 I_d), r = 1..D, independent. The report's Theorem 3 writes
// w ~ N(0, sigma^2 I): then E[phi(x).phi(y)] = E[cos(w.(x - y))] = exp(-stddev^2 ||x - y||^2 / 2).
// Throws std::invalid_argument for d < 1, D < 1 or stddev not positive and finite.
RandomFeatureDraw draw_fourier_features(Eigen::Index d, Eigen::Index D, double stddev, Rng& rng);

// Performer's directions: rows N(0, I_d) marginally; with `orthogonal`, rows come in blocks of
// d mutually orthogonal directions (a Haar orthogonal matrix with each row rescaled to the norm
// of an independent N(0, I_d) vector, so every row is still exactly N(0, I_d)).
RandomFeatureDraw draw_favor_features(Eigen::Index d, Eigen::Index D, bool orthogonal, Rng& rng);

// phi(x) = sqrt(1/D) [sin(w_1.x) .. sin(w_D.x), cos(w_1.x) .. cos(w_D.x)] for each row x of X
// (n x d): n x 2D. phi(x).phi(y) is an unbiased estimate of exp(-stddev^2 ||x - y||^2 / 2).
template <typename T>
Mat<T> fourier_features(const Mat<T>& x, const RandomFeatureDraw& draw);
// The same map with the directions given in T (w: D x d), written into phi (resized here): the one
// implementation of the features, which the attention below and the trainable random-fourier call.
template <typename T>
void fourier_features(const Mat<T>& x, const Mat<T>& w, Mat<T>& phi);

// Performer's positive features phi+(x) = exp(w_r.x - ||x||^2 / 2) / sqrt(D), n x D, without
// any rescaling: phi+(x).phi+(y) is an unbiased estimate of exp(x.y). For estimator checks; the
// attention below uses a rescaled, overflow-free form.
template <typename T>
Mat<T> favor_features(const Mat<T>& x, const RandomFeatureDraw& draw);

// The report's random feature attention with the factors of its derivation:
// exp(q.k / tau) = exp(||q||^2 / 2 tau) exp(||k||^2 / 2 tau) exp(-||q - k||^2 / 2 tau), the
// last factor replaced by phi(q).phi(k) with `draw`'s features, tau = `temperature` (the
// report's sigma^2). Unbiased (numerator and denominator separately) for softmax(Q K^T / tau) V
// when draw.stddev = 1 / sqrt(tau); softmax attention is tau = sqrt(d). The denominator is a
// signed estimate and can be near zero: the method has no protection against that.
template <typename T>
Mat<T> random_fourier_attention(const Mat<T>& q, const Mat<T>& k, const Mat<T>& v, const RandomFeatureDraw& draw,
                                double temperature);

// The first-order (delta-method) prediction of random_fourier_attention()'s relative Frobenius output error with
// `features` = D directions w ~ N(0, I / tau), tau = `temperature`: its kernel estimates phi(q_i).phi(k_j) of
// kappa_ij = exp(-||q_i - k_j||^2 / 2 tau) are means of D cosines, each of variance at most 1, so output row i
// (a ratio of two weighted sums) is off by about
//   sqrt(sum_j b_j^2 ||v_j - s_i||^2 / D) / sum_j b_j kappa_ij,   b_j = exp(||k_j||^2 / 2 tau),
// with s_i the exact output softmax(q_i K^T / tau) V and b_j kappa_ij = exp((q_i.k_j - ||q_i||^2 / 2) / tau). The
// prediction pi is the root of the sum of these squares over the rows, over ||S||_F. The keys' factors b_j grow
// like exp(||k||^2 / 2 tau): wherever keys are long against the temperature, few features suffice for nothing.
// Computed with shifted exponents (no overflow before pi itself does). Throws std::invalid_argument for
// mismatched shapes, features < 1 or a temperature that is not positive and finite.
double random_fourier_predicted_error(const Mat<double>& q, const Mat<double>& k, const Mat<double>& v,
                                      Eigen::Index features, double temperature);

// What random Fourier attention's passes produce on the way (the trainable random-fourier keeps it for its
// backward); D features, 2D columns of sin and cos.
template <typename T>
struct RandomFourierPasses {
  Mat<T> phi_q;   // n_q x 2D: sqrt(1/D) [sin(q W^T), cos(q W^T)]
  Mat<T> phi_k;   // n_k x 2D: the same for k, before the key factors
  Vec<T> b;       // n_k: the key factors exp((|k_j|^2 - max) / 2 tau)
  Mat<T> phi_kb;  // n_k x 2D: diag(b) phi_k
  Mat<T> ctx;     // 2D x d_v: phi_kb^T V
  Vec<T> z;       // 2D: phi_kb^T 1
  Vec<T> den;     // n_q: phi_q z (signed)
};

// The same with the directions w (D x d) in T and tau = `temperature` (positive; unchecked), keeping the
// passes in *passes when given (every buffer resized): the forward of random Fourier attention, written once.
template <typename T>
Mat<T> random_fourier_attention(const Mat<T>& q, const Mat<T>& k, const Mat<T>& v, const Mat<T>& w, T temperature,
                                RandomFourierPasses<T>* passes = nullptr);

// Performer's FAVOR+ estimate of softmax(Q K^T / sqrt(d)) V with positive features of `draw`
// (whose dim() must be d): inputs scaled by d^(-1/4) so that exp(x.y) = exp(q.k / sqrt(d)).
template <typename T>
Mat<T> favor_attention(const Mat<T>& q, const Mat<T>& k, const Mat<T>& v, const RandomFeatureDraw& draw);

// What FAVOR+'s passes produce on the way (the trainable favor keeps it for its backward); D features.
template <typename T>
struct FavorPasses {
  Mat<T> yk;      // n_k x d: d^(-1/4) k
  Mat<T> r;       // n_k x D: the key features normalised over the keys (0 for features no key reaches)
  Mat<T> mean_v;  // D x d_v: r^T V, the mean value of each feature
  Mat<T> w_t;     // D x n_q: column i is query i's normalised weights over the features
};

// The same with the directions w (D x d) in T, keeping the passes in *passes when given (every buffer
// resized): the forward of FAVOR+, written once. Written as two softmaxes, so that no exp() overflows and no denominator
// underflows whatever the logits: with a_jr = w_r . y_j - |y_j|^2 / 2 (y = d^(-1/4) k) and
// b_ir = w_r . d^(-1/4) q_i,
//   out_i = sum_r exp(b_ir) sum_j exp(a_jr) v_j / sum_r exp(b_ir) sum_j exp(a_jr)
//         = sum_r softmax_r(b_ir + LSE_r) mean_v_r,  LSE_r = log sum_j exp(a_jr) (FAVOR's log-sum),
//   mean_v_r = sum_j softmax_j(a_jr) v_j  (a softmax over the keys, per feature).
// The queries' exp(-|x|^2 / 2) and 1/sqrt(D) are per-query constants and cancel; they are never formed.
template <typename T>
Mat<T> favor_attention(const Mat<T>& q, const Mat<T>& k, const Mat<T>& v, const Mat<T>& w,
                       FavorPasses<T>* passes = nullptr);

template <typename T>
HeadStack<T> random_fourier_attention(const HeadStack<T>& q, const HeadStack<T>& k, const HeadStack<T>& v,
                                      const RandomFeatureDraw& draw, double temperature);
template <typename T>
HeadStack<T> favor_attention(const HeadStack<T>& q, const HeadStack<T>& k, const HeadStack<T>& v,
                             const RandomFeatureDraw& draw);

}  // namespace attnlab
