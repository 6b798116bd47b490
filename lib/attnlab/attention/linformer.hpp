// Linformer attention: keys and values projected along the sequence axis to k rows.
#pragma once

#include <Eigen/Dense>
#include <cstddef>

#include "attnlab/core/head_stack.hpp"
#include "attnlab/core/matrix.hpp"
#include "attnlab/core/rng.hpp"

namespace attnlab {

// The two sequence-axis projections of Linformer (Wang et al. 2020, eq. 7): E maps the
// n keys to k, F maps the n values to k. Both are k x n. Kept as an explicit value so a
// test, an experiment and a timing tool can reuse exactly the same draws.
template <typename T>
struct LinformerProjections {
  Mat<T> e;  // k x n, applied to K
  Mat<T> f;  // k x n, applied to V

  Eigen::Index k() const { return e.rows(); }
  Eigen::Index n() const { return e.cols(); }

  template <typename U>
  LinformerProjections<U> cast() const {
    return {e.template cast<U>(), f.template cast<U>()};
  }
};

enum class ProjectionSharing { shared, separate };

// E, F with i.i.d. N(0, 1/k) entries, Theorem 1's R; `shared` draws one matrix and sets
// E = F (the paper's key-value sharing), `separate` draws F after E from the same stream.
// Example: auto p = gaussian_projections(n, 256, ProjectionSharing::shared, rng);
LinformerProjections<double> gaussian_projections(Eigen::Index n, Eigen::Index k, ProjectionSharing sharing, Rng& rng);

// E = F = I_n: Linformer then is exact softmax attention (a check, and the k = n end of a sweep).
LinformerProjections<double> identity_projections(Eigen::Index n);

// E = F = segment means: row j averages positions [floor(j n / k), floor((j + 1) n / k)),
// so n not divisible by k gives segments differing in length by one. A data-independent,
// deterministic projection to compare the random one with.
LinformerProjections<double> segment_mean_projections(Eigen::Index n, Eigen::Index k);

// The n x kp attention matrix softmax(Q (E K)^T / sqrt(d)) of one head: each row is a
// probability vector over the kp projected positions.
template <typename T>
Mat<T> linformer_attention_matrix(const Mat<T>& q, const Mat<T>& k, const LinformerProjections<T>& proj);

// One head of Linformer attention, the reference kernel.
//   q: n x d, k: n x d, v: n x dv, E, F: kp x n  ->  output n x dv
//   out = softmax((Q (E K)^T) / sqrt(d)) (F V)
// Throws std::invalid_argument naming the value when n, d or kp is 0 or the shapes disagree (the
// checks of every attention kernel, core/attention_check.hpp, and E, F kp x n with n = K's rows).
template <typename T>
Mat<T> linformer_attention(const Mat<T>& q, const Mat<T>& k, const Mat<T>& v, const LinformerProjections<T>& proj);

// Every (batch, head) of a stack, in parallel over batch * heads with OpenMP; the same E, F
// for every head (Linformer's "headwise sharing"). Output shape (batch, heads, n, dv).
template <typename T>
HeadStack<T> linformer_attention(const HeadStack<T>& q, const HeadStack<T>& k, const HeadStack<T>& v,
                                 const LinformerProjections<T>& proj);

// The fast kernel of linformer_attention() on every head with the shared projections E, F (kp x n):
// the three passes of fast_passes.hpp, in parallel over (head, block) pairs; checked against the
// reference in verify/test_fast_attention.cpp.
template <typename T>
HeadStack<T> fast_linformer_attention(const HeadStack<T>& q, const HeadStack<T>& k, const HeadStack<T>& v,
                                      const LinformerProjections<T>& proj);

// Exact softmax attention softmax(Q K^T / sqrt(d)) V, formed 256 rows at a time (each block
// softmax_attention_matrix() of its queries) so the reference for n = 8192 needs 16 MB of scores
// rather than 512 MB. The reference every Linformer error is measured against (call it in double).
// The "context mapping matrix" P of Linformer's Theorem 1 is softmax_attention_matrix(q, k).
template <typename T>
Mat<T> linformer_reference_attention(const Mat<T>& q, const Mat<T>& k, const Mat<T>& v);

// Multiply-adds and memory of one head of linformer_attention, from the shapes alone: linformer_cost() in
// attention_cost.hpp, with every other method's count.

// The best rank-r approximation P_r of the attention matrix (Eckart-Young, from the SVD
// of P): the reference for what any rank-r P~, hence any projection to r rows, could reach.
// Forms the n x n matrix P and its SVD (O(n^3)), so use it for n up to a few thousand.
class BestRankAttention {
 public:
  BestRankAttention(const Mat<double>& q, const Mat<double>& k, const Mat<double>& v);

  Eigen::Index n() const { return sigma_.size(); }
  const Vec<double>& singular_values() const { return sigma_; }
  // ||U S W^T - P||_F / (n ||P||_F eps): the SVD's backward error, checked before use.
  double reconstruction_ratio() const { return reconstruction_ratio_; }

  // P_r V (n x dv), r in [0, n].
  Mat<double> output(Eigen::Index rank) const;
  // ||(P - P_r) w_j|| / ||P w_j|| for every column w_j of V: Theorem 1's per-vector error.
  Vec<double> column_errors(Eigen::Index rank) const;
  // ||(P - P_r) V||_F / ||P V||_F.
  double output_error(Eigen::Index rank) const;

 private:
  Mat<double> u_;      // n x n left singular vectors
  Vec<double> sigma_;  // n singular values, decreasing
  Mat<double> c_;      // W^T V, n x dv: V in the right singular basis
  Vec<double> exact_column_norms_;
  double exact_norm_ = 0;
  double reconstruction_ratio_ = 0;
};

// Theorem 1's random round trip R^T R w with R in R^{k x n}, R_ij ~ N(0, 1/k), drawn
// directly: k n normals and two matrix-vector products.
Vec<double> round_trip_direct(const Vec<double>& w, Eigen::Index k, Rng& rng);

// The same random vector R^T R w drawn from its exact distribution in O(n) work, whatever k:
// with g_i = sqrt(k) R_i ~ N(0, I) and a_i = g_i . w / ||w||,
//   R^T R w = (||w|| / k) sum_i a_i g_i = (||w|| / k) (c w/||w|| + sqrt(c) h),
// c = sum a_i^2 ~ chi^2_k and h ~ N(0, I - w w^T / ||w||^2) independent of c (the parts of
// g_i orthogonal to w are independent of a_i). Makes success rates at k >> n affordable.
Vec<double> round_trip_sampled(const Vec<double>& w, Eigen::Index k, Rng& rng);

// A chi-square variate with `dof` degrees of freedom (2 Gamma(dof / 2), Marsaglia-Tsang).
double chi_square_variate(double dof, Rng& rng);

}  // namespace attnlab
