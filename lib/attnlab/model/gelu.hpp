// GELU, the exact erf form 0.5 x (1 + erf(x / sqrt 2)) (PyTorch's nn.GELU() default).
#pragma once

#include "attnlab/core/matrix.hpp"

namespace attnlab {

// Element-wise: y = GELU(x), any shape. The backward needs only x (the forward's input).
template <typename T>
void gelu_forward(const Mat<T>& x, Mat<T>& y);

// dx = dy * GELU'(x), GELU'(x) = Phi(x) + x phi(x) (Phi, phi: the standard normal cdf and density).
template <typename T>
void gelu_backward(const Mat<T>& x, const Mat<T>& dy, Mat<T>& dx);

}  // namespace attnlab
