// LayerNorm over each row (token), PyTorch's: biased variance, eps inside the square root.
#pragma once

#include "attnlab/core/matrix.hpp"

namespace attnlab {

inline constexpr double kLayerNormEps = 1e-5;

// What the forward keeps for the backward: the normalised input and each row's 1/std.
template <typename T>
struct LayerNormTape {
  Mat<T> xhat;  // (N, D)
  Vec<T> rstd;  // (N)
};

// Shapes: x (N, D), gamma (D), beta (D) -> y (N, D) = (x - mean_row) * rstd_row * gamma + beta,
// rstd_row = 1 / sqrt(mean_row((x - mean_row)^2) + eps).
template <typename T>
void layernorm_forward(const Mat<T>& x, const Vec<T>& gamma, const Vec<T>& beta, Mat<T>& y, LayerNormTape<T>& tape);

// Given dy (N, D): writes dx (N, D), ADDS into dgamma (D) and dbeta (D).
template <typename T>
void layernorm_backward(const Mat<T>& dy, const LayerNormTape<T>& tape, const Vec<T>& gamma, Mat<T>& dx,
                        Vec<T>& dgamma, Vec<T>& dbeta);

}  // namespace attnlab
