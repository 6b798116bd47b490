// Nystrom attention (Xiong et al. 2021): softmax(Q K~^T) pinv(softmax(Q~ K~^T)) softmax(Q~ K^T) V
// with landmarks Q~, K~ the means of m contiguous segments of the sequence.
#include "attnlab/attention/nystrom.hpp"

#include <cmath>
#include <string>
#include <vector>

#include "attnlab/attention/fast_passes.hpp"
#include "attnlab/core/attention_check.hpp"
#include "attnlab/core/head_stack_map.hpp"
#include "attnlab/core/row_blocks.hpp"
#include "attnlab/linalg/iterative_pinv.hpp"
#include "attnlab/linalg/pseudoinverse.hpp"
#include "attnlab/core/softmax.hpp"

namespace attnlab {

template <typename T>
Mat<T> segment_means(const Mat<T>& x, Eigen::Index m) {
  const Eigen::Index n = x.rows();
  if (m < 1 || m > n)
    throw std::invalid_argument("segment_means: landmarks m (= " + std::to_string(m) + ") must lie in [1, n = " +
                                std::to_string(n) + "]");
  Mat<T> means(m, x.cols());
  for (Eigen::Index s = 0; s < m; ++s) {
    const Eigen::Index lo = s * n / m, hi = (s + 1) * n / m;  // hi > lo because m <= n
    means.row(s) = x.middleRows(lo, hi - lo).colwise().mean();
  }
  return means;
}

namespace {

// The landmark count both kernels take: 1 <= m <= min(n_q, n_k).
void check_landmarks(Eigen::Index m, Eigen::Index n_q, Eigen::Index n_k) {
  if (m < 1 || m > std::min(n_q, n_k))
    throw std::invalid_argument("nystrom_attention: landmarks m (= " + std::to_string(m) +
                                ") must lie in [1, min(n_q, n_k) = " + std::to_string(std::min(n_q, n_k)) + "]");
}

// A = softmax(Q~ K~^T / sqrt(d)), m x m, from the landmarks (m x d each): the matrix both kernels
// pseudo-invert, by one expression so that their Z agree to the bit.
template <typename T>
Mat<T> landmark_kernel(const Mat<T>& q_l, const Mat<T>& k_l, T scale) {
  Mat<T> a = (q_l * k_l.transpose()) * scale;
  softmax_rows_inplace(a);  // subtracts each row's maximum, so exp() cannot overflow
  return a;
}

}  // namespace

template <typename T>
NystromFactors<T> nystrom_factors(const Mat<T>& q, const Mat<T>& k, Eigen::Index landmarks) {
  detail::check_attention_shapes("nystrom_attention", q, k, k);
  check_landmarks(landmarks, q.rows(), k.rows());
  // q is (n_q, d), k is (n_k, d); q_l, k_l are (m, d); f (n_q, m), a (m, m), b (m, n_k).
  const T scale = T(1) / std::sqrt(static_cast<T>(q.cols()));
  // pass 1: landmarks by segment means.
  const Mat<T> q_l = segment_means(q, landmarks), k_l = segment_means(k, landmarks);
  // pass 2: the three kernels; each row softmax subtracts its row maximum so exp() cannot overflow.
  NystromFactors<T> fac;
  fac.f = (q * k_l.transpose()) * scale;
  fac.a = landmark_kernel(q_l, k_l, scale);
  fac.b = (q_l * k.transpose()) * scale;
  softmax_rows_inplace(fac.f);
  softmax_rows_inplace(fac.b);
  return fac;
}

template <typename T>
std::vector<Mat<T>> nystrom_pinv(const std::vector<Mat<T>>& a, const NystromOptions& options) {
  if (options.pinv == PinvMethod::iterative) return iterative_pinv(a, options.iterations, options.init);
  std::vector<Mat<T>> z(a.size());
  for (std::size_t i = 0; i < a.size(); ++i) z[i] = pinv_svd_relative(a[i], options.rcond).pinv;
  return z;
}

template <typename T>
Mat<T> nystrom_attention(const Mat<T>& q, const Mat<T>& k, const Mat<T>& v, const NystromOptions& options) {
  detail::check_attention_shapes("nystrom_attention", q, k, v);
  // passes 1-2: the factors F, A, B; pass 3: Z = pinv(A).
  const NystromFactors<T> fac = nystrom_factors(q, k, options.landmarks);
  const Mat<T> z = nystrom_pinv(std::vector<Mat<T>>{fac.a}, options).front();
  // pass 4: right to left, F (Z (B V)), so no n x n matrix appears: (m, d_v), (m, d_v), (n_q, d_v).
  const Mat<T> bv = fac.b * v;
  const Mat<T> zbv = z * bv;
  return fac.f * zbv;
}

template <typename T>
Mat<T> nystrom_attention_matrix(const Mat<T>& q, const Mat<T>& k, const NystromOptions& options) {
  const NystromFactors<T> fac = nystrom_factors(q, k, options.landmarks);
  const Mat<T> z = nystrom_pinv(std::vector<Mat<T>>{fac.a}, options).front();
  return fac.f * (z * fac.b);
}

template <typename T>
HeadStack<T> nystrom_attention(const HeadStack<T>& q, const HeadStack<T>& k, const HeadStack<T>& v,
                               const NystromOptions& options) {
  if (q.batch() != k.batch() || q.heads() != k.heads() || k.batch() != v.batch() || k.heads() != v.heads())
    throw std::invalid_argument("nystrom_attention: head stacks differ in (batch, heads)");
  const Eigen::Index count = q.count();
  // Checked once on head 0: exceptions must not leave the parallel loops, and all heads share shapes.
  detail::check_attention_shapes("nystrom_attention", q[0], k[0], v[0]);
  std::vector<NystromFactors<T>> fac(static_cast<std::size_t>(count));
  fac[0] = nystrom_factors(q[0], k[0], options.landmarks);
#pragma omp parallel for schedule(dynamic)
  for (Eigen::Index i = 1; i < count; ++i) fac[static_cast<std::size_t>(i)] = nystrom_factors(q[i], k[i], options.landmarks);
  std::vector<Mat<T>> a(fac.size());
  for (std::size_t i = 0; i < fac.size(); ++i) a[i] = fac[i].a;
  const std::vector<Mat<T>> z = nystrom_pinv(a, options);
  auto out = HeadStack<T>::uninitialized(q.batch(), q.heads(), q.n(), v.d());
#pragma omp parallel for schedule(dynamic)
  for (Eigen::Index i = 0; i < count; ++i) {
    const auto& fi = fac[static_cast<std::size_t>(i)];
    const Mat<T> bv = fi.b * v[i];
    const Mat<T> zbv = z[static_cast<std::size_t>(i)] * bv;
    out[i] = fi.f * zbv;
  }
  return out;
}

template <typename T>
HeadStack<T> fast_nystrom_attention(const HeadStack<T>& q, const HeadStack<T>& k, const HeadStack<T>& v,
                                    Eigen::Index landmarks) {
  detail::check_same_heads(q, k, v);
  detail::check_attention_shapes("nystrom_attention", q[0], k[0], v[0]);
  const Eigen::Index m = landmarks, count = q.count(), dv = v.d();
  check_landmarks(m, q.n(), k.n());
  const T scale = T(1) / std::sqrt(static_cast<T>(q.d()));
  // Pass 0, per head: landmarks Q~ (scaled: (m, d)) and K~ (m, d), and Z = pinv(A) of
  // A = softmax(Q~ K~^T / sqrt(d)) by the reference's pseudoinverse with its default options (the
  // iteration from Z_0 = A^T / (||A||_1 ||A||_inf)).
  std::vector<Mat<T>> ql_md(static_cast<std::size_t>(count)), kl(ql_md.size()), z(ql_md.size());
#pragma omp parallel for schedule(dynamic)
  for (Eigen::Index h = 0; h < count; ++h) {
    const auto i = static_cast<std::size_t>(h);
    const Mat<T> q_l = segment_means(q[h], m);
    kl[i] = segment_means(k[h], m);
    ql_md[i] = q_l * scale;
    // A by the reference's own function, so Z is the reference's Z to the bit (its sensitivity to
    // rounding in A, up to cond(A) amplified by the iteration, never enters the comparison).
    z[i] = nystrom_pinv(std::vector<Mat<T>>{landmark_kernel(q_l, kl[i], scale)}, NystromOptions{}).front();
  }
  // Pass 1: per key block, B's unnormalised rows exp(Q~ K_j^T / sqrt(d) - block max) times V_j,
  // with the block maxima and sums: (m, d_v + 2) = [B_j V_j, max, sum].
  const detail::RowBlocks keys{k.n(), kFastRowBlock}, queries{q.n(), kFastRowBlock};
  const auto part = detail::summarise_key_blocks<T>(count, keys, [&](Eigen::Index h, Eigen::Index j0, Eigen::Index b) {
    // (m, b): one row per landmark, as the fused exact kernel's queries (products by broadcast_gemm).
    Mat<T> s_lk(m, b);
    broadcast_gemm(s_lk, ql_md[static_cast<std::size_t>(h)], strided_view(k[h].middleRows(j0, b).transpose()), false);
    Vec<T> block_max;
    const Vec<T> sums = exp_rows_inplace(s_lk, &block_max);
    Mat<T> s(m, dv + 2);
    auto bv = s.leftCols(dv);
    broadcast_gemm(bv, s_lk, strided_view(v[h].middleRows(j0, b)), false);
    s.col(dv) = block_max;
    s.col(dv + 1) = sums;
    return s;
  });
  // Pass 2, per head: blocks merged relative to the overall maximum of each landmark row (the
  // online softmax's rescaling, so nothing overflows), in block order; then W = Z (B V), (m, d_v).
  const std::vector<Mat<T>> bv = detail::merge_softmax_blocks(part, count, keys.count());
  std::vector<Mat<T>> w(static_cast<std::size_t>(count));
#pragma omp parallel for schedule(static)
  for (Eigen::Index h = 0; h < count; ++h) {
    const auto i = static_cast<std::size_t>(h);
    w[i].noalias() = z[i] * bv[i];
  }
  // Pass 3: F_i = softmax(Q_i K~^T / sqrt(d)), (b, m) one row per query, times W.
  auto out = HeadStack<T>::uninitialized(q.batch(), q.heads(), q.n(), dv);
  detail::answer_query_blocks(count, queries, [&](Eigen::Index h, Eigen::Index i0, Eigen::Index b) {
    const auto i = static_cast<std::size_t>(h);
    detail::softmax_rows_times(q[h].middleRows(i0, b), scale, kl[i], w[i], out[h].middleRows(i0, b));
  });
  return out;
}

#define ATTNLAB_INSTANTIATE_NYSTROM(T)                                                                     \
  template Mat<T> segment_means(const Mat<T>&, Eigen::Index);                                             \
  template NystromFactors<T> nystrom_factors(const Mat<T>&, const Mat<T>&, Eigen::Index);                 \
  template std::vector<Mat<T>> nystrom_pinv(const std::vector<Mat<T>>&, const NystromOptions&);            \
  template Mat<T> nystrom_attention(const Mat<T>&, const Mat<T>&, const Mat<T>&, const NystromOptions&);   \
  template Mat<T> nystrom_attention_matrix(const Mat<T>&, const Mat<T>&, const NystromOptions&);          \
  template HeadStack<T> nystrom_attention(const HeadStack<T>&, const HeadStack<T>&, const HeadStack<T>&,  \
                                          const NystromOptions&);                                           \
  template HeadStack<T> fast_nystrom_attention(const HeadStack<T>&, const HeadStack<T>&, const HeadStack<T>&,  \
                                               Eigen::Index);
ATTNLAB_INSTANTIATE_NYSTROM(float)
ATTNLAB_INSTANTIATE_NYSTROM(double)
#undef ATTNLAB_INSTANTIATE_NYSTROM

}  // namespace attnlab
