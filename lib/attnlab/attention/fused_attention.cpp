// Fast exact softmax attention, fused per block of queries (and, streaming, per block of keys).
#include "attnlab/attention/fused_attention.hpp"

#include <cmath>
#include <limits>
#include <string>

#include "attnlab/core/attention_check.hpp"
#include "attnlab/core/head_stack_map.hpp"
#include "attnlab/core/row_blocks.hpp"
#include "attnlab/core/softmax.hpp"

namespace attnlab {

namespace {

// Per-thread buffers, reused from block to block.
template <typename T>
struct Workspace {
  Mat<T> q_dq;    // (d, b_q): the block's queries, scaled and transposed
  Mat<T> s_kq;    // (b_k, b_q): scores, then their exponentials
  Mat<T> acc_vq;  // (d_v, b_q): unnormalised output, transposed
  Vec<T> m_q, l_q, correction;  // (b_q): running maximum, normaliser, rescaling of the old sum
};

// Rows [i0, i0 + b_q) of softmax(Q K^T / sqrt(d)) V into `out`. Keys are taken `key_block` at a
// time (all at once for 0); with one block the correction below is exp(-inf) = 0 applied to a
// zero accumulator, and the kernel is the plain two-pass softmax.
template <typename T>
void attend_query_block(const Mat<T>& q, const Mat<T>& k, const Mat<T>& v, Eigen::Index i0, Eigen::Index b_q,
                        Eigen::Index key_block, Workspace<T>& w, Mat<T>& out) {
  const Eigen::Index n_k = k.rows();
  const Eigen::Index b_k = key_block > 0 ? std::min(key_block, n_k) : n_k;
  const T scale = T(1) / std::sqrt(static_cast<T>(q.cols()));
  // The scale goes on the b_q x d queries rather than the b_k x b_q scores: d / b_k as many products.
  w.q_dq.noalias() = q.middleRows(i0, b_q).transpose() * scale;
  w.m_q.setConstant(b_q, -std::numeric_limits<T>::infinity());
  w.l_q.setZero(b_q);
  w.correction.resize(b_q);
  w.acc_vq.setZero(v.cols(), b_q);
  for (Eigen::Index j0 = 0; j0 < n_k; j0 += b_k) {
    const Eigen::Index b = std::min(b_k, n_k - j0);
    // pass 1: scores of this key block, keys down the columns so each query's scores are contiguous.
    w.s_kq.noalias() = k.middleRows(j0, b) * w.q_dq;
    // pass 2: new running maximum, exponentials relative to it (never overflow), rescaled sums.
    online_softmax_block(w.s_kq, w.m_q, w.l_q, w.correction);
    // pass 3: what was accumulated relative to the old maxima, rescaled, plus this block's V^T S.
    if (j0 > 0) w.acc_vq.array().rowwise() *= w.correction.transpose().array();
    w.acc_vq.noalias() += v.middleRows(j0, b).transpose() * w.s_kq;
  }
  // pass 4: normalise; l_q >= 1 since the overall maximum's term is exactly exp(0).
  out.middleRows(i0, b_q).noalias() = (w.acc_vq * w.l_q.cwiseInverse().asDiagonal()).transpose();
}

// out[h] for heads h < count, in parallel over (head, query block) pairs.
template <typename T>
void fused_heads(const Mat<T>* q, const Mat<T>* k, const Mat<T>* v, Mat<T>* out, Eigen::Index count,
                 Eigen::Index key_block) {
  const detail::RowBlocks blocks{q[0].rows(), kFusedQueryBlock};
  const Eigen::Index tasks = count * blocks.count();
#pragma omp parallel
  {
    Workspace<T> w;
#pragma omp for schedule(dynamic)
    for (Eigen::Index t = 0; t < tasks; ++t) {
      const Eigen::Index h = t / blocks.count(), i = t % blocks.count();
      attend_query_block(q[h], k[h], v[h], blocks.begin(i), blocks.length(i), key_block, w, out[h]);
    }
  }
}

void check_key_block(Eigen::Index key_block) {
  if (key_block < 0)
    throw std::invalid_argument("fused_attention: key_block (= " + std::to_string(key_block) + ") must be >= 0");
}

}  // namespace

template <typename T>
Mat<T> fused_attention(const Mat<T>& q, const Mat<T>& k, const Mat<T>& v, Eigen::Index key_block) {
  detail::check_attention_shapes("fused_attention", q, k, v);
  check_key_block(key_block);
  Mat<T> out(q.rows(), v.cols());
  fused_heads(&q, &k, &v, &out, 1, key_block);
  return out;
}

template <typename T>
HeadStack<T> fused_attention(const HeadStack<T>& q, const HeadStack<T>& k, const HeadStack<T>& v,
                             Eigen::Index key_block) {
  detail::check_same_heads(q, k, v);
  detail::check_attention_shapes("fused_attention", q[0], k[0], v[0]);
  check_key_block(key_block);
  HeadStack<T> out(q.batch(), q.heads(), q.n(), v.d());
  fused_heads(&q[0], &k[0], &v[0], &out[0], q.count(), key_block);
  return out;
}

template Mat<float> fused_attention(const Mat<float>&, const Mat<float>&, const Mat<float>&, Eigen::Index);
template Mat<double> fused_attention(const Mat<double>&, const Mat<double>&, const Mat<double>&, Eigen::Index);
template HeadStack<float> fused_attention(const HeadStack<float>&, const HeadStack<float>&, const HeadStack<float>&,
                                          Eigen::Index);
template HeadStack<double> fused_attention(const HeadStack<double>&, const HeadStack<double>&,
                                           const HeadStack<double>&, Eigen::Index);

}  // namespace attnlab
