// Streaming (online-softmax, flash-style) softmax attention: key blocks, never the n x n matrix.
#include "attnlab/attention/streaming_attention.hpp"

#include <cmath>
#include <limits>
#include <string>

#include "attnlab/core/attention_check.hpp"
#include "attnlab/core/head_stack_map.hpp"
#include "attnlab/core/softmax.hpp"

namespace attnlab {

template <typename T>
Mat<T> streaming_attention(const Mat<T>& q, const Mat<T>& k, const Mat<T>& v, Eigen::Index key_block) {
  detail::check_attention_shapes("streaming_attention", q, k, v);
  if (key_block < 1)
    throw std::invalid_argument("streaming_attention: key_block (= " + std::to_string(key_block) +
                                ") must be at least 1");
  // q is (n_q, d), k is (n_k, d), v is (n_k, d_v); s_bq is (b, n_q) for a block of b keys;
  // m_q, l_q are (n_q) running max and normaliser; acc_vq is (d_v, n_q), the unnormalised output
  // transposed. Scores and accumulator are kept query-per-column so that every per-query update
  // touches contiguous memory (storage is column-major).
  const Eigen::Index n_q = q.rows(), n_k = k.rows();
  const T scale = T(1) / std::sqrt(static_cast<T>(q.cols()));
  Vec<T> m_q = Vec<T>::Constant(n_q, -std::numeric_limits<T>::infinity());
  Vec<T> l_q = Vec<T>::Zero(n_q);
  Vec<T> correction(n_q);
  Mat<T> acc_vq = Mat<T>::Zero(v.cols(), n_q);
  Mat<T> s_bq;
  for (Eigen::Index j0 = 0; j0 < n_k; j0 += key_block) {
    const Eigen::Index b = std::min(key_block, n_k - j0);
    // pass 1: this block's scaled logits.
    s_bq.noalias() = (k.middleRows(j0, b) * q.transpose()) * scale;
    // pass 2: per query, the new running maximum; the block's exponentials relative to it (exp()
    // never overflows) and the normaliser rescaled by the correction, then this block's sum added.
    // On the first block m_q = -inf gives correction exp(-inf) = 0, applied to an accumulator that
    // is still zero.
    online_softmax_block(s_bq, m_q, l_q, correction);
    // pass 3: rescale what was accumulated relative to the old maxima, then add this block.
    acc_vq = acc_vq * correction.asDiagonal();
    acc_vq.noalias() += v.middleRows(j0, b).transpose() * s_bq;
  }
  // pass 4: normalise once at the end. l_q >= 1 because the term of the overall maximum is exactly exp(0).
  return (acc_vq * l_q.cwiseInverse().asDiagonal()).transpose();
}

template <typename T>
HeadStack<T> streaming_attention(const HeadStack<T>& q, const HeadStack<T>& k, const HeadStack<T>& v,
                                 Eigen::Index key_block) {
  return detail::map_heads(q, k, v, [key_block](const Mat<T>& qh, const Mat<T>& kh, const Mat<T>& vh) {
    return streaming_attention(qh, kh, vh, key_block);
  });
}

template Mat<float> streaming_attention(const Mat<float>&, const Mat<float>&, const Mat<float>&, Eigen::Index);
template Mat<double> streaming_attention(const Mat<double>&, const Mat<double>&, const Mat<double>&, Eigen::Index);
template HeadStack<float> streaming_attention(const HeadStack<float>&, const HeadStack<float>&,
                                              const HeadStack<float>&, Eigen::Index);
template HeadStack<double> streaming_attention(const HeadStack<double>&, const HeadStack<double>&,
                                               const HeadStack<double>&, Eigen::Index);

}  // namespace attnlab
