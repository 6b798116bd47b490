// Moore-Penrose pseudoinverses three ways and the Penrose conditions.
#include "attnlab/linalg/pseudoinverse.hpp"

#include "attnlab/linalg/checked_svd.hpp"
#include "attnlab/linalg/decompositions.hpp"
#include "attnlab/linalg/numerical_rank.hpp"

namespace attnlab {

namespace {

// A^+ from a thin SVD with the absolute cutoff `cutoff(s)` computed from the singular values.
template <typename T, typename Cutoff>
Pseudoinverse<T> pinv_from_svd(const Mat<T>& a, Cutoff cutoff) {
  Pseudoinverse<T> out;
  if (a.size() == 0) {
    out.pinv = Mat<T>::Zero(a.cols(), a.rows());
    return out;
  }
  // a is m x n; U is m x k, V is n x k with k = min(m, n). Checked: Eigen's BDCSVD is wrong on some matrices
  // (checked_svd.hpp).
  const CheckedSvd<T> svd = checked_svd<T>(a);
  const Vec<T>& s = svd.s;
  out.cutoff = cutoff(s);
  out.sigma_max = static_cast<double>(s(0));
  Vec<T> inv = Vec<T>::Zero(s.size());
  for (Eigen::Index i = 0; i < s.size(); ++i)
    if (static_cast<double>(s(i)) > out.cutoff) {
      inv(i) = T(1) / s(i);
      ++out.rank;
      out.sigma_min_kept = static_cast<double>(s(i));  // sorted, largest first
    }
  out.pinv = svd.v * inv.asDiagonal() * svd.u.transpose();
  return out;
}

}  // namespace

template <typename T>
Pseudoinverse<T> pinv_svd(const Mat<T>& a, double cutoff) {
  return pinv_from_svd<T>(a, [&](const Vec<T>& s) {
    return cutoff < 0 ? rank_tolerance<T>(s, a.rows(), a.cols()) : cutoff;
  });
}

template <typename T>
Pseudoinverse<T> pinv_svd_relative(const Mat<T>& a, double rcond) {
  return pinv_from_svd<T>(a, [&](const Vec<T>& s) {
    return rcond < 0 ? rank_tolerance<T>(s, a.rows(), a.cols()) : rcond * static_cast<double>(s(0));
  });
}

template <typename T>
Pseudoinverse<T> pinv_cod(const Mat<T>& a) {
  Eigen::CompleteOrthogonalDecomposition<Mat<T>> cod(a);
  Pseudoinverse<T> out;
  out.pinv = cod.pseudoInverse();
  out.rank = cod.rank();
  out.cutoff = static_cast<double>(cod.threshold()) * static_cast<double>(cod.maxPivot());
  return out;
}

template <typename T>
bool has_full_column_rank(const Mat<T>& a) {
  return a.rows() >= a.cols() && numerical_rank(a) == a.cols();
}

template <typename T>
NormalEquationsPinv<T> pinv_normal_equations(const Mat<T>& a) {
  NormalEquationsPinv<T> out;
  out.rank = numerical_rank(a);
  out.valid = a.rows() >= a.cols() && out.rank == a.cols();
  const Mat<T> gram = a.transpose() * a;  // n x n, singular unless full column rank
  out.pinv = gram.partialPivLu().solve(a.transpose());
  return out;
}

template <typename T>
PenroseResiduals penrose_residuals(const Mat<T>& a, const Mat<T>& p) {
  const Mat<double> ad = a.template cast<double>(), pd = p.template cast<double>();
  const Mat<double> ap = ad * pd, pa = pd * ad;
  PenroseResiduals r;
  r.a_norm = ad.norm();
  r.p_norm = pd.norm();
  r.ap_norm = ap.norm();
  r.pa_norm = pa.norm();
  r.apa = (ap * ad - ad).norm();
  r.pap = (pa * pd - pd).norm();
  r.ap_sym = (ap.transpose() - ap).norm();
  r.pa_sym = (pa.transpose() - pa).norm();
  return r;
}

template Pseudoinverse<float> pinv_svd(const Mat<float>&, double);
template Pseudoinverse<double> pinv_svd(const Mat<double>&, double);
template Pseudoinverse<float> pinv_svd_relative(const Mat<float>&, double);
template Pseudoinverse<double> pinv_svd_relative(const Mat<double>&, double);
template Pseudoinverse<float> pinv_cod(const Mat<float>&);
template Pseudoinverse<double> pinv_cod(const Mat<double>&);
template bool has_full_column_rank(const Mat<float>&);
template bool has_full_column_rank(const Mat<double>&);
template NormalEquationsPinv<float> pinv_normal_equations(const Mat<float>&);
template NormalEquationsPinv<double> pinv_normal_equations(const Mat<double>&);
template PenroseResiduals penrose_residuals(const Mat<float>&, const Mat<float>&);
template PenroseResiduals penrose_residuals(const Mat<double>&, const Mat<double>&);

}  // namespace attnlab
