// The recall model's token embedding (recall_spec.md): a key table, a value table and a query marker, summed per
// token; no positions (the task's positions are shuffled and carry nothing).
#pragma once

#include <cstdint>
#include <span>

#include "attnlab/core/matrix.hpp"

namespace attnlab {

// Shapes: keys (K, D), values (V, D), query (1, D); a chunk's tokens, key[t] in 0..K-1 and value[t] in 0..V-1 or
// -1 for a query token, t over the chunk's B T tokens -> x (B T, D):
//   x_t = keys[key_t] + values[value_t]   (a context token)
//   x_t = keys[key_t] + query             (a query token)
// Throws std::out_of_range for a key or value outside its table (the tables are row-indexed: one-hot times W).
template <typename T>
void token_embedding_forward(std::span<const std::int32_t> key, std::span<const std::int32_t> value, const Mat<T>& keys,
                             const Mat<T>& values, const Mat<T>& query, Mat<T>& x);

// Given dx (B T, D): ADDS each token's row into the rows it read (dkeys (K, D), dvalues (V, D), dquery (1, D)),
// token after token in order, so that a key seen twice sums its gradients in a fixed order.
template <typename T>
void token_embedding_backward(std::span<const std::int32_t> key, std::span<const std::int32_t> value, const Mat<T>& dx,
                              Mat<T>& dkeys, Mat<T>& dvalues, Mat<T>& dquery);

}  // namespace attnlab
