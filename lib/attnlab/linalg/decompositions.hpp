// Eigen's dense decompositions that several files use, compiled once for float and double
// (linalg/decompositions.cpp), as core/eigen_products.hpp does for the product kernels.
//
// BDCSVD alone costs tens of seconds of -O3 code generation per object that instantiates it, and ten
// objects did (the pseudoinverses, numerical rank, the weighted low-rank theory, Linformer's best-rank
// projection, the trained-model analyses). Declared `extern template` here, each class's out-of-line
// members (compute(), the divide-and-conquer steps, the Jacobi sweeps) are instantiated in one object
// only; every user calls that one copy, compiled with the same flags, so the arithmetic is the same.
// Include this header (not <Eigen/Dense> alone) wherever one of these classes is used.
#pragma once

#include <Eigen/Dense>

extern template class Eigen::BDCSVD<Eigen::MatrixXf>;
extern template class Eigen::BDCSVD<Eigen::MatrixXd>;
// BDCSVD's solver for its small blocks, and a decomposition of its own in a few checks.
extern template class Eigen::JacobiSVD<Eigen::MatrixXf>;
extern template class Eigen::JacobiSVD<Eigen::MatrixXd>;
extern template class Eigen::SelfAdjointEigenSolver<Eigen::MatrixXf>;
extern template class Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd>;
extern template class Eigen::CompleteOrthogonalDecomposition<Eigen::MatrixXf>;
extern template class Eigen::CompleteOrthogonalDecomposition<Eigen::MatrixXd>;
// The solver's compute() and constructor taking a matrix are member templates, which `extern template class`
// does not cover: compute() for the matrix type itself, the way every user calls it, is declared here too.
extern template Eigen::SelfAdjointEigenSolver<Eigen::MatrixXf>&
Eigen::SelfAdjointEigenSolver<Eigen::MatrixXf>::compute(const Eigen::EigenBase<Eigen::MatrixXf>&, int);
extern template Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd>&
Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd>::compute(const Eigen::EigenBase<Eigen::MatrixXd>&, int);
