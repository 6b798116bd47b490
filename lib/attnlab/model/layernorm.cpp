// LayerNorm: forward and backward.
#include "attnlab/model/layernorm.hpp"

#include <cmath>

namespace attnlab {

template <typename T>
void layernorm_forward(const Mat<T>& x, const Vec<T>& gamma, const Vec<T>& beta, Mat<T>& y, LayerNormTape<T>& tape) {
  // x (N, D). The matrices are column-major with one token per row, so every per-row statistic is a
  // partial reduction across columns, which Eigen vectorises over the rows.
  const auto D = static_cast<T>(x.cols());
  // pass 1: the row means, then the centred input (kept in xhat, normalised in place below).
  const Vec<T> mean = x.rowwise().sum() / D;
  tape.xhat.resize(x.rows(), x.cols());
  tape.xhat.noalias() = x.colwise() - mean;
  // pass 2: biased variance (PyTorch's), then 1/sqrt(var + eps).
  tape.rstd = (tape.xhat.array().square().rowwise().sum() / D + static_cast<T>(kLayerNormEps)).rsqrt().matrix();
  tape.xhat.array().colwise() *= tape.rstd.array();
  // pass 3: scale and shift, per column.
  y.resize(x.rows(), x.cols());
  y.array() = (tape.xhat.array().rowwise() * gamma.transpose().array()).rowwise() + beta.transpose().array();
}

template <typename T>
void layernorm_backward(const Mat<T>& dy, const LayerNormTape<T>& tape, const Vec<T>& gamma, Mat<T>& dx,
                        Vec<T>& dgamma, Vec<T>& dbeta) {
  const auto D = static_cast<T>(dy.cols());
  // pass 1: the affine part's gradients, summed over tokens.
  dgamma.array() += (dy.array() * tape.xhat.array()).colwise().sum().transpose();
  dbeta.noalias() += dy.colwise().sum().transpose();
  // pass 2: g = dy * gamma is the gradient w.r.t. xhat. Through xhat = (x - mean) * rstd:
  //   dx = rstd * (g - mean_row(g) - xhat * mean_row(g * xhat))
  // (the two means are the derivatives through the row mean and through rstd).
  dx.resize(dy.rows(), dy.cols());
  dx.array() = dy.array().rowwise() * gamma.transpose().array();
  const Vec<T> mean_g = dx.rowwise().sum() / D;
  const Vec<T> mean_gx = (dx.array() * tape.xhat.array()).rowwise().sum().matrix() / D;
  dx.array() = ((dx.array().colwise() - mean_g.array()) - tape.xhat.array().colwise() * mean_gx.array()).colwise() *
               tape.rstd.array();
}

template void layernorm_forward<float>(const Mat<float>&, const Vec<float>&, const Vec<float>&, Mat<float>&,
                                       LayerNormTape<float>&);
template void layernorm_forward<double>(const Mat<double>&, const Vec<double>&, const Vec<double>&, Mat<double>&,
                                        LayerNormTape<double>&);
template void layernorm_backward<float>(const Mat<float>&, const LayerNormTape<float>&, const Vec<float>&, Mat<float>&,
                                        Vec<float>&, Vec<float>&);
template void layernorm_backward<double>(const Mat<double>&, const LayerNormTape<double>&, const Vec<double>&,
                                         Mat<double>&, Vec<double>&, Vec<double>&);

}  // namespace attnlab
