// Multi-head attention: Q, K, V projections around a TrainableAttention method, then the output projection.
#pragma once

#include <memory>
#include <vector>

#include "attnlab/attention/trainable.hpp"
#include "attnlab/core/matrix.hpp"

namespace attnlab {

// Q = z Wq + bq, K = z Wk + bk, V = z Wv + bv (each D x D), heads of width d_k = D / H (head h: columns
// h d_k .. (h+1) d_k - 1), then y = concat_h(attention_h) Wo + bo. The same struct holds the gradients.
template <typename T>
struct MhaParams {
  Mat<T> Wq, Wk, Wv, Wo;  // (D, D) each, input x output
  Vec<T> bq, bk, bv, bo;  // (D) each
};

// What the forward keeps for the backward, plus per-head scratch reused from step to step.
template <typename T>
struct MhaTape {
  Mat<T> q, k, v, o;                                 // (B * n, D) each: projections and concatenated heads
  std::vector<std::unique_ptr<AttentionTape>> heads;  // (B * H): image b's head h at b * H + h
  Mat<T> qh, kh, vh, oh, dqh, dkh, dvh, doh;          // (n, d_k) scratch for one head
  Mat<T> dq, dk, dv, dout;                           // (B * n, D) gradient scratch
};

// z (B * n, D) -> y (B * n, D); the images of the chunk are independent sequences of n tokens.
// With keep_tape false (evaluation) the method keeps nothing for a backward pass.
template <typename T>
void mha_forward(const Mat<T>& z, const MhaParams<T>& p, const TrainableAttention<T>& method, Eigen::Index n,
                 Eigen::Index heads, Mat<T>& y, MhaTape<T>& tape, bool keep_tape);

// Given dy (B * n, D): writes dz (B * n, D); ADDS into grads and into method_grads (one per method
// parameter, already sized; may be null when the method has none). Images and heads in index order.
template <typename T>
void mha_backward(const Mat<T>& z, const MhaParams<T>& p, const TrainableAttention<T>& method, Eigen::Index n,
                  Eigen::Index heads, MhaTape<T>& tape, const Mat<T>& dy, Mat<T>& dz, MhaParams<T>& grads,
                  std::vector<Mat<T>>* method_grads);

}  // namespace attnlab
