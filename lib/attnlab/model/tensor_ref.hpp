// A named view of one tensor of a model: what the optimiser, the checkpoints and the copies walk over.
#pragma once

#include <string>

#include "attnlab/core/matrix.hpp"

namespace attnlab {

// A matrix (rows, cols) or a vector (rows) in column-major storage.
template <typename T>
struct TensorRef {
  std::string name;
  T* data = nullptr;
  Eigen::Index rows = 0, cols = 0;
  bool is_vector = false;
  Eigen::Index size() const { return rows * cols; }
};

}  // namespace attnlab
