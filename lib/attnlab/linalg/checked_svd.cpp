// A thin SVD checked against its own backward error (checked_svd.hpp).
#include "attnlab/linalg/checked_svd.hpp"

#include <algorithm>
#include <cmath>

#include "attnlab/linalg/decompositions.hpp"
#include "attnlab/linalg/residual_ratio.hpp"

namespace attnlab {

template <typename T>
double svd_check_ratio(const Mat<T>& a, const Mat<T>& u, const Vec<T>& s, const Mat<T>& v) {
  const double n = static_cast<double>(std::max(a.rows(), a.cols()));
  const double backward = residual_ratio<T>(static_cast<double>((a - u * s.asDiagonal() * v.transpose()).norm()), n,
                                            static_cast<double>(a.norm()));
  const auto orthogonality = [&](const Mat<T>& q) {
    return residual_ratio<T>(static_cast<double>((q.transpose() * q - Mat<T>::Identity(q.cols(), q.cols())).norm()), n, 1.0);
  };
  return std::max({backward, orthogonality(u), orthogonality(v)});
}

template <typename T>
CheckedSvd<T> checked_svd(const Mat<T>& a) {
  CheckedSvd<T> out;
  if (a.size() == 0) {
    out.u = Mat<T>::Zero(a.rows(), 0);
    out.s = Vec<T>::Zero(0);
    out.v = Mat<T>::Zero(a.cols(), 0);
    return out;
  }
  {
    Eigen::BDCSVD<Mat<T>> svd(a, Eigen::ComputeThinU | Eigen::ComputeThinV);
    out.u = svd.matrixU();
    out.s = svd.singularValues();
    out.v = svd.matrixV();
  }
  out.bdcsvd_ratio = svd_check_ratio<T>(a, out.u, out.s, out.v);
  // NaN fails too: compared as `ratio <= threshold`.
  if (out.bdcsvd_ratio <= kResidualRatioThreshold) return out;
  Eigen::JacobiSVD<Mat<T>> jacobi(a, Eigen::ComputeThinU | Eigen::ComputeThinV);
  out.u = jacobi.matrixU();
  out.s = jacobi.singularValues();
  out.v = jacobi.matrixV();
  out.fallback = true;
  return out;
}

template <typename T>
double singular_value_energy_ratio(const Mat<T>& a, const Vec<T>& s) {
  const double n = static_cast<double>(std::max(a.rows(), a.cols()));
  const double frob = a.template cast<double>().squaredNorm(), energy = s.template cast<double>().squaredNorm();
  return residual_ratio<T>(std::abs(energy - frob), n, frob);
}

template <typename T>
Vec<T> checked_singular_values(const Mat<T>& a) {
  if (a.size() == 0) return Vec<T>::Zero(0);
  Vec<T> s = Eigen::BDCSVD<Mat<T>>(a).singularValues();
  // NaN fails the comparison too, but only a finite `a` has values to check.
  if (!a.allFinite() || singular_value_energy_ratio<T>(a, s) <= kResidualRatioThreshold) return s;
  return Eigen::JacobiSVD<Mat<T>>(a).singularValues();
}

template CheckedSvd<float> checked_svd(const Mat<float>&);
template CheckedSvd<double> checked_svd(const Mat<double>&);
template double svd_check_ratio(const Mat<float>&, const Mat<float>&, const Vec<float>&, const Mat<float>&);
template double svd_check_ratio(const Mat<double>&, const Mat<double>&, const Vec<double>&, const Mat<double>&);
template Vec<float> checked_singular_values(const Mat<float>&);
template Vec<double> checked_singular_values(const Mat<double>&);
template double singular_value_energy_ratio(const Mat<float>&, const Vec<float>&);
template double singular_value_energy_ratio(const Mat<double>&, const Vec<double>&);

}  // namespace attnlab
