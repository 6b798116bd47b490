// The Transformer block's MLP: y = GELU(z W1 + b1) W2 + b2.
#pragma once

#include "attnlab/core/matrix.hpp"

namespace attnlab {

template <typename T>
struct MlpParams {
  Mat<T> W1;  // (D, M)
  Vec<T> b1;  // (M)
  Mat<T> W2;  // (M, D)
  Vec<T> b2;  // (D)
};

template <typename T>
struct MlpTape {
  Mat<T> a;  // (N, M) pre-activation z W1 + b1
  Mat<T> g;  // (N, M) GELU(a)
  Mat<T> dg, da;  // (N, M) gradient scratch
};

// z (N, D) -> y (N, D).
template <typename T>
void mlp_forward(const Mat<T>& z, const MlpParams<T>& p, Mat<T>& y, MlpTape<T>& tape);

// Given dy (N, D): writes dz (N, D), ADDS into grads.
template <typename T>
void mlp_backward(const Mat<T>& z, const MlpParams<T>& p, MlpTape<T>& tape, const Mat<T>& dy, Mat<T>& dz,
                  MlpParams<T>& grads);

}  // namespace attnlab
