// A batch x heads stack of n x d matrices: the shape every attention kernel takes.
#pragma once

#include <Eigen/Dense>
#include <stdexcept>
#include <string>
#include <vector>

namespace attnlab {

// Tensor of shape (batch, heads, n, d), stored as batch * heads column-major n x d
// matrices: the per-head kernels are written against one matrix, and parallel loops
// run over the flat index b * heads + h.
template <typename T>
class HeadStack {
 public:
  using Matrix = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic>;

  HeadStack() = default;
  // Every entry zero.
  HeadStack(Eigen::Index batch, Eigen::Index heads, Eigen::Index n, Eigen::Index d) : HeadStack(batch, heads, n, d, 0) {
    for (Matrix& m : blocks_) m.setZero();
  }

  // Every entry allocated but not written (Eigen's resize), for a kernel that writes all of its output in its
  // parallel passes. Zero-filling first is a serial pass over the whole output: 33 MB at batch 32, heads 4,
  // n 1024, d 64, 4% of the fast linear attention's time (perf, issue 17), while the other thread waits.
  static HeadStack uninitialized(Eigen::Index batch, Eigen::Index heads, Eigen::Index n, Eigen::Index d) {
    return HeadStack(batch, heads, n, d, 0);
  }

  Eigen::Index batch() const { return batch_; }
  Eigen::Index heads() const { return heads_; }
  Eigen::Index n() const { return n_; }
  Eigen::Index d() const { return d_; }
  Eigen::Index count() const { return batch_ * heads_; }

  Matrix& at(Eigen::Index b, Eigen::Index h) { return blocks_[flat(b, h)]; }
  const Matrix& at(Eigen::Index b, Eigen::Index h) const { return blocks_[flat(b, h)]; }
  Matrix& operator[](Eigen::Index i) { return blocks_[static_cast<std::size_t>(i)]; }
  const Matrix& operator[](Eigen::Index i) const { return blocks_[static_cast<std::size_t>(i)]; }

  template <typename U>
  HeadStack<U> cast() const {
    HeadStack<U> out(batch_, heads_, n_, d_);
    for (Eigen::Index i = 0; i < count(); ++i) out[i] = (*this)[i].template cast<U>();
    return out;
  }

 private:
  std::size_t flat(Eigen::Index b, Eigen::Index h) const {
    if (b < 0 || b >= batch_ || h < 0 || h >= heads_)
      throw std::out_of_range("HeadStack: index (" + std::to_string(b) + ", " + std::to_string(h) + ") out of range");
    return static_cast<std::size_t>(b * heads_ + h);
  }

  HeadStack(Eigen::Index batch, Eigen::Index heads, Eigen::Index n, Eigen::Index d, int /*allocate only*/)
      : batch_(batch), heads_(heads), n_(n), d_(d) {
    if (batch < 1 || heads < 1 || n < 0 || d < 0)
      throw std::invalid_argument("HeadStack: bad shape (" + std::to_string(batch) + ", " + std::to_string(heads) +
                                  ", " + std::to_string(n) + ", " + std::to_string(d) + ")");
    blocks_.resize(static_cast<std::size_t>(batch * heads));
    for (Matrix& m : blocks_) m.resize(n, d);
  }

  Eigen::Index batch_ = 0, heads_ = 0, n_ = 0, d_ = 0;
  std::vector<Matrix> blocks_;
};

}  // namespace attnlab
