// Linear layer y = x W + b (row-vector convention), forward and backward side by side.
#pragma once

#include "attnlab/core/matrix.hpp"

namespace attnlab {

// Shapes: x (N, in), W (in, out), b (out), y (N, out). One row per token.
// Writes y (resized as needed).
template <typename T>
void linear_forward(const Mat<T>& x, const Mat<T>& W, const Vec<T>& b, Mat<T>& y);

// Given dy = dL/dy (N, out): ADDS dL/dW (in, out) into dW and dL/db (out) into db (so branches and
// chunks sum); writes dL/dx (N, in) into *dx (overwritten) unless dx is null (the input needs none).
template <typename T>
void linear_backward(const Mat<T>& x, const Mat<T>& W, const Mat<T>& dy, Mat<T>* dx, Mat<T>& dW, Vec<T>& db);

}  // namespace attnlab
