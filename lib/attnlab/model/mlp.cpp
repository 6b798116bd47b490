// The MLP: forward and backward.
#include "attnlab/model/mlp.hpp"

#include "attnlab/model/gelu.hpp"
#include "attnlab/model/linear.hpp"

namespace attnlab {

template <typename T>
void mlp_forward(const Mat<T>& z, const MlpParams<T>& p, Mat<T>& y, MlpTape<T>& tape) {
  linear_forward(z, p.W1, p.b1, tape.a);  // pass 1: (N, D) -> (N, M)
  gelu_forward(tape.a, tape.g);           // pass 2: element-wise
  linear_forward(tape.g, p.W2, p.b2, y);  // pass 3: (N, M) -> (N, D)
}

template <typename T>
void mlp_backward(const Mat<T>& z, const MlpParams<T>& p, MlpTape<T>& tape, const Mat<T>& dy, Mat<T>& dz,
                  MlpParams<T>& grads) {
  // The forward's passes in reverse.
  linear_backward(tape.g, p.W2, dy, &tape.dg, grads.W2, grads.b2);
  gelu_backward(tape.a, tape.dg, tape.da);
  linear_backward(z, p.W1, tape.da, &dz, grads.W1, grads.b1);
}

template void mlp_forward<float>(const Mat<float>&, const MlpParams<float>&, Mat<float>&, MlpTape<float>&);
template void mlp_forward<double>(const Mat<double>&, const MlpParams<double>&, Mat<double>&, MlpTape<double>&);
template void mlp_backward<float>(const Mat<float>&, const MlpParams<float>&, MlpTape<float>&, const Mat<float>&,
                                  Mat<float>&, MlpParams<float>&);
template void mlp_backward<double>(const Mat<double>&, const MlpParams<double>&, MlpTape<double>&, const Mat<double>&,
                                   Mat<double>&, MlpParams<double>&);

}  // namespace attnlab
