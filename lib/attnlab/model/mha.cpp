// Multi-head attention: forward and backward.
#include "attnlab/model/mha.hpp"

#include <stdexcept>
#include <string>

#include "attnlab/model/linear.hpp"

namespace attnlab {

template <typename T>
void mha_forward(const Mat<T>& z, const MhaParams<T>& p, const TrainableAttention<T>& method, Eigen::Index n,
                 Eigen::Index heads, Mat<T>& y, MhaTape<T>& tape, bool keep_tape) {
  const Eigen::Index D = z.cols();
  if (n <= 0 || heads <= 0 || D % heads != 0 || z.rows() % n != 0 || p.Wq.cols() % heads != 0 ||
      p.Wk.cols() != p.Wq.cols() || p.Wq.cols() == 0)
    throw std::invalid_argument("mha_forward: shape (rows " + std::to_string(z.rows()) + ", D " + std::to_string(D) +
                                ", query/key columns " + std::to_string(p.Wq.cols()) + ", " + std::to_string(p.Wk.cols()) +
                                ") does not fit n = " + std::to_string(n) + ", heads = " + std::to_string(heads));
  const Eigen::Index B = z.rows() / n, dk = p.Wq.cols() / heads, dv = D / heads;
  // pass 1: the three projections, one GEMM each over every token of the chunk.
  linear_forward(z, p.Wq, p.bq, tape.q);
  linear_forward(z, p.Wk, p.bk, tape.k);
  linear_forward(z, p.Wv, p.bv, tape.v);
  // pass 2: each (image, head) is an independent attention over n tokens. The head's columns are
  // copied into contiguous (n, d_k) and (n, d_v) matrices, the method's interface.
  tape.o.resize(z.rows(), D);
  // With keep_tape the previous step's head tapes are handed back to the method, which reuses their
  // storage (no fresh allocation per step). Without it no tape survives, so a backward after an
  // evaluation forward fails loudly.
  if (keep_tape)
    tape.heads.resize(static_cast<std::size_t>(B * heads));
  else
    tape.heads.clear();
  for (Eigen::Index b = 0; b < B; ++b)
    for (Eigen::Index h = 0; h < heads; ++h) {
      tape.qh = tape.q.block(b * n, h * dk, n, dk);
      tape.kh = tape.k.block(b * n, h * dk, n, dk);
      tape.vh = tape.v.block(b * n, h * dv, n, dv);
      method.forward(h, tape.qh, tape.kh, tape.vh, tape.oh,
                     keep_tape ? &tape.heads[static_cast<std::size_t>(b * heads + h)] : nullptr);
      tape.o.block(b * n, h * dv, n, dv) = tape.oh;
    }
  // pass 3: the output projection of the concatenated heads.
  linear_forward(tape.o, p.Wo, p.bo, y);
}

template <typename T>
void mha_backward(const Mat<T>& z, const MhaParams<T>& p, const TrainableAttention<T>& method, Eigen::Index n,
                  Eigen::Index heads, MhaTape<T>& tape, const Mat<T>& dy, Mat<T>& dz, MhaParams<T>& grads,
                  std::vector<Mat<T>>* method_grads) {
  const Eigen::Index D = z.cols(), dk = p.Wq.cols() / heads, dv = D / heads, B = z.rows() / n;
  if (tape.heads.size() != static_cast<std::size_t>(B * heads))
    throw std::logic_error("mha_backward: no tape from a forward with keep_tape");
  // pass 1: back through the output projection: dout = dy Wo^T, dWo += o^T dy.
  linear_backward(tape.o, p.Wo, dy, &tape.dout, grads.Wo, grads.bo);
  // pass 2: back through each (image, head), in index order (method parameter gradients sum in a fixed order).
  tape.dq.resize(z.rows(), heads * dk);
  tape.dk.resize(z.rows(), heads * dk);
  tape.dv.resize(z.rows(), D);
  for (Eigen::Index b = 0; b < B; ++b)
    for (Eigen::Index h = 0; h < heads; ++h) {
      const auto& head_tape = tape.heads[static_cast<std::size_t>(b * heads + h)];
      if (!head_tape) throw std::logic_error("mha_backward: the method kept no tape");
      tape.doh = tape.dout.block(b * n, h * dv, n, dv);
      method.backward(h, *head_tape, tape.doh, tape.dqh, tape.dkh, tape.dvh, method_grads);
      tape.dq.block(b * n, h * dk, n, dk) = tape.dqh;
      tape.dk.block(b * n, h * dk, n, dk) = tape.dkh;
      tape.dv.block(b * n, h * dv, n, dv) = tape.dvh;
    }
  // pass 3: back through the three projections; z feeds all three, so their input gradients sum.
  grads.Wq.noalias() += z.transpose() * tape.dq;
  grads.Wk.noalias() += z.transpose() * tape.dk;
  grads.Wv.noalias() += z.transpose() * tape.dv;
  grads.bq.noalias() += tape.dq.colwise().sum().transpose();
  grads.bk.noalias() += tape.dk.colwise().sum().transpose();
  grads.bv.noalias() += tape.dv.colwise().sum().transpose();
  dz.resize(z.rows(), D);
  dz.noalias() = tape.dq * p.Wq.transpose();
  dz.noalias() += tape.dk * p.Wk.transpose();
  dz.noalias() += tape.dv * p.Wv.transpose();
}

template void mha_forward<float>(const Mat<float>&, const MhaParams<float>&, const TrainableAttention<float>&,
                                 Eigen::Index, Eigen::Index, Mat<float>&, MhaTape<float>&, bool);
template void mha_forward<double>(const Mat<double>&, const MhaParams<double>&, const TrainableAttention<double>&,
                                  Eigen::Index, Eigen::Index, Mat<double>&, MhaTape<double>&, bool);
template void mha_backward<float>(const Mat<float>&, const MhaParams<float>&, const TrainableAttention<float>&,
                                  Eigen::Index, Eigen::Index, MhaTape<float>&, const Mat<float>&, Mat<float>&,
                                  MhaParams<float>&, std::vector<Mat<float>>*);
template void mha_backward<double>(const Mat<double>&, const MhaParams<double>&, const TrainableAttention<double>&,
                                   Eigen::Index, Eigen::Index, MhaTape<double>&, const Mat<double>&, Mat<double>&,
                                   MhaParams<double>&, std::vector<Mat<double>>*);

}  // namespace attnlab
