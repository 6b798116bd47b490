// The one instantiation of each double decomposition decompositions.hpp declares (float: its sibling,
// decompositions_float.cpp; two objects, so a parallel build compiles them side by side).
#include "attnlab/linalg/decompositions.hpp"

template class Eigen::BDCSVD<Eigen::MatrixXd>;
template class Eigen::JacobiSVD<Eigen::MatrixXd>;
template class Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd>;
template Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd>&
Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd>::compute(const Eigen::EigenBase<Eigen::MatrixXd>&, int);
template class Eigen::CompleteOrthogonalDecomposition<Eigen::MatrixXd>;
