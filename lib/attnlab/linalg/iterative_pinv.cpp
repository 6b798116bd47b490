// The iterative pseudoinverse of Razavi et al. (2014) used by Nystromformer:
// Z <- 1/4 Z (13 I - A Z (15 I - A Z (7 I - A Z))), with the initialisations used in practice.
#include "attnlab/linalg/iterative_pinv.hpp"

#include <stdexcept>

namespace attnlab {

const std::vector<PinvInit>& pinv_inits() {
  static const std::vector<PinvInit> all = {PinvInit::per_matrix, PinvInit::per_matrix_one, PinvInit::batch_max_one,
                                            PinvInit::batch_max_both};
  return all;
}

std::string to_string(PinvInit init) {
  switch (init) {
    case PinvInit::per_matrix: return "per_matrix";
    case PinvInit::per_matrix_one: return "per_matrix_one";
    case PinvInit::batch_max_one: return "batch_max_one";
    case PinvInit::batch_max_both: return "batch_max_both";
  }
  throw std::invalid_argument("to_string: unknown PinvInit");
}

namespace {

// ||A||_1: maximum absolute column sum; ||A||_inf: maximum absolute row sum; *where: the first column or row
// attaining it.
template <typename T>
double norm_one(const Mat<T>& a, Eigen::Index* where = nullptr) {
  Eigen::Index i = 0;
  const double norm = static_cast<double>(a.cwiseAbs().colwise().sum().maxCoeff(&i));
  if (where != nullptr) *where = i;
  return norm;
}
template <typename T>
double norm_inf(const Mat<T>& a, Eigen::Index* where = nullptr) {
  Eigen::Index i = 0;
  const double norm = static_cast<double>(a.cwiseAbs().rowwise().sum().maxCoeff(&i));
  if (where != nullptr) *where = i;
  return norm;
}

// 1 / denom, or 0 for denom = 0: a zero matrix has pseudoinverse zero, and alpha = 0 gives Z_0 = 0, a fixed
// point of the iteration.
double inverse_or_zero(double denom) { return denom > 0 ? 1.0 / denom : 0.0; }

template <typename T>
void check_batch(const std::vector<Mat<T>>& batch) {
  for (std::size_t b = 0; b < batch.size(); ++b)
    if (batch[b].rows() != batch[b].cols() || batch[b].rows() < 1)
      throw std::invalid_argument("iterative_pinv: matrix " + std::to_string(b) + " is " +
                                  std::to_string(batch[b].rows()) + " x " + std::to_string(batch[b].cols()) +
                                  "; need square and at least 1 x 1");
}

}  // namespace

template <typename T>
PinvScale per_matrix_pinv_scale(const Mat<T>& a) {
  check_batch(std::vector<Mat<T>>{a});
  PinvScale s;
  s.alpha = inverse_or_zero(norm_one(a, &s.argmax_col) * norm_inf(a, &s.argmax_row));
  return s;
}

template <typename T>
std::vector<double> pinv_initial_scale(const std::vector<Mat<T>>& batch, PinvInit init) {
  check_batch(batch);
  std::vector<double> alpha(batch.size());
  double max_one = 0, max_inf = 0;
  for (const auto& a : batch) {
    max_one = std::max(max_one, norm_one(a));
    max_inf = std::max(max_inf, norm_inf(a));
  }
  for (std::size_t b = 0; b < batch.size(); ++b) {
    switch (init) {
      case PinvInit::per_matrix: alpha[b] = per_matrix_pinv_scale(batch[b]).alpha; break;
      case PinvInit::per_matrix_one: alpha[b] = inverse_or_zero(norm_one(batch[b])); break;
      case PinvInit::batch_max_one: alpha[b] = inverse_or_zero(max_one); break;
      case PinvInit::batch_max_both: alpha[b] = inverse_or_zero(max_one * max_inf); break;
    }
  }
  return alpha;
}

template <typename T>
void iterative_pinv_step(const Mat<T>& a, Mat<T>& z, PinvStepTerms<T>* terms) {
  // a, z, az, inner, outer are (m, m); pass 2 of iterative_pinv, evaluated inside out (Horner form): the
  // polynomial in AZ needs three products with AZ plus the one forming it.
  PinvStepTerms<T> local;
  PinvStepTerms<T>& t = terms != nullptr ? *terms : local;
  const Mat<T> eye = Mat<T>::Identity(a.rows(), a.rows());
  t.az.noalias() = a * z;
  t.inner = T(15) * eye - t.az * (T(7) * eye - t.az);
  t.outer = T(13) * eye - t.az * t.inner;
  z = (T(0.25) * z) * t.outer;
}

template <typename T>
std::vector<Mat<T>> iterative_pinv(const std::vector<Mat<T>>& batch, int iterations, PinvInit init) {
  if (iterations < 0)
    throw std::invalid_argument("iterative_pinv: iterations (= " + std::to_string(iterations) + ") must be >= 0");
  const std::vector<double> alpha = pinv_initial_scale(batch, init);
  std::vector<Mat<T>> out(batch.size());
  const auto count = static_cast<std::ptrdiff_t>(batch.size());
#pragma omp parallel for schedule(dynamic)
  for (std::ptrdiff_t b = 0; b < count; ++b) {
    const Mat<T>& a = batch[static_cast<std::size_t>(b)];
    // a, z are (m, m).
    // pass 1: Z_0 = alpha A^T. A Z_0 = alpha A A^T has eigenvalues alpha sigma_i^2, in (0, 1] when
    // alpha <= 1 / sigma_max^2, which 1 / (||A||_1 ||A||_inf) guarantees; convergence needs (0, 2).
    Mat<T> z = static_cast<T>(alpha[static_cast<std::size_t>(b)]) * a.transpose();
    // pass 2: the iteration, each step raising the order of I - A Z to the seventh power.
    for (int it = 0; it < iterations; ++it) iterative_pinv_step(a, z);
    out[static_cast<std::size_t>(b)] = std::move(z);
  }
  return out;
}

template <typename T>
Mat<T> iterative_pinv(const Mat<T>& a, int iterations, PinvInit init) {
  return iterative_pinv(std::vector<Mat<T>>{a}, iterations, init).front();
}

template void iterative_pinv_step(const Mat<float>&, Mat<float>&, PinvStepTerms<float>*);
template void iterative_pinv_step(const Mat<double>&, Mat<double>&, PinvStepTerms<double>*);
template PinvScale per_matrix_pinv_scale(const Mat<float>&);
template PinvScale per_matrix_pinv_scale(const Mat<double>&);
template std::vector<double> pinv_initial_scale(const std::vector<Mat<float>>&, PinvInit);
template std::vector<double> pinv_initial_scale(const std::vector<Mat<double>>&, PinvInit);
template std::vector<Mat<float>> iterative_pinv(const std::vector<Mat<float>>&, int, PinvInit);
template std::vector<Mat<double>> iterative_pinv(const std::vector<Mat<double>>&, int, PinvInit);
template Mat<float> iterative_pinv(const Mat<float>&, int, PinvInit);
template Mat<double> iterative_pinv(const Mat<double>&, int, PinvInit);

}  // namespace attnlab
