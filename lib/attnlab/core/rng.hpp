// Portable seeded randomness: a fixed engine with our own transforms.
#pragma once

#include <Eigen/Dense>
#include <cstdint>
#include <random>
#include <vector>

namespace attnlab {

// std::mt19937_64 is specified bit-for-bit by the C++ standard; the std::
// distributions are not (libstdc++ and libc++ differ), so the transforms
// below are our own and a seed names the same numbers on every platform.
class Rng {
 public:
  explicit Rng(std::uint64_t seed) : engine_(seed) {}

  std::uint64_t next_u64() { return engine_(); }

  // Uniform on [0, 1) with 53 random bits: every double k / 2^53 equally likely.
  double uniform() { return static_cast<double>(engine_() >> 11) * 0x1.0p-53; }

  // Standard normal by Box-Muller; the second value of each pair is kept for the
  // next call so no draw is wasted.
  double normal();

 private:
  std::mt19937_64 engine_;
  bool has_spare_ = false;
  double spare_ = 0.0;
};

// A seed for trial `index` of a run seeded with `base`: splitmix64 of the pair,
// so neighbouring trials get unrelated streams and the result does not depend on
// which thread runs the trial.
std::uint64_t derive_seed(std::uint64_t base, std::uint64_t index);

// 0 .. count-1 in a random order: Fisher-Yates with rng (for i = count-1 down to 1, j = floor(uniform() * (i + 1)),
// swap entries i and j); empty for count <= 0.
std::vector<std::int64_t> shuffled_indices(std::int64_t count, Rng& rng);

// rows x cols matrix of independent N(0, stddev^2) entries, filled column by column.
template <typename T = double>
Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic> gaussian_matrix(Eigen::Index rows, Eigen::Index cols,
                                                                 Rng& rng, double stddev = 1.0) {
  Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic> m(rows, cols);
  for (Eigen::Index j = 0; j < cols; ++j)
    for (Eigen::Index i = 0; i < rows; ++i) m(i, j) = static_cast<T>(stddev * rng.normal());
  return m;
}

// rows x cols matrix of independent uniform [lo, hi) entries, filled column by column.
Eigen::MatrixXd uniform_matrix(Eigen::Index rows, Eigen::Index cols, Rng& rng, double lo = 0.0,
                               double hi = 1.0);

// rows x cols matrix with orthonormal columns (cols <= rows), Haar-distributed:
// QR of a Gaussian matrix with the signs of R's diagonal moved into Q.
Eigen::MatrixXd random_orthonormal(Eigen::Index rows, Eigen::Index cols, Rng& rng);

// rows x cols matrix U diag(s) V^T with prescribed singular values s (length
// min(rows, cols)) and Haar-random U, V: the "conditioned matrix" family.
Eigen::MatrixXd matrix_with_singular_values(Eigen::Index rows, Eigen::Index cols,
                                            const Eigen::VectorXd& s, Rng& rng);

// n values spread geometrically from 1 down to 1/cond (cond >= 1).
Eigen::VectorXd geometric_spectrum(Eigen::Index n, double cond);

}  // namespace attnlab
