// Skew share of a trained layer's per-head W_Q W_K^T (claim R12): how far the bilinear form of the
// scores is from its symmetric part S_w.
#pragma once

#include <Eigen/Dense>
#include <cmath>
#include <vector>

#include "attnlab/core/matrix.hpp"
#include "attnlab/model/mha.hpp"
#include "attnlab/qk/qk_split.hpp"

namespace attnlab {

// One head's M = W_Q,h W_K,h^T and its split M = S_w + R_w, in double.
struct HeadSkew {
  double m_norm = 0;        // ||M||_F
  double skew_share = 0;    // ||R_w||_F / ||M||_F
  double split_residual = 0;  // | ||S_w||_F^2 + ||R_w||_F^2 - ||M||_F^2 | / ||M||_F^2 (0 but for rounding:
                              // S_w and R_w are orthogonal in the Frobenius inner product)
};

// The skew share of wq wk^T (both d x d_k, any precision), computed in double.
template <typename T>
HeadSkew qk_skew(const Mat<T>& wq, const Mat<T>& wk) {
  const Mat<double> m = qk_product<double>(wq.template cast<double>(), wk.template cast<double>());
  const double m2 = m.squaredNorm(), s2 = symmetric_part(m).squaredNorm(), r2 = skew_part(m).squaredNorm();
  HeadSkew out;
  out.m_norm = std::sqrt(m2);
  out.skew_share = m2 > 0 ? std::sqrt(r2 / m2) : 0.0;
  out.split_residual = m2 > 0 ? std::abs(s2 + r2 - m2) / m2 : 0.0;
  return out;
}

// Per head h of one layer (heads of width D / heads): the weights-only M = W_Q,h W_K,h^T (seed 000's M)
// and the augmented M~ = [W_Q,h; b_q,h^T] [W_K,h; b_k,h^T]^T ((D+1) x (D+1)), the bilinear form of the
// scores q_i^T k_j = [z_i 1] M~ [z_j 1]^T with the projections' biases (claim G2's augmentation). The
// symmetric attention method scores with the symmetric part of M~: that is what replacing M by S_w at
// inference does to this model.
struct LayerHeadSkew {
  HeadSkew weights, augmented;
};

template <typename T>
std::vector<LayerHeadSkew> layer_qk_skew(const MhaParams<T>& p, Eigen::Index heads) {
  const Eigen::Index D = p.Wq.rows(), dk = p.Wq.cols() / heads;
  std::vector<LayerHeadSkew> out;
  for (Eigen::Index h = 0; h < heads; ++h) {
    const Mat<T> wq = p.Wq.middleCols(h * dk, dk), wk = p.Wk.middleCols(h * dk, dk);
    Mat<T> wq_aug(D + 1, dk), wk_aug(D + 1, dk);
    wq_aug << wq, p.bq.segment(h * dk, dk).transpose();
    wk_aug << wk, p.bk.segment(h * dk, dk).transpose();
    out.push_back({qk_skew(wq, wk), qk_skew(wq_aug, wk_aug)});
  }
  return out;
}

}  // namespace attnlab
