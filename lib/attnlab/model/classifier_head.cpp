// The classifier head and the loss: forward and backward.
#include "attnlab/model/classifier_head.hpp"

#include <cmath>
#include <stdexcept>
#include <string>

#include "attnlab/model/linear.hpp"

namespace attnlab {

template <typename T>
void classifier_forward(const Mat<T>& x, Eigen::Index n, const Mat<T>& W, const Vec<T>& b, Mat<T>& pooled,
                        Mat<T>& logits) {
  const Eigen::Index B = x.rows() / n;
  // pass 1: mean over each image's tokens (no class token).
  pooled.resize(B, x.cols());
  for (Eigen::Index i = 0; i < B; ++i) pooled.row(i) = x.middleRows(i * n, n).colwise().sum() / static_cast<T>(n);
  // pass 2: the logits.
  linear_forward(pooled, W, b, logits);
}

template <typename T>
void classifier_backward(const Mat<T>& pooled, Eigen::Index n, const Mat<T>& W, const Mat<T>& dlogits, Mat<T>& dx,
                         Mat<T>& dW, Vec<T>& db) {
  Mat<T> dpooled;
  linear_backward(pooled, W, dlogits, &dpooled, dW, db);
  // Each of the n tokens contributed 1/n of the mean.
  const Eigen::Index B = pooled.rows();
  dx.resize(B * n, pooled.cols());
  for (Eigen::Index i = 0; i < B; ++i)
    dx.middleRows(i * n, n).rowwise() = dpooled.row(i) / static_cast<T>(n);
}

template <typename T>
double cross_entropy(const Mat<T>& logits, std::span<const std::uint8_t> labels, double scale, Mat<T>* dlogits) {
  const Eigen::Index B = logits.rows(), C = logits.cols();
  if (static_cast<Eigen::Index>(labels.size()) != B)
    throw std::invalid_argument("cross_entropy: " + std::to_string(labels.size()) + " labels for " +
                                std::to_string(B) + " rows");
  if (dlogits != nullptr) dlogits->resize(B, C);
  double loss = 0.0;
  for (Eigen::Index i = 0; i < B; ++i) {
    const auto y = static_cast<Eigen::Index>(labels[static_cast<std::size_t>(i)]);
    if (y >= C) throw std::invalid_argument("cross_entropy: label " + std::to_string(y) + " >= classes " + std::to_string(C));
    // log-sum-exp with the row maximum subtracted: every exponent <= 0, the largest term exactly 1.
    const double m = static_cast<double>(logits.row(i).maxCoeff());
    double sum = 0.0;
    for (Eigen::Index c = 0; c < C; ++c) sum += std::exp(static_cast<double>(logits(i, c)) - m);
    const double log_z = m + std::log(sum);
    loss += log_z - static_cast<double>(logits(i, y));
    if (dlogits != nullptr)
      for (Eigen::Index c = 0; c < C; ++c)
        (*dlogits)(i, c) = static_cast<T>(scale * (std::exp(static_cast<double>(logits(i, c)) - log_z) - (c == y ? 1.0 : 0.0)));
  }
  return scale * loss;
}

template void classifier_forward<float>(const Mat<float>&, Eigen::Index, const Mat<float>&, const Vec<float>&,
                                        Mat<float>&, Mat<float>&);
template void classifier_forward<double>(const Mat<double>&, Eigen::Index, const Mat<double>&, const Vec<double>&,
                                         Mat<double>&, Mat<double>&);
template void classifier_backward<float>(const Mat<float>&, Eigen::Index, const Mat<float>&, const Mat<float>&,
                                         Mat<float>&, Mat<float>&, Vec<float>&);
template void classifier_backward<double>(const Mat<double>&, Eigen::Index, const Mat<double>&, const Mat<double>&,
                                          Mat<double>&, Mat<double>&, Vec<double>&);
template double cross_entropy<float>(const Mat<float>&, std::span<const std::uint8_t>, double, Mat<float>*);
template double cross_entropy<double>(const Mat<double>&, std::span<const std::uint8_t>, double, Mat<double>*);

}  // namespace attnlab
