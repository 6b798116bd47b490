// One head's M = W_Q W_K^T and S_w from the factors, in O(d d_k^2) (factored_spectrum.hpp).
#include "attnlab/qk/factored_spectrum.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "attnlab/linalg/decompositions.hpp"
#include "attnlab/linalg/numerical_rank.hpp"
#include "attnlab/linalg/power_of_two_scaling.hpp"
#include "attnlab/qk/sym_eigen.hpp"

namespace attnlab {

namespace {

// Operation counts (LAPACK's, flops = additions + multiplications):
//   Householder QR of r x n, r >= n:   2 r n^2 - 2 n^3 / 3   (xGEQRF; with r < n the roles swap)
//   C = R_1' R_2^T, (k1 x k)(k x m):   2 k1 k m
//   eigenvalues of symmetric m x m:    4 m^3 / 3            (the reduction to tridiagonal form; the QL sweeps are O(m^2))
//   singular values of k1 x m, m >= k1: 4 m k1^2 - 4 k1^3 / 3 (the reduction to bidiagonal form)
constexpr Eigen::Index kQrPanelColumns = 16;

double qr_flops(double r, double n) { return r >= n ? 2 * r * n * n - 2 * n * n * n / 3 : 2 * n * r * r - 2 * r * r * r / 3; }

}  // namespace

template <typename T>
FactoredSpectrum factored_spectrum(const Mat<T>& wq, const Mat<T>& wk) {
  const Eigen::Index d = wq.rows(), dk = wq.cols();
  if (d < 1 || dk < 1 || wk.rows() != d || wk.cols() != dk)
    throw std::invalid_argument("factored_spectrum: W_Q is " + std::to_string(d) + " x " + std::to_string(dk) + ", W_K " +
                                std::to_string(wk.rows()) + " x " + std::to_string(wk.cols()) + "; both must be d x d_k, non-empty");
  const double eps = static_cast<double>(std::numeric_limits<T>::epsilon());
  FactoredSpectrum f;

  // Pass 1: [W_Q W_K] = Q R in place (the reflectors stay below the diagonal; Q is never formed). Eigen's
  // blocked Householder QR, with panels of 16 columns rather than HouseholderQR's 48: on d x 2 d_k shapes
  // (d 768 to 8192, 2 d_k 128 and 256, float and double) 16 took 10-25% less time on the machine the
  // benchmarks run on, the panel's vector-at-a-time work staying in cache while the updates stay GEMM-shaped.
  // Each factor is first brought to unit scale by a power of two (exact): every quantity below but the three
  // norms is invariant to the factors' scales, and this way weights stored at 1e-25 or 1e30 give the bits they
  // give at unit scale instead of products that underflow to 0 or overflow (the norms are scaled back, in double).
  const Eigen::Index m = std::min(d, 2 * dk), k1 = std::min(m, dk);
  const int eq = max_abs_exponent(wq), ek = max_abs_exponent(wk);
  const double scale = std::ldexp(1.0, eq + ek);  // M = scale * M_unit exactly
  Mat<T> a(d, 2 * dk);
  a << scaled_by_power_of_two(wq, -eq), scaled_by_power_of_two(wk, -ek);
  Vec<T> reflectors(m), workspace(2 * dk);
  Eigen::internal::householder_qr_inplace_blocked<Mat<T>, Vec<T>>::run(a, reflectors, kQrPanelColumns, workspace.data());
  const Mat<T> r = a.topRows(m).template triangularView<Eigen::Upper>();

  // Pass 2: C = R_1 R_2^T (m x m), of which only the first k1 rows can be nonzero (R_1 is upper triangular).
  Mat<T> c = Mat<T>::Zero(m, m);
  c.topRows(k1).noalias() = r.topLeftCorner(k1, dk) * r.rightCols(dk).transpose();
  const Mat<double> cd = c.template cast<double>();
  const double unit_m_norm = cd.norm();
  f.m_norm = unit_m_norm * scale;
  f.skew_share = unit_m_norm > 0 ? 0.5 * (cd - cd.transpose()).norm() / unit_m_norm : 0.0;

  // Pass 3: M's singular values are C's top k1 rows' (R2), with numerical_rank's tolerance for M (d x d).
  const Vec<T> sigma = checked_singular_values<T>(Mat<T>(c.topRows(k1)));  // BDCSVD is wrong on some (checked_svd.hpp)
  const double tol = rank_tolerance<T>(sigma, d, d);
  f.rank_m = (sigma.template cast<double>().array() > tol).count();

  // Pass 4: S_w's nonzero eigenvalues are T's, T = (C + C^T) / 2 (m x m), exactly symmetric by construction.
  const Mat<T> t = (c + c.transpose()) / T(2);
  const Vec<T> lambda = Eigen::SelfAdjointEigenSolver<Mat<T>>(t, Eigen::EigenvaluesOnly).eigenvalues();
  const EigenvalueSigns signs = count_eigenvalue_signs(lambda, d);
  f.nonzero_s = signs.nonzero;
  f.positive_s = signs.positive;
  f.negative_s = signs.negative;

  // Pass 5: R6. The d_k largest |lambda| keep sum lambda_i^2 of ||S_w||_F^2; the worst y sees lambda_{d_k+1}.
  std::vector<double> squares(static_cast<std::size_t>(lambda.size()));
  for (Eigen::Index i = 0; i < lambda.size(); ++i) squares[static_cast<std::size_t>(i)] = static_cast<double>(lambda(i)) * lambda(i);
  std::sort(squares.begin(), squares.end(), std::greater<>());
  double total = 0, kept = 0;
  for (std::size_t i = 0; i < squares.size(); ++i) {
    total += squares[i];
    if (i < static_cast<std::size_t>(dk)) kept += squares[i];
  }
  const double unit_s_norm = std::sqrt(total);
  const double unit_lambda_next = squares.size() > static_cast<std::size_t>(dk) ? std::sqrt(squares[static_cast<std::size_t>(dk)]) : 0.0;
  f.s_norm = unit_s_norm * scale;
  f.kept_share = total > 0 ? kept / total : 1.0;
  f.lambda_next = unit_lambda_next * scale;
  f.r6_ratio = total > 0 ? unit_lambda_next / (static_cast<double>(d) * eps * unit_s_norm) : 0.0;

  const double dd = static_cast<double>(d), n = static_cast<double>(2 * dk), mm = static_cast<double>(m),
               kk = static_cast<double>(k1);
  f.flops = qr_flops(dd, n) + 2 * kk * static_cast<double>(dk) * mm + 4 * mm * mm * mm / 3 + (4 * mm * kk * kk - 4 * kk * kk * kk / 3);
  return f;
}

template FactoredSpectrum factored_spectrum<float>(const Mat<float>&, const Mat<float>&);
template FactoredSpectrum factored_spectrum<double>(const Mat<double>&, const Mat<double>&);

}  // namespace attnlab
