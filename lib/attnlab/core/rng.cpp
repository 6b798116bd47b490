// Portable seeded randomness: engine transforms and random matrix families.
#include "attnlab/core/rng.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <numbers>
#include <stdexcept>
#include <string>

namespace attnlab {

double Rng::normal() {
  if (has_spare_) {
    has_spare_ = false;
    return spare_;
  }
  // 1 - u lies in (0, 1], so the logarithm is finite.
  const double u1 = 1.0 - uniform();
  const double u2 = uniform();
  const double radius = std::sqrt(-2.0 * std::log(u1));
  const double angle = 2.0 * std::numbers::pi * u2;
  spare_ = radius * std::sin(angle);
  has_spare_ = true;
  return radius * std::cos(angle);
}

std::uint64_t derive_seed(std::uint64_t base, std::uint64_t index) {
  auto splitmix = [](std::uint64_t z) {
    z += 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  };
  return splitmix(splitmix(base) ^ (index * 0xd1b54a32d192ed03ULL + 1));
}

std::vector<std::int64_t> shuffled_indices(std::int64_t count, Rng& rng) {
  std::vector<std::int64_t> idx(static_cast<std::size_t>(std::max<std::int64_t>(count, 0)));
  std::iota(idx.begin(), idx.end(), std::int64_t{0});
  for (std::int64_t i = count - 1; i > 0; --i) {
    const auto j = static_cast<std::int64_t>(rng.uniform() * static_cast<double>(i + 1));
    std::swap(idx[static_cast<std::size_t>(i)], idx[static_cast<std::size_t>(j)]);
  }
  return idx;
}

Eigen::MatrixXd uniform_matrix(Eigen::Index rows, Eigen::Index cols, Rng& rng, double lo, double hi) {
  Eigen::MatrixXd m(rows, cols);
  for (Eigen::Index j = 0; j < cols; ++j)
    for (Eigen::Index i = 0; i < rows; ++i) m(i, j) = lo + (hi - lo) * rng.uniform();
  return m;
}

Eigen::MatrixXd random_orthonormal(Eigen::Index rows, Eigen::Index cols, Rng& rng) {
  if (cols > rows)
    throw std::invalid_argument("random_orthonormal: cols (= " + std::to_string(cols) +
                                ") is larger than rows (= " + std::to_string(rows) + ")");
  const Eigen::MatrixXd g = gaussian_matrix(rows, cols, rng);
  Eigen::HouseholderQR<Eigen::MatrixXd> qr(g);
  Eigen::MatrixXd q = qr.householderQ() * Eigen::MatrixXd::Identity(rows, cols);
  // Without the sign fix Q is not Haar-distributed (Mezzadri 2007).
  const Eigen::MatrixXd& r = qr.matrixQR();
  for (Eigen::Index j = 0; j < cols; ++j)
    if (r(j, j) < 0) q.col(j) = -q.col(j);
  return q;
}

Eigen::MatrixXd matrix_with_singular_values(Eigen::Index rows, Eigen::Index cols,
                                            const Eigen::VectorXd& s, Rng& rng) {
  const Eigen::Index k = std::min(rows, cols);
  if (s.size() != k)
    throw std::invalid_argument("matrix_with_singular_values: s has " + std::to_string(s.size()) +
                                " entries, expected min(rows, cols) = " + std::to_string(k));
  const Eigen::MatrixXd u = random_orthonormal(rows, k, rng);
  const Eigen::MatrixXd v = random_orthonormal(cols, k, rng);
  return u * s.asDiagonal() * v.transpose();
}

Eigen::VectorXd geometric_spectrum(Eigen::Index n, double cond) {
  if (!(cond >= 1.0) || !std::isfinite(cond))
    throw std::invalid_argument("geometric_spectrum: cond (= " + std::to_string(cond) + ") must be >= 1");
  Eigen::VectorXd s(n);
  for (Eigen::Index i = 0; i < n; ++i)
    s(i) = n == 1 ? 1.0 : std::pow(cond, -static_cast<double>(i) / static_cast<double>(n - 1));
  return s;
}

}  // namespace attnlab
