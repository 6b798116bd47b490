// The matrix and vector aliases every layer of attnlab is written against.
#pragma once

#include <Eigen/Dense>

#include "attnlab/core/eigen_products.hpp"

namespace attnlab {

// Column-major, dynamic size: the layout of Eigen's defaults and of every kernel here.
template <typename T>
using Mat = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic>;
template <typename T>
using Vec = Eigen::Matrix<T, Eigen::Dynamic, 1>;

}  // namespace attnlab
