// Eigen's matrix-product kernels for float and double, compiled once (eigen_products.cpp) instead of
// in every object that multiplies two matrices.
//
// A product of dynamic matrices instantiates Eigen's packing routines and its GEBP micro-kernel for
// the scalar and storage orders involved; with -march=native (AVX-512 here) each instantiation costs
// a few seconds of -O3 code generation, and most of our objects instantiated the same ones. The
// explicit instantiation declarations below make every translation unit that includes this header
// (core/matrix.hpp does) call the one copy in eigen_products.cpp. Eigen marks these routines
// EIGEN_DONT_INLINE, so the machine code that runs is the same as before: results do not change.
// The template arguments are the ones Eigen's own general_matrix_matrix_product and gemv dispatch
// use (gebp_traits decides mr, nr and the packet type for the target's vector width).
#pragma once

#include <Eigen/Core>

#define ATTNLAB_EIGEN_PRODUCT_KERNELS(EXTERN, S)                                                                 \
  namespace Eigen::internal {                                                                                  \
  EXTERN template struct gebp_kernel<S, S, Index, blas_data_mapper<S, Index, ColMajor, Unaligned, 1>,          \
                                     gebp_traits<S, S>::mr, gebp_traits<S, S>::nr, false, false>;              \
  EXTERN template struct gemm_pack_lhs<S, Index, const_blas_data_mapper<S, Index, ColMajor>,                   \
                                       gebp_traits<S, S>::mr, gebp_traits<S, S>::LhsProgress,                  \
                                       gebp_traits<S, S>::LhsPacket4Packing, ColMajor>;                        \
  EXTERN template struct gemm_pack_lhs<S, Index, const_blas_data_mapper<S, Index, RowMajor>,                   \
                                       gebp_traits<S, S>::mr, gebp_traits<S, S>::LhsProgress,                  \
                                       gebp_traits<S, S>::LhsPacket4Packing, RowMajor>;                        \
  EXTERN template struct gemm_pack_rhs<S, Index, const_blas_data_mapper<S, Index, ColMajor>,                   \
                                       gebp_traits<S, S>::nr, ColMajor>;                                       \
  EXTERN template struct gemm_pack_rhs<S, Index, const_blas_data_mapper<S, Index, RowMajor>,                   \
                                       gebp_traits<S, S>::nr, RowMajor>;                                       \
  EXTERN template struct general_matrix_vector_product<Index, S, const_blas_data_mapper<S, Index, ColMajor>,   \
                                                       ColMajor, false, S,                                     \
                                                       const_blas_data_mapper<S, Index, RowMajor>, false>;     \
  EXTERN template struct general_matrix_vector_product<Index, S, const_blas_data_mapper<S, Index, RowMajor>,   \
                                                       RowMajor, false, S,                                     \
                                                       const_blas_data_mapper<S, Index, ColMajor>, false>;     \
  }

ATTNLAB_EIGEN_PRODUCT_KERNELS(extern, float)
ATTNLAB_EIGEN_PRODUCT_KERNELS(extern, double)
