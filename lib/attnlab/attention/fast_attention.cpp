// Fast linear (elu + 1), Linformer and Nystrom attention on head stacks.
#include "attnlab/attention/fast_attention.hpp"

#include <cmath>
#include <string>
#include <vector>

#include "attnlab/core/attention_check.hpp"
#include "attnlab/core/head_stack_map.hpp"
#include "attnlab/linalg/iterative_pinv.hpp"
#include "attnlab/attention/nystrom.hpp"
#include "attnlab/core/row_blocks.hpp"
#include "attnlab/core/softmax.hpp"

namespace attnlab {

namespace {

// Pass 1: summarise(h, j0, b) for every head h < count and key block [j0, j0 + b), in parallel;
// part[h * blocks + j] holds block j of head h.
template <typename T, typename Summarise>
std::vector<Mat<T>> summarise_key_blocks(Eigen::Index count, const detail::RowBlocks& blocks, Summarise summarise) {
  std::vector<Mat<T>> part(static_cast<std::size_t>(count * blocks.count()));
#pragma omp parallel for schedule(dynamic)
  for (Eigen::Index t = 0; t < count * blocks.count(); ++t) {
    const Eigen::Index j = t % blocks.count();
    part[static_cast<std::size_t>(t)] = summarise(t / blocks.count(), blocks.begin(j), blocks.length(j));
  }
  return part;
}

// Pass 2 of the methods whose summary is a plain sum: each head's blocks added in block order.
template <typename T>
std::vector<Mat<T>> add_blocks(const std::vector<Mat<T>>& part, Eigen::Index count, Eigen::Index blocks) {
  std::vector<Mat<T>> sum(static_cast<std::size_t>(count));
#pragma omp parallel for schedule(static)
  for (Eigen::Index h = 0; h < count; ++h) {
    Mat<T> s = part[static_cast<std::size_t>(h * blocks)];
    for (Eigen::Index j = 1; j < blocks; ++j) s += part[static_cast<std::size_t>(h * blocks + j)];
    sum[static_cast<std::size_t>(h)] = std::move(s);
  }
  return sum;
}

// Pass 3: answer(h, i0, b) for every head and query block, in parallel; each writes its own rows.
template <typename Answer>
void answer_query_blocks(Eigen::Index count, const detail::RowBlocks& blocks, Answer answer) {
#pragma omp parallel for schedule(dynamic)
  for (Eigen::Index t = 0; t < count * blocks.count(); ++t) {
    const Eigen::Index i = t % blocks.count();
    answer(t / blocks.count(), blocks.begin(i), blocks.length(i));
  }
}

// exp(s - column max) in place for each column of s (a softmax left unnormalised, so the division
// can go on the smaller product that follows); returns the column sums, each >= 1.
template <typename T>
Vec<T> exp_columns(Mat<T>& s) {
  Vec<T> sums(s.cols());
  for (Eigen::Index c = 0; c < s.cols(); ++c) {
    auto col = s.col(c);
    col = (col.array() - col.maxCoeff()).exp().matrix();
    sums(c) = col.sum();
  }
  return sums;
}

// elu(x) + 1 = max(x, 0) + exp(min(x, 0)): x + 1 for x > 0, exp(x) otherwise, as the reference, but
// every operation vectorised (Eigen 3.4's select() is not, and falls back to scalar expf).
template <typename Derived>
Mat<typename Derived::Scalar> elu_plus_one(const Eigen::MatrixBase<Derived>& x) {
  using T = typename Derived::Scalar;
  return (x.array().max(T(0)) + x.array().min(T(0)).exp()).matrix();
}

template <typename T>
T scale_of(Eigen::Index d) {
  return T(1) / std::sqrt(static_cast<T>(d));
}

}  // namespace

template <typename T>
HeadStack<T> fast_elu_linear_attention(const HeadStack<T>& q, const HeadStack<T>& k, const HeadStack<T>& v) {
  detail::check_same_heads(q, k, v);
  detail::check_attention_shapes("elu_linear_attention", q[0], k[0], v[0]);
  const Eigen::Index count = q.count(), dv = v.d();
  const detail::RowBlocks keys{k.n(), kFastRowBlock}, queries{q.n(), kFastRowBlock};
  // As the reference: where all of a head's K is negative, phi(K) = exp(K - max K) (the output is
  // unchanged by a common positive factor, and exp(K) alone could underflow to all zeros).
  std::vector<T> k_max(static_cast<std::size_t>(count));
#pragma omp parallel for schedule(static)
  for (Eigen::Index h = 0; h < count; ++h) k_max[static_cast<std::size_t>(h)] = k[h].maxCoeff();
  // Pass 1: per key block, [phi(K_j)^T V_j, phi(K_j)^T 1], (d, d_v + 1).
  const auto part = summarise_key_blocks<T>(count, keys, [&](Eigen::Index h, Eigen::Index j0, Eigen::Index b) {
    const T m = k_max[static_cast<std::size_t>(h)];
    const auto k_j = k[h].middleRows(j0, b);
    const Mat<T> phi = m < T(0) ? Mat<T>((k_j.array() - m).exp().matrix()) : elu_plus_one(k_j);
    Mat<T> s(phi.cols(), dv + 1);
    s.leftCols(dv).noalias() = phi.transpose() * v[h].middleRows(j0, b);
    s.col(dv) = phi.colwise().sum().transpose();
    return s;
  });
  const auto kvz = add_blocks(part, count, keys.count());
  // Pass 3: numerators and denominators of a query block in one product phi(Q_i) [kv, ksum].
  HeadStack<T> out(q.batch(), q.heads(), q.n(), dv);
  answer_query_blocks(count, queries, [&](Eigen::Index h, Eigen::Index i0, Eigen::Index b) {
    const auto q_i = q[h].middleRows(i0, b);
    Mat<T> phi = elu_plus_one(q_i);
    // Rows whose entries are all negative: exp(x - row max), as the reference rescales them.
    const Vec<T> row_max = q_i.rowwise().maxCoeff();
    for (Eigen::Index r = 0; r < b; ++r)
      if (row_max(r) < T(0)) phi.row(r) = (q_i.row(r).array() - row_max(r)).exp().matrix();
    const Mat<T> nd = phi * kvz[static_cast<std::size_t>(h)];
    out[h].middleRows(i0, b) = (nd.leftCols(dv).array().colwise() / nd.col(dv).array()).matrix();
  });
  return out;
}

template <typename T>
HeadStack<T> fast_linformer_attention(const HeadStack<T>& q, const HeadStack<T>& k, const HeadStack<T>& v,
                                      const LinformerProjections<T>& proj) {
  detail::check_same_heads(q, k, v);
  detail::check_attention_shapes("linformer_attention", q[0], k[0], v[0]);
  if (proj.k() < 1 || proj.n() != k.n() || proj.f.rows() != proj.k() || proj.f.cols() != proj.n())
    throw std::invalid_argument("linformer_attention: E is " + std::to_string(proj.e.rows()) + " x " +
                                std::to_string(proj.e.cols()) + " and F " + std::to_string(proj.f.rows()) + " x " +
                                std::to_string(proj.f.cols()) + "; need both kp x n with kp >= 1, n = " +
                                std::to_string(k.n()));
  const Eigen::Index count = q.count(), d = q.d(), dv = v.d();
  const detail::RowBlocks keys{k.n(), kFastRowBlock}, queries{q.n(), kFastRowBlock};
  // Pass 1: per key block, [E_j K_j, F_j V_j], (kp, d + d_v).
  const auto part = summarise_key_blocks<T>(count, keys, [&](Eigen::Index h, Eigen::Index j0, Eigen::Index b) {
    Mat<T> s(proj.k(), d + dv);
    s.leftCols(d).noalias() = proj.e.middleCols(j0, b) * k[h].middleRows(j0, b);
    s.rightCols(dv).noalias() = proj.f.middleCols(j0, b) * v[h].middleRows(j0, b);
    return s;
  });
  const auto ekfv = add_blocks(part, count, keys.count());
  // Pass 3: scores (E K) Q_i^T / sqrt(d), (kp, b), softmax down each column, times F V.
  HeadStack<T> out(q.batch(), q.heads(), q.n(), dv);
  const T scale = scale_of<T>(d);
  answer_query_blocks(count, queries, [&](Eigen::Index h, Eigen::Index i0, Eigen::Index b) {
    const Mat<T>& s = ekfv[static_cast<std::size_t>(h)];
    Mat<T> p_pq = s.leftCols(d) * (q[h].middleRows(i0, b).transpose() * scale);
    const Vec<T> sums = exp_columns(p_pq);
    out[h].middleRows(i0, b).noalias() = sums.cwiseInverse().asDiagonal() * (p_pq.transpose() * s.rightCols(dv));
  });
  return out;
}

template <typename T>
HeadStack<T> fast_nystrom_attention(const HeadStack<T>& q, const HeadStack<T>& k, const HeadStack<T>& v,
                                    Eigen::Index landmarks) {
  detail::check_same_heads(q, k, v);
  detail::check_attention_shapes("nystrom_attention", q[0], k[0], v[0]);
  const Eigen::Index m = landmarks, count = q.count(), dv = v.d();
  if (m < 1 || m > std::min(q.n(), k.n()))
    throw std::invalid_argument("nystrom_attention: landmarks m (= " + std::to_string(m) +
                                ") must lie in [1, min(n_q, n_k) = " + std::to_string(std::min(q.n(), k.n())) + "]");
  const T scale = scale_of<T>(q.d());
  // Pass 0, per head: landmarks Q~ (scaled, transposed: (d, m)) and K~ (m, d), and Z = pinv(A) of
  // A = softmax(Q~ K~^T / sqrt(d)) by the reference's iteration (Z_0 = A^T / (||A||_1 ||A||_inf)).
  std::vector<Mat<T>> ql_dm(static_cast<std::size_t>(count)), kl(ql_dm.size()), z(ql_dm.size());
#pragma omp parallel for schedule(dynamic)
  for (Eigen::Index h = 0; h < count; ++h) {
    const auto i = static_cast<std::size_t>(h);
    const Mat<T> q_l = segment_means(q[h], m);
    kl[i] = segment_means(k[h], m);
    ql_dm[i] = (q_l * scale).transpose();
    // A by the reference's own expression, so Z is the reference's Z to the bit (its sensitivity to
    // rounding in A, up to cond(A) amplified by the iteration, never enters the comparison).
    Mat<T> a = (q_l * kl[i].transpose()) * scale;
    softmax_rows_inplace(a);
    z[i] = static_cast<T>(pinv_initial_scale(std::vector<Mat<T>>{a}, PinvInit::per_matrix).front()) * a.transpose();
    for (int it = 0; it < kNystromformerPinvIterations; ++it) iterative_pinv_step(a, z[i]);
  }
  // Pass 1: per key block, B's unnormalised rows exp(Q~ K_j^T / sqrt(d) - block max) times V_j,
  // with the block maxima and sums: (m, d_v + 2) = [B_j V_j, max, sum].
  const detail::RowBlocks keys{k.n(), kFastRowBlock}, queries{q.n(), kFastRowBlock};
  const auto part = summarise_key_blocks<T>(count, keys, [&](Eigen::Index h, Eigen::Index j0, Eigen::Index b) {
    Mat<T> s_kl = k[h].middleRows(j0, b) * ql_dm[static_cast<std::size_t>(h)];  // (b, m): landmark per column
    const Vec<T> block_max = s_kl.colwise().maxCoeff().transpose();
    const Vec<T> sums = exp_columns(s_kl);
    Mat<T> s(m, dv + 2);
    s.leftCols(dv).noalias() = s_kl.transpose() * v[h].middleRows(j0, b);
    s.col(dv) = block_max;
    s.col(dv + 1) = sums;
    return s;
  });
  // Pass 2, per head: blocks merged relative to the overall maximum of each landmark row (the
  // online softmax's rescaling, so nothing overflows), in block order; then W = Z (B V), (m, d_v).
  std::vector<Mat<T>> w(static_cast<std::size_t>(count));
#pragma omp parallel for schedule(static)
  for (Eigen::Index h = 0; h < count; ++h) {
    const auto first = static_cast<std::size_t>(h * keys.count());
    Vec<T> row_max = part[first].col(dv);
    for (Eigen::Index j = 1; j < keys.count(); ++j) row_max = row_max.cwiseMax(part[first + j].col(dv));
    Mat<T> bv = Mat<T>::Zero(m, dv);
    Vec<T> sums = Vec<T>::Zero(m);
    for (Eigen::Index j = 0; j < keys.count(); ++j) {
      const Mat<T>& p = part[first + static_cast<std::size_t>(j)];
      const Vec<T> factor = (p.col(dv) - row_max).array().exp().matrix();
      bv.noalias() += factor.asDiagonal() * p.leftCols(dv);
      sums += factor.cwiseProduct(p.col(dv + 1));
    }
    w[static_cast<std::size_t>(h)].noalias() = z[static_cast<std::size_t>(h)] * (sums.cwiseInverse().asDiagonal() * bv);
  }
  // Pass 3: F_i = softmax(Q_i K~^T / sqrt(d)), computed transposed (m, b), times W.
  HeadStack<T> out(q.batch(), q.heads(), q.n(), dv);
  answer_query_blocks(count, queries, [&](Eigen::Index h, Eigen::Index i0, Eigen::Index b) {
    const auto i = static_cast<std::size_t>(h);
    Mat<T> f_lq = kl[i] * (q[h].middleRows(i0, b).transpose() * scale);
    const Vec<T> sums = exp_columns(f_lq);
    out[h].middleRows(i0, b).noalias() = sums.cwiseInverse().asDiagonal() * (f_lq.transpose() * w[i]);
  });
  return out;
}

#define ATTNLAB_INSTANTIATE_FAST(T)                                                                           \
  template HeadStack<T> fast_elu_linear_attention(const HeadStack<T>&, const HeadStack<T>&, const HeadStack<T>&); \
  template HeadStack<T> fast_linformer_attention(const HeadStack<T>&, const HeadStack<T>&, const HeadStack<T>&,   \
                                                 const LinformerProjections<T>&);                            \
  template HeadStack<T> fast_nystrom_attention(const HeadStack<T>&, const HeadStack<T>&, const HeadStack<T>&,     \
                                               Eigen::Index);
ATTNLAB_INSTANTIATE_FAST(float)
ATTNLAB_INSTANTIATE_FAST(double)
#undef ATTNLAB_INSTANTIATE_FAST

}  // namespace attnlab
