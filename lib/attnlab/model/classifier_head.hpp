// The classifier head: mean over each image's tokens, a linear map to class logits, softmax cross-entropy.
#pragma once

#include <cstdint>
#include <span>

#include "attnlab/core/matrix.hpp"

namespace attnlab {

// x (B * n, D) -> pooled (B, D), the mean of image b's n token rows -> logits (B, C) = pooled W + b.
template <typename T>
void classifier_forward(const Mat<T>& x, Eigen::Index n, const Mat<T>& W, const Vec<T>& b, Mat<T>& pooled,
                        Mat<T>& logits);

// Given dlogits (B, C): writes dx (B * n, D), ADDS into dW (D, C) and db (C).
template <typename T>
void classifier_backward(const Mat<T>& pooled, Eigen::Index n, const Mat<T>& W, const Mat<T>& dlogits, Mat<T>& dx,
                         Mat<T>& dW, Vec<T>& db);

// Softmax cross-entropy of logits (B, C) against labels (B), each in 0..C-1, times `scale`:
// returns scale * sum_b -log softmax(logits_b)[label_b] and writes dlogits = scale * (softmax - onehot).
// A chunk of a batch of size S passes scale = 1/S, so the chunks' losses and gradients sum to the
// batch mean. Accumulated in double whatever T.
template <typename T>
double cross_entropy(const Mat<T>& logits, std::span<const std::uint8_t> labels, double scale, Mat<T>* dlogits);

}  // namespace attnlab
