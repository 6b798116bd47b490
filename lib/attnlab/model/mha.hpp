// Multi-head attention: Q, K, V projections around a TrainableAttention method, then the output projection.
#pragma once

#include <memory>
#include <vector>

#include "attnlab/attention/trainable.hpp"
#include "attnlab/core/matrix.hpp"

namespace attnlab {

// Q = z Wq + bq, K = z Wk + bk (each D x H d_k), V = z Wv + bv (D x D); head h reads the columns
// h d_k .. (h+1) d_k - 1 of Q and K and h d_v .. (h+1) d_v - 1 of V, d_v = D / H; then
// y = concat_h(attention_h) Wo + bo. d_k is Wq's columns over H (D / H unless ViTConfig::key_width
// says otherwise). The same struct holds the gradients.
template <typename T>
struct MhaParams {
  Mat<T> Wq, Wk;          // (D, H d_k) each, input x output
  Mat<T> Wv, Wo;          // (D, D) each
  Vec<T> bq, bk;          // (H d_k) each
  Vec<T> bv, bo;          // (D) each
};

// What the forward keeps for the backward, plus per-head scratch reused from step to step.
template <typename T>
struct MhaTape {
  Mat<T> q, k, v, o;                                 // (B * n, H d_k) q and k, (B * n, D) v and the concatenated heads
  std::vector<std::unique_ptr<AttentionTape>> heads;  // (B * H): image b's head h at b * H + h
  Mat<T> qh, kh, vh, oh, dqh, dkh, dvh, doh;          // (n, d_k) q, k and (n, d_v) v, o scratch for one head
  Mat<T> dq, dk, dv, dout;                           // (B * n, H d_k) dq, dk and (B * n, D) dv, dout scratch
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
