// GELU: forward and backward.
#include "attnlab/model/gelu.hpp"

#include <unsupported/Eigen/SpecialFunctions>  // the array erf: vectorised for float (Eigen 3.4)

namespace attnlab {

namespace {
constexpr double kInvSqrt2 = 0.70710678118654752440;
constexpr double kInvSqrt2Pi = 0.39894228040143267794;
}  // namespace

template <typename T>
void gelu_forward(const Mat<T>& x, Mat<T>& y) {
  y.resize(x.rows(), x.cols());
  y.array() = static_cast<T>(0.5) * x.array() * (static_cast<T>(1) + (x.array() * static_cast<T>(kInvSqrt2)).erf());
}

template <typename T>
void gelu_backward(const Mat<T>& x, const Mat<T>& dy, Mat<T>& dx) {
  // Phi(x) = 0.5 (1 + erf(x / sqrt 2)); phi(x) = exp(-x^2 / 2) / sqrt(2 pi). Recomputed here rather
  // than kept from the forward: one erf and one exp per element cost less than the memory traffic.
  dx.resize(x.rows(), x.cols());
  const auto xa = x.array();
  dx.array() = dy.array() * (static_cast<T>(0.5) * (static_cast<T>(1) + (xa * static_cast<T>(kInvSqrt2)).erf()) +
                             xa * static_cast<T>(kInvSqrt2Pi) * (static_cast<T>(-0.5) * xa.square()).exp());
}

template void gelu_forward<float>(const Mat<float>&, Mat<float>&);
template void gelu_forward<double>(const Mat<double>&, Mat<double>&);
template void gelu_backward<float>(const Mat<float>&, const Mat<float>&, Mat<float>&);
template void gelu_backward<double>(const Mat<double>&, const Mat<double>&, Mat<double>&);

}  // namespace attnlab
