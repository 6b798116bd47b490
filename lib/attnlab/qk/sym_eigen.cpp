// The eigen-decomposition of S_w three ways: dense, Lanczos (Spectra), thin QR.
#include "attnlab/qk/sym_eigen.hpp"

#include <Spectra/SymEigsSolver.h>
#include <algorithm>
#include <limits>
#include <numeric>

#include "attnlab/linalg/decompositions.hpp"
#include "attnlab/linalg/residual_ratio.hpp"

namespace attnlab {

std::string to_string(EigenStatus s) {
  switch (s) {
    case EigenStatus::ok: return "ok";
    case EigenStatus::not_converged: return "not_converged";
    case EigenStatus::not_applicable: return "not_applicable";
    case EigenStatus::solver_error: return "solver_error";
  }
  return "solver_error";
}

namespace {

// Reorders pairs by decreasing |lambda|, ties by index, so every path lists them alike.
template <typename T>
void sort_by_magnitude(EigenPairs<T>& p) {
  std::vector<Eigen::Index> order(static_cast<std::size_t>(p.values.size()));
  std::iota(order.begin(), order.end(), Eigen::Index{0});
  std::stable_sort(order.begin(), order.end(), [&](Eigen::Index a, Eigen::Index b) {
    return std::abs(p.values(a)) > std::abs(p.values(b));
  });
  Vec<T> values(p.values.size());
  Mat<T> vectors(p.vectors.rows(), p.vectors.cols());
  for (std::size_t i = 0; i < order.size(); ++i) {
    values(static_cast<Eigen::Index>(i)) = p.values(order[i]);
    vectors.col(static_cast<Eigen::Index>(i)) = p.vectors.col(order[i]);
  }
  p.values = std::move(values);
  p.vectors = std::move(vectors);
}

}  // namespace

template <typename T>
EigenPairs<T> eigen_dense(const Mat<T>& s) {
  EigenPairs<T> p;
  Eigen::SelfAdjointEigenSolver<Mat<T>> solver(s);
  if (solver.info() != Eigen::Success) {
    p.status = EigenStatus::not_converged;
    p.detail = "SelfAdjointEigenSolver did not converge";
    return p;
  }
  p.values = solver.eigenvalues();
  p.vectors = solver.eigenvectors();
  sort_by_magnitude(p);
  return p;
}

template <typename T>
EigenPairs<T> eigen_lanczos(const Mat<T>& wq, const Mat<T>& wk, Eigen::Index nev) {
  EigenPairs<T> p;
  const Eigen::Index d = wq.rows();
  if (nev < 1 || nev >= d) {
    p.status = EigenStatus::not_applicable;
    p.detail = "Lanczos needs 1 <= nev < d (nev = " + std::to_string(nev) + ", d = " + std::to_string(d) + ")";
    return p;
  }
  if (wq.squaredNorm() == T(0) || wk.squaredNorm() == T(0)) {
    // S_w = 0: every vector is an eigenvector of 0; Spectra 1.0.1 throws here.
    p.values = Vec<T>::Zero(nev);
    p.vectors = Mat<T>::Identity(d, nev);
    p.detail = "zero operator answered directly";
    return p;
  }
  SymmetricPartOp<T> op(wq, wk);
  // ncv >= 2 nev + 1 is Spectra's recommendation for reliable convergence.
  const Eigen::Index ncv = std::min(d, std::max<Eigen::Index>(2 * nev + 1, 20));
  try {
    Spectra::SymEigsSolver<SymmetricPartOp<T>> solver(op, nev, ncv);
    solver.init();
    // Relative tolerance on the Ritz residuals: 1e-10, but never below what T can resolve.
    const T tol = std::max(static_cast<T>(1e-10), T(10) * std::numeric_limits<T>::epsilon());
    solver.compute(Spectra::SortRule::LargestMagn, 1000, tol);
    p.operator_applications = solver.num_operations();
    if (solver.info() != Spectra::CompInfo::Successful) {
      p.status = solver.info() == Spectra::CompInfo::NotConverging ? EigenStatus::not_converged : EigenStatus::solver_error;
      p.detail = "Spectra reported no success";
      return p;
    }
    p.values = solver.eigenvalues();
    p.vectors = solver.eigenvectors();
  } catch (const std::exception& e) {
    p.status = EigenStatus::solver_error;
    p.detail = std::string("Spectra threw: ") + e.what();
    return p;
  }
  sort_by_magnitude(p);
  return p;
}

template <typename T>
EigenPairs<T> eigen_low_rank_qr(const Mat<T>& wq, const Mat<T>& wk) {
  const Eigen::Index d = wq.rows(), dk = wq.cols();
  Mat<T> a(d, 2 * dk);
  a << wq, wk;
  Eigen::HouseholderQR<Mat<T>> qr(a);
  const Eigen::Index m = std::min(d, 2 * dk);
  const Mat<T> q = qr.householderQ() * Mat<T>::Identity(d, m);
  const Mat<T> r = qr.matrixQR().topRows(m).template triangularView<Eigen::Upper>();
  const Mat<T> r1 = r.leftCols(dk), r2 = r.rightCols(dk);
  // T = Q^T S_w Q is exactly symmetric by construction, so the small solver sees no skew noise.
  Mat<T> small = r1 * r2.transpose();
  small = (small + small.transpose()).eval() / T(2);
  Eigen::SelfAdjointEigenSolver<Mat<T>> solver(small);
  EigenPairs<T> p;
  if (solver.info() != Eigen::Success) {
    p.status = EigenStatus::not_converged;
    p.detail = "small SelfAdjointEigenSolver did not converge";
    return p;
  }
  p.values = solver.eigenvalues();
  p.vectors = q * solver.eigenvectors();
  sort_by_magnitude(p);
  return p;
}

template <typename T>
EigenPairs<T> leading_pairs(const EigenPairs<T>& pairs, Eigen::Index count) {
  EigenPairs<T> out = pairs;
  const Eigen::Index k = std::min<Eigen::Index>(count, pairs.values.size());
  out.values = pairs.values.head(k);
  out.vectors = pairs.vectors.leftCols(k);
  return out;
}

template <typename T>
double eigen_residual_ratio(const Mat<T>& wq, const Mat<T>& wk, const EigenPairs<T>& pairs) {
  const Mat<double> q = wq.template cast<double>(), k = wk.template cast<double>();
  const Mat<double> v = pairs.vectors.template cast<double>();
  const Vec<double> l = pairs.values.template cast<double>();
  const Mat<double> sv = 0.5 * (q * (k.transpose() * v) + k * (q.transpose() * v));
  const double resid = (sv - v * l.asDiagonal()).norm();
  return residual_ratio<T>(resid, static_cast<double>(wq.rows()), symmetric_part_norm(wq, wk));
}

template <typename T>
double orthogonality_ratio(const Mat<T>& v) {
  const Mat<double> vd = v.template cast<double>();
  const double resid = (vd.transpose() * vd - Mat<double>::Identity(v.cols(), v.cols())).norm();
  return residual_ratio<T>(resid, static_cast<double>(v.rows()), 1.0);
}

template <typename T>
Eigen::Index count_nonzero_eigenvalues(const Vec<T>& values, Eigen::Index d) {
  return count_eigenvalue_signs(values, d).nonzero;
}

template <typename T>
EigenvalueSigns count_eigenvalue_signs(const Vec<T>& values, Eigen::Index d) {
  EigenvalueSigns c;
  if (values.size() == 0) return c;
  const double tol = static_cast<double>(d) * static_cast<double>(std::numeric_limits<T>::epsilon()) *
                     static_cast<double>(values.cwiseAbs().maxCoeff());
  for (Eigen::Index i = 0; i < values.size(); ++i) {
    if (static_cast<double>(values(i)) > tol) ++c.positive;
    if (static_cast<double>(values(i)) < -tol) ++c.negative;
  }
  c.nonzero = c.positive + c.negative;
  return c;
}

#define ATTNLAB_INSTANTIATE_SYM_EIGEN(T)                                                   \
  template EigenPairs<T> eigen_dense<T>(const Mat<T>&);                                    \
  template EigenPairs<T> eigen_lanczos<T>(const Mat<T>&, const Mat<T>&, Eigen::Index);      \
  template EigenPairs<T> eigen_low_rank_qr<T>(const Mat<T>&, const Mat<T>&);               \
  template EigenPairs<T> leading_pairs<T>(const EigenPairs<T>&, Eigen::Index);             \
  template double eigen_residual_ratio<T>(const Mat<T>&, const Mat<T>&, const EigenPairs<T>&); \
  template double orthogonality_ratio<T>(const Mat<T>&);                                   \
  template Eigen::Index count_nonzero_eigenvalues<T>(const Vec<T>&, Eigen::Index);                \
  template EigenvalueSigns count_eigenvalue_signs<T>(const Vec<T>&, Eigen::Index);
ATTNLAB_INSTANTIATE_SYM_EIGEN(float)
ATTNLAB_INSTANTIATE_SYM_EIGEN(double)
#undef ATTNLAB_INSTANTIATE_SYM_EIGEN

}  // namespace attnlab
