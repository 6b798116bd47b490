// The Moore-Penrose pseudoinverse by SVD with an explicit cutoff, and the Penrose conditions.
#include "attnlab/pinv.hpp"

#include <limits>

namespace attnlab {

template <typename T>
SvdPinv<T> svd_pinv(const Mat<T>& a, double rcond) {
  SvdPinv<T> out;
  out.z = Mat<T>::Zero(a.cols(), a.rows());
  if (a.size() == 0) return out;
  // Divide and conquer; Eigen hands blocks below 16 columns to one-sided Jacobi.
  Eigen::BDCSVD<Mat<T>> svd(a, Eigen::ComputeThinU | Eigen::ComputeThinV);
  const auto& s = svd.singularValues();
  const double eps = static_cast<double>(std::numeric_limits<T>::epsilon());
  const double r = rcond < 0 ? static_cast<double>(std::max(a.rows(), a.cols())) * eps : rcond;
  out.sigma_max = static_cast<double>(s(0));
  out.cutoff = r * out.sigma_max;
  for (Eigen::Index i = 0; i < s.size(); ++i) {
    const double si = static_cast<double>(s(i));
    if (!(si > out.cutoff)) break;  // singular values come sorted, largest first
    out.z.noalias() += (svd.matrixV().col(i) / s(i)) * svd.matrixU().col(i).transpose();
    out.rank = i + 1;
    out.sigma_min_kept = si;
  }
  return out;
}

template <typename T>
PenroseResiduals penrose_residuals(const Mat<T>& a, const Mat<T>& z) {
  const Mat<double> ad = a.template cast<double>(), zd = z.template cast<double>();
  const Mat<double> az = ad * zd, za = zd * ad;
  auto rel = [](double num, double den) { return den > 0 ? num / den : num; };
  PenroseResiduals r;
  r.azA = rel((az * ad - ad).norm(), ad.norm());
  r.zaz = rel((za * zd - zd).norm(), zd.norm());
  r.az_sym = rel((az - az.transpose()).norm(), az.norm());
  r.za_sym = rel((za - za.transpose()).norm(), za.norm());
  return r;
}

template SvdPinv<float> svd_pinv(const Mat<float>&, double);
template SvdPinv<double> svd_pinv(const Mat<double>&, double);
template PenroseResiduals penrose_residuals(const Mat<float>&, const Mat<float>&);
template PenroseResiduals penrose_residuals(const Mat<double>&, const Mat<double>&);

}  // namespace attnlab
