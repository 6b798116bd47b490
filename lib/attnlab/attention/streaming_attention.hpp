// Streaming (online-softmax, flash-style) softmax attention: key blocks, never the n x n matrix.
#pragma once

#include <Eigen/Dense>

#include "attnlab/core/head_stack.hpp"
#include "attnlab/core/matrix.hpp"

namespace attnlab {

// The default number of keys per block: 64 x n_q scores stay in cache for n up to a few thousand.
inline constexpr Eigen::Index kDefaultKeyBlock = 64;

// softmax(Q K^T / sqrt(d)) V computed one block of `key_block` keys at a time with a
// running maximum and normaliser per query (Milakov & Gimelshein 2018; FlashAttention),
// in O(n_q (key_block + d_v)) memory. Equals softmax_attention() up to rounding.
// Throws std::invalid_argument on empty or mismatched shapes and on key_block < 1.
template <typename T>
Mat<T> streaming_attention(const Mat<T>& q, const Mat<T>& k, const Mat<T>& v,
                           Eigen::Index key_block = kDefaultKeyBlock);

template <typename T>
HeadStack<T> streaming_attention(const HeadStack<T>& q, const HeadStack<T>& k, const HeadStack<T>& v,
                                 Eigen::Index key_block = kDefaultKeyBlock);

}  // namespace attnlab
