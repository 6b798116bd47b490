// The singular values of an attention matrix and the rank that holds a share of its energy.
#include "attnlab/model/analysis/attention_spectrum.hpp"

#include <cmath>
#include <fmt/format.h>
#include <stdexcept>

#include "attnlab/linalg/decompositions.hpp"
#include "attnlab/core/softmax.hpp"

namespace attnlab {

Mat<double> softmax_attention_matrix(const Mat<double>& q, const Mat<double>& k) {
  if (q.cols() != k.cols() || q.cols() == 0)
    throw std::invalid_argument(fmt::format("softmax_attention_matrix: q has {} columns, k {}", q.cols(), k.cols()));
  Mat<double> p = (q * k.transpose()) / std::sqrt(static_cast<double>(q.cols()));
  softmax_rows_inplace(p);
  return p;
}

Eigen::VectorXd attention_singular_values(const Mat<double>& p) {
  const Eigen::VectorXd s = Eigen::BDCSVD<Mat<double>>(p).singularValues();
  const double energy = s.squaredNorm(), frob = p.squaredNorm();
  if (!(std::abs(energy - frob) <= kSpectrumCheckTolerance * frob))
    throw std::runtime_error(fmt::format("attention_singular_values: sum of sigma^2 = {:.17g} but ||P||_F^2 = {:.17g}",
                                         energy, frob));
  return s;
}

Eigen::VectorXd cumulative_energy(const Eigen::VectorXd& singular_values) {
  Eigen::VectorXd c(singular_values.size());
  double sum = 0;
  for (Eigen::Index i = 0; i < singular_values.size(); ++i) c(i) = sum += singular_values(i) * singular_values(i);
  if (sum > 0) c /= sum;
  return c;
}

Eigen::Index energy_rank(const Eigen::VectorXd& singular_values, double fraction) {
  if (!(fraction > 0 && fraction <= 1))
    throw std::invalid_argument(fmt::format("energy_rank: fraction {} is not in (0, 1]", fraction));
  if (singular_values.size() == 0 || singular_values.squaredNorm() == 0)
    throw std::invalid_argument("energy_rank: the spectrum is empty or zero");
  const Eigen::VectorXd c = cumulative_energy(singular_values);
  for (Eigen::Index i = 0; i < c.size(); ++i)
    if (c(i) >= fraction) return i + 1;
  return c.size();  // rounding kept the last partial sum just below a fraction of 1
}

}  // namespace attnlab
