// Nystrom attention (Xiong et al. 2021): softmax(Q K~^T) pinv(softmax(Q~ K~^T)) softmax(Q~ K^T) V
// with landmarks Q~, K~ the means of m contiguous segments of the sequence.
#include "attnlab/attention/nystrom.hpp"

#include <cmath>
#include <string>

#include "attnlab/core/attention_check.hpp"
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

template <typename T>
NystromFactors<T> nystrom_factors(const Mat<T>& q, const Mat<T>& k, Eigen::Index landmarks) {
  detail::check_attention_shapes("nystrom_attention", q, k, k);
  if (landmarks < 1 || landmarks > std::min(q.rows(), k.rows()))
    throw std::invalid_argument("nystrom_attention: landmarks m (= " + std::to_string(landmarks) +
                                ") must lie in [1, min(n_q, n_k) = " + std::to_string(std::min(q.rows(), k.rows())) +
                                "]");
  // q is (n_q, d), k is (n_k, d); q_l, k_l are (m, d); f (n_q, m), a (m, m), b (m, n_k).
  const T scale = T(1) / std::sqrt(static_cast<T>(q.cols()));
  // pass 1: landmarks by segment means.
  const Mat<T> q_l = segment_means(q, landmarks), k_l = segment_means(k, landmarks);
  // pass 2: the three kernels; each row softmax subtracts its row maximum so exp() cannot overflow.
  NystromFactors<T> fac;
  fac.f = (q * k_l.transpose()) * scale;
  fac.a = (q_l * k_l.transpose()) * scale;
  fac.b = (q_l * k.transpose()) * scale;
  softmax_rows_inplace(fac.f);
  softmax_rows_inplace(fac.a);
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
  HeadStack<T> out(q.batch(), q.heads(), q.n(), v.d());
#pragma omp parallel for schedule(dynamic)
  for (Eigen::Index i = 0; i < count; ++i) {
    const auto& fi = fac[static_cast<std::size_t>(i)];
    const Mat<T> bv = fi.b * v[i];
    const Mat<T> zbv = z[static_cast<std::size_t>(i)] * bv;
    out[i] = fi.f * zbv;
  }
  return out;
}

#define ATTNLAB_INSTANTIATE_NYSTROM(T)                                                                     \
  template Mat<T> segment_means(const Mat<T>&, Eigen::Index);                                             \
  template NystromFactors<T> nystrom_factors(const Mat<T>&, const Mat<T>&, Eigen::Index);                 \
  template std::vector<Mat<T>> nystrom_pinv(const std::vector<Mat<T>>&, const NystromOptions&);            \
  template Mat<T> nystrom_attention(const Mat<T>&, const Mat<T>&, const Mat<T>&, const NystromOptions&);   \
  template Mat<T> nystrom_attention_matrix(const Mat<T>&, const Mat<T>&, const NystromOptions&);          \
  template HeadStack<T> nystrom_attention(const HeadStack<T>&, const HeadStack<T>&, const HeadStack<T>&,  \
                                          const NystromOptions&);
ATTNLAB_INSTANTIATE_NYSTROM(float)
ATTNLAB_INSTANTIATE_NYSTROM(double)
#undef ATTNLAB_INSTANTIATE_NYSTROM

}  // namespace attnlab
