// Linear layer y = x W + b: forward and backward.
#include "attnlab/model/linear.hpp"

namespace attnlab {

template <typename T>
void linear_forward(const Mat<T>& x, const Mat<T>& W, const Vec<T>& b, Mat<T>& y) {
  // x (N, in), W (in, out), b (out) -> y (N, out); one GEMM, then the bias broadcast over rows.
  y.resize(x.rows(), W.cols());
  y.noalias() = x * W;
  y.rowwise() += b.transpose();
}

template <typename T>
void linear_backward(const Mat<T>& x, const Mat<T>& W, const Mat<T>& dy, Mat<T>* dx, Mat<T>& dW, Vec<T>& db) {
  // pass 1: dW += x^T dy (in, out): every token's outer product, summed.
  dW.noalias() += x.transpose() * dy;
  // pass 2: db += column sums of dy: the bias is added to every row.
  db.noalias() += dy.colwise().sum().transpose();
  // pass 3: dx = dy W^T (N, in).
  if (dx != nullptr) {
    dx->resize(dy.rows(), W.rows());
    dx->noalias() = dy * W.transpose();
  }
}

template void linear_forward<float>(const Mat<float>&, const Mat<float>&, const Vec<float>&, Mat<float>&);
template void linear_forward<double>(const Mat<double>&, const Mat<double>&, const Vec<double>&, Mat<double>&);
template void linear_backward<float>(const Mat<float>&, const Mat<float>&, const Mat<float>&, Mat<float>*, Mat<float>&,
                                     Vec<float>&);
template void linear_backward<double>(const Mat<double>&, const Mat<double>&, const Mat<double>&, Mat<double>*,
                                      Mat<double>&, Vec<double>&);

}  // namespace attnlab
