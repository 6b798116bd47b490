// Fixed partitions of a sequence into blocks: the unit of work of the fast kernels' parallel loops.
#pragma once

#include <Eigen/Dense>
#include <algorithm>

namespace attnlab::detail {

// Blocks [i * size, min((i + 1) * size, n)) of n rows. The partition depends on n and size
// only, never on the thread count, so every block is computed by the same operations in the
// same order whichever thread runs it: outputs are identical for any number of threads.
struct RowBlocks {
  Eigen::Index n = 0, size = 1;
  Eigen::Index count() const { return (n + size - 1) / size; }
  Eigen::Index begin(Eigen::Index i) const { return i * size; }
  Eigen::Index length(Eigen::Index i) const { return std::min(size, n - i * size); }
};

}  // namespace attnlab::detail
