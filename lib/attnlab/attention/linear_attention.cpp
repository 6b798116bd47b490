// Linear attention in the two forms the UCU report means: Shen et al.'s efficient attention
// (its text) and Katharopoulos et al.'s elu(x) + 1 feature map (its public code).
#include "attnlab/attention/linear_attention.hpp"

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "attnlab/attention/fast_passes.hpp"
#include "attnlab/core/attention_check.hpp"
#include "attnlab/core/head_stack_map.hpp"
#include "attnlab/core/row_blocks.hpp"
#include "attnlab/linalg/broadcast_gemm.hpp"

namespace attnlab {

namespace {

// phi = elu(x) + 1 = max(x, 0) + exp(min(x, 0)): x + 1 for x > 0, exp(x) otherwise, every operation
// vectorised (Eigen 3.4's select() is not, and falls back to scalar expf); dphi = exp(min(x, 0)), the
// derivative (exactly 1 where x > 0: exp(0) = 1).
template <typename T>
void elu_plus_one(const Eigen::Ref<const Mat<T>>& x, Mat<T>& phi, Mat<T>* dphi) {
  if (dphi == nullptr) {
    phi = (x.array().max(T(0)) + x.array().min(T(0)).exp()).matrix();
    return;
  }
  *dphi = x.array().min(T(0)).exp().matrix();
  phi = (x.array().max(T(0)) + dphi->array()).matrix();
}

// Rows per block of the two fast linear kernels. A head of at most 2048 rows is one block: a block of all of a
// column-major head's rows is one contiguous stretch of memory, streamed by the hardware prefetcher, where a
// block of part of them reads d separate short segments. Issue 17, side by side (b32 h4): 12-25% less time at
// n 768 to 2048 than with kFastRowBlock rows; longer heads keep kFastRowBlock (2048-row blocks of a long head
// ran slower: the block's phi and V outgrow the L2 cache). The blocks depend on the shapes alone, never on the
// threads.
Eigen::Index linear_block_rows(Eigen::Index n) {
  constexpr Eigen::Index kWholeHeadRows = 2048;
  return n <= kWholeHeadRows ? std::max<Eigen::Index>(n, 1) : kFastRowBlock;
}

}  // namespace

template <typename T>
void elu_query_features(const Eigen::Ref<const Mat<T>>& x, Mat<T>& phi, Mat<T>* dphi) {
  elu_plus_one(x, phi, dphi);
  // Rows whose entries are all negative: exp(x - row max) (see the header).
  const Vec<T> row_max = x.rowwise().maxCoeff();
  for (Eigen::Index i = 0; i < x.rows(); ++i)
    if (row_max(i) < T(0)) {
      phi.row(i) = (x.row(i).array() - row_max(i)).exp().matrix();
      if (dphi != nullptr) dphi->row(i) = phi.row(i);
    }
}

template <typename T>
void elu_key_features(const Eigen::Ref<const Mat<T>>& x, T largest, Mat<T>& phi, Mat<T>* dphi) {
  if (!(largest < T(0))) {
    elu_plus_one(x, phi, dphi);
    return;
  }
  // All of K negative: exp(K - max K) (see the header).
  phi = (x.array() - largest).exp().matrix();
  if (dphi != nullptr) *dphi = phi;
}

template <typename T>
Mat<T> efficient_attention(const Mat<T>& q, const Mat<T>& k, const Mat<T>& v, EfficientAttentionPasses<T>* passes) {
  detail::check_attention_shapes("efficient_attention", q, k, v);
  // q is (n_q, d), k is (n_k, d), v is (n_k, d_v); qr_t is (d, n_q), kc (n_k, d), ctx (d, d_v); out (n_q, d_v).
  EfficientAttentionPasses<T> local;
  EfficientAttentionPasses<T>& p = passes != nullptr ? *passes : local;
  // pass 1: each query's features softmax-normalised (core/softmax.hpp, the maximum subtracted); done on
  // Q^T so that a query's d features are one contiguous column.
  p.qr_t = q.transpose();
  softmax_cols_inplace(p.qr_t);
  // pass 2: each key feature softmax-normalised over the positions (a column softmax of K).
  p.kc = k;
  softmax_cols_inplace(p.kc);
  // pass 3: d context vectors, one per key feature: ctx = softmax_col(K)^T V.
  p.ctx.resize(k.cols(), v.cols());
  p.ctx.noalias() = p.kc.transpose() * v;
  // pass 4: each query mixes the context vectors with its feature weights.
  Mat<T> out(q.rows(), v.cols());
  out.noalias() = p.qr_t.transpose() * p.ctx;
  return out;
}

template <typename T>
Mat<T> efficient_attention_matrix(const Mat<T>& q, const Mat<T>& k) {
  detail::check_attention_shapes("efficient_attention", q, k, k);
  Mat<T> qr_t = q.transpose(), kc = k;
  softmax_cols_inplace(qr_t);
  softmax_cols_inplace(kc);
  return qr_t.transpose() * kc.transpose();
}

template <typename T>
Mat<T> elu_linear_attention(const Mat<T>& q, const Mat<T>& k, const Mat<T>& v, EluLinearPasses<T>* passes,
                            bool derivatives) {
  detail::check_attention_shapes("elu_linear_attention", q, k, v);
  // q is (n_q, d), k is (n_k, d), v is (n_k, d_v); kv is (d, d_v), ksum (d), den (n_q); out (n_q, d_v).
  EluLinearPasses<T> local;
  EluLinearPasses<T>& p = passes != nullptr ? *passes : local;
  // pass 1: feature maps (and their derivatives), rescaled where needed so that no row of phi(Q) and not
  // all of phi(K) underflows.
  elu_query_features<T>(q, p.phi_q, derivatives ? &p.dphi_q : nullptr);
  elu_key_features<T>(k, k.maxCoeff(), p.phi_k, derivatives ? &p.dphi_k : nullptr);
  // pass 2: the key-value summary phi(K)^T V and the normaliser phi(K)^T 1.
  p.kv.resize(k.cols(), v.cols());
  p.kv.noalias() = p.phi_k.transpose() * v;
  p.ksum = p.phi_k.colwise().sum().transpose();
  // pass 3: numerator over denominator per query; den > 0 because phi > 0 and the rescaling leaves a
  // term equal to 1 in every row of phi(Q) and somewhere in phi(K).
  Mat<T> out(q.rows(), v.cols());
  out.noalias() = p.phi_q * p.kv;
  p.den.resize(q.rows());
  p.den.noalias() = p.phi_q * p.ksum;
  out = p.den.cwiseInverse().asDiagonal() * out;
  return out;
}

template <typename T>
Mat<T> elu_linear_attention_matrix(const Mat<T>& q, const Mat<T>& k) {
  detail::check_attention_shapes("elu_linear_attention", q, k, k);
  Mat<T> phi_q, phi_k;
  elu_query_features<T>(q, phi_q);
  elu_key_features<T>(k, k.maxCoeff(), phi_k);
  Mat<T> a = phi_q * phi_k.transpose();
  const Vec<T> row_sums = a.rowwise().sum();
  return row_sums.cwiseInverse().asDiagonal() * a;
}

template <typename T>
Mat<T> unnormalised_attention_quadratic(const Mat<T>& q, const Mat<T>& k, const Mat<T>& v) {
  detail::check_attention_shapes("unnormalised_attention", q, k, v);
  const Mat<T> s = q * k.transpose();
  return (s * v) / static_cast<T>(q.cols());
}

template <typename T>
Mat<T> unnormalised_attention_linear(const Mat<T>& q, const Mat<T>& k, const Mat<T>& v) {
  detail::check_attention_shapes("unnormalised_attention", q, k, v);
  const Mat<T> kv = k.transpose() * v;
  return (q * kv) / static_cast<T>(q.cols());
}

template <typename T>
HeadStack<T> efficient_attention(const HeadStack<T>& q, const HeadStack<T>& k, const HeadStack<T>& v) {
  return detail::map_heads(q, k, v, [](const Mat<T>& a, const Mat<T>& b, const Mat<T>& c) {
    return efficient_attention(a, b, c);
  });
}

template <typename T>
HeadStack<T> elu_linear_attention(const HeadStack<T>& q, const HeadStack<T>& k, const HeadStack<T>& v) {
  return detail::map_heads(q, k, v, [](const Mat<T>& a, const Mat<T>& b, const Mat<T>& c) {
    return elu_linear_attention(a, b, c);
  });
}

template <typename T>
HeadStack<T> fast_elu_linear_attention(const HeadStack<T>& q, const HeadStack<T>& k, const HeadStack<T>& v) {
  detail::check_same_heads(q, k, v);
  detail::check_attention_shapes("elu_linear_attention", q[0], k[0], v[0]);
  const Eigen::Index count = q.count(), dv = v.d();
  const detail::RowBlocks keys{k.n(), linear_block_rows(k.n())}, queries{q.n(), linear_block_rows(q.n())};
  // As the reference: where all of a head's K is negative, phi(K) = exp(K - max K) (the output is
  // unchanged by a common positive factor, and exp(K) alone could underflow to all zeros). A head of one
  // block takes its maximum in pass 1, just before mapping the block, which then comes from the cache: a
  // separate pass over every head read all of K from memory once more (4% of the time, perf, issue 17).
  std::vector<T> k_max;
  if (keys.count() > 1) {
    k_max.resize(static_cast<std::size_t>(count));
#pragma omp parallel for schedule(static)
    for (Eigen::Index h = 0; h < count; ++h) k_max[static_cast<std::size_t>(h)] = k[h].maxCoeff();
  }
  // Pass 1: per key block, [phi(K_j)^T V_j, phi(K_j)^T 1], (d, d_v + 1).
  auto part = detail::summarise_key_blocks<T>(count, keys, [&](Eigen::Index h, Eigen::Index j0, Eigen::Index b) {
    const auto k_j = k[h].middleRows(j0, b);
    const T m = k_max.empty() ? k_j.maxCoeff() : k_max[static_cast<std::size_t>(h)];
    Mat<T> phi;
    elu_key_features<T>(k_j, m, phi);
    Mat<T> s(phi.cols(), dv + 1);
    auto kv = s.leftCols(dv);
    broadcast_gemm_tn(kv, phi, strided_view(v[h].middleRows(j0, b)), false);
    s.col(dv) = phi.colwise().sum().transpose();
    return s;
  });
  const auto kvz = detail::add_blocks(std::move(part), count, keys.count());
  // Pass 3: numerators and denominators of a query block in one product phi(Q_i) [kv, ksum].
  auto out = HeadStack<T>::uninitialized(q.batch(), q.heads(), q.n(), dv);
  detail::answer_query_blocks(count, queries, [&](Eigen::Index h, Eigen::Index i0, Eigen::Index b) {
    const auto q_i = q[h].middleRows(i0, b);
    Mat<T> phi;
    elu_query_features<T>(q_i, phi);  // rows whose entries are all negative: exp(x - row max)
    Mat<T> nd(b, dv + 1);
    broadcast_gemm(nd, phi, strided_view(kvz[static_cast<std::size_t>(h)]), false);
    // One division per query, then products: b d_v divisions cost more than the products they replace.
    const Vec<T> inv_den = nd.col(dv).cwiseInverse();
    out[h].middleRows(i0, b).noalias() = inv_den.asDiagonal() * nd.leftCols(dv);
  });
  return out;
}

template <typename T>
HeadStack<T> fast_efficient_attention(const HeadStack<T>& q, const HeadStack<T>& k, const HeadStack<T>& v) {
  detail::check_same_heads(q, k, v);
  detail::check_attention_shapes("efficient_attention", q[0], k[0], v[0]);
  const Eigen::Index count = q.count(), d = q.d(), dv = v.d();
  const detail::RowBlocks keys{k.n(), linear_block_rows(k.n())}, queries{q.n(), linear_block_rows(q.n())};
  // Pass 1: per key block, [exp(K_j - m_j)^T V_j, m_j, column sums], (d, d_v + 2); m_j the block's column
  // maxima, so every exponent is <= 0 and each column has a term exactly 1.
  const auto part = detail::summarise_key_blocks<T>(count, keys, [&](Eigen::Index h, Eigen::Index j0, Eigen::Index b) {
    Mat<T> e = k[h].middleRows(j0, b);
    Mat<T> s(d, dv + 2);
    for (Eigen::Index c = 0; c < d; ++c) {  // column by column: Eigen vectorises exp() down a contiguous column
      auto col = e.col(c);
      s(c, dv) = col.maxCoeff();
      s(c, dv + 1) = exp_shifted_inplace(col, s(c, dv));
    }
    auto kv = s.leftCols(dv);
    broadcast_gemm_tn(kv, e, strided_view(v[h].middleRows(j0, b)), false);
    return s;
  });
  // Pass 2, per head: blocks merged relative to each feature's overall maximum, in block order; the context
  // softmax_col(K)^T V = (merged sums)^-1 (merged products), (d, d_v).
  const std::vector<Mat<T>> ctx = detail::merge_softmax_blocks(part, count, keys.count());
  // Pass 3: exp(Q_i - row maxima) (b, d), one row per query, times the context; one division per query.
  auto out = HeadStack<T>::uninitialized(q.batch(), q.heads(), q.n(), dv);
  detail::answer_query_blocks(count, queries, [&](Eigen::Index h, Eigen::Index i0, Eigen::Index b) {
    Mat<T> e(b, q.d());
    const Vec<T> sums = exp_rows(e, q[h].middleRows(i0, b));
    auto out_i = out[h].middleRows(i0, b);  // the products straight into the output, then divided in place
    broadcast_gemm(out_i, e, strided_view(ctx[static_cast<std::size_t>(h)]), false);
    out_i.array().colwise() *= sums.cwiseInverse().array();
  });
  return out;
}

#define ATTNLAB_INSTANTIATE_LINEAR(T)                                                              \
  template Mat<T> efficient_attention(const Mat<T>&, const Mat<T>&, const Mat<T>&, EfficientAttentionPasses<T>*); \
  template void elu_query_features(const Eigen::Ref<const Mat<T>>&, Mat<T>&, Mat<T>*);            \
  template void elu_key_features(const Eigen::Ref<const Mat<T>>&, T, Mat<T>&, Mat<T>*);           \
  template Mat<T> efficient_attention_matrix(const Mat<T>&, const Mat<T>&);                       \
  template Mat<T> elu_linear_attention(const Mat<T>&, const Mat<T>&, const Mat<T>&, EluLinearPasses<T>*, bool); \
  template Mat<T> elu_linear_attention_matrix(const Mat<T>&, const Mat<T>&);                      \
  template Mat<T> unnormalised_attention_quadratic(const Mat<T>&, const Mat<T>&, const Mat<T>&);  \
  template Mat<T> unnormalised_attention_linear(const Mat<T>&, const Mat<T>&, const Mat<T>&);     \
  template HeadStack<T> efficient_attention(const HeadStack<T>&, const HeadStack<T>&, const HeadStack<T>&); \
  template HeadStack<T> elu_linear_attention(const HeadStack<T>&, const HeadStack<T>&, const HeadStack<T>&); \
  template HeadStack<T> fast_elu_linear_attention(const HeadStack<T>&, const HeadStack<T>&, const HeadStack<T>&); \
  template HeadStack<T> fast_efficient_attention(const HeadStack<T>&, const HeadStack<T>&, const HeadStack<T>&);
ATTNLAB_INSTANTIATE_LINEAR(float)
ATTNLAB_INSTANTIATE_LINEAR(double)
#undef ATTNLAB_INSTANTIATE_LINEAR

}  // namespace attnlab
