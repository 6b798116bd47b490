// The one copy of Eigen's float and double product kernels (see eigen_products.hpp): explicit
// instantiation definitions, which may follow the header's declarations in the same file.
#include "attnlab/core/eigen_products.hpp"

#include <Eigen/Dense>

ATTNLAB_EIGEN_PRODUCT_KERNELS(, float)
ATTNLAB_EIGEN_PRODUCT_KERNELS(, double)
