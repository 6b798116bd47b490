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

// Performer's FAVOR+ estimate of softmax(Q K^T / sqrt(d)) V with positive features of `draw`
// (whose dim() must be d): inputs scaled by d^(-1/4) so that exp(x.y) = exp(q.k / sqrt(d)).
template <typename T>
Mat<T> favor_attention(const Mat<T>& q, const Mat<T>& k, const Mat<T>& v, const RandomFeatureDraw& draw);

template <typename T>
HeadStack<T> random_fourier_attention(const HeadStack<T>& q, const HeadStack<T>& k, const HeadStack<T>& v,
                                      const RandomFeatureDraw& draw, double temperature);
template <typename T>
HeadStack<T> favor_attention(const HeadStack<T>& q, const HeadStack<T>& k, const HeadStack<T>& v,
                             const RandomFeatureDraw& draw);

}  // namespace attnlab
