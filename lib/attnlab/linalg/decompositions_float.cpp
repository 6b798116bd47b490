// The one instantiation of each float decomposition decompositions.hpp declares (double: its sibling,
// decompositions_double.cpp; two objects, so a parallel build compiles them side by side).
#include "attnlab/linalg/decompositions.hpp"

template class Eigen::BDCSVD<Eigen::MatrixXf>;
template class Eigen::JacobiSVD<Eigen::MatrixXf>;
template class Eigen::SelfAdjointEigenSolver<Eigen::MatrixXf>;
template Eigen::SelfAdjointEigenSolver<Eigen::MatrixXf>&
Eigen::SelfAdjointEigenSolver<Eigen::MatrixXf>::compute(const Eigen::EigenBase<Eigen::MatrixXf>&, int);
template class Eigen::CompleteOrthogonalDecomposition<Eigen::MatrixXf>;
