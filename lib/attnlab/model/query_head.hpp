// The recall model's head (recall_spec.md): at every query position, the final LayerNorm and a linear map to the
// value vocabulary's logits. Context positions have no output: the loss and the accuracy count queries only.
#pragma once

#include <cstdint>
#include <span>

#include "attnlab/core/matrix.hpp"
#include "attnlab/model/layernorm.hpp"

namespace attnlab {

// What the head's forward keeps for its backward.
template <typename T>
struct QueryHeadTape {
  Mat<T> gathered;  // (Q, D): the query rows of x
  LayerNormTape<T> ln;
  Mat<T> ln_out;    // (Q, D)
  Mat<T> dln, dgathered;  // (Q, D) gradient scratch
};

// Shapes: x (B T, D) the blocks' output, rows the Q query tokens' rows of x (in the order of the labels), gamma,
// beta (D), W (D, V), b (V) -> logits (Q, V) = LN(x[rows]) W + b. Throws std::out_of_range for a row outside x.
template <typename T>
void query_head_forward(const Mat<T>& x, std::span<const std::int64_t> rows, const Vec<T>& gamma, const Vec<T>& beta,
                        const Mat<T>& W, const Vec<T>& b, Mat<T>& logits, QueryHeadTape<T>& tape);

// Given dlogits (Q, V): writes dx (x's shape: the query rows' gradient, zero at every other row), ADDS into
// dgamma, dbeta (D), dW (D, V) and db (V).
template <typename T>
void query_head_backward(std::span<const std::int64_t> rows, Eigen::Index x_rows, const Vec<T>& gamma, const Mat<T>& W,
                         const Mat<T>& dlogits, QueryHeadTape<T>& tape, Mat<T>& dx, Vec<T>& dgamma, Vec<T>& dbeta,
                         Mat<T>& dW, Vec<T>& db);

}  // namespace attnlab
