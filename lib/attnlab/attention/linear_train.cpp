// Linear attention, trainable: Katharopoulos et al.'s elu(x) + 1 features ("linear-elu") and Shen et
// al.'s efficient attention ("linear-shen"), the definitions of linear_attention.hpp.
#include "attnlab/attention/linear_train.hpp"

#include <cmath>

namespace attnlab {

namespace {

std::string shape_text(const detail::TrainShape& s) {
  return "n = " + std::to_string(s.n) + ", d_k = " + std::to_string(s.d_k) + ", d_v = " + std::to_string(s.d_v);
}

}  // namespace

template <typename T>
std::string EluLinearTrain<T>::describe() const {
  return "linear-elu: phi(x) = elu(x) + 1, out_i = phi(q_i)^T S / phi(q_i)^T z (Katharopoulos et al.), no scale, " +
         shape_text(shape_);
}

template <typename T>
void EluLinearTrain<T>::forward(Eigen::Index head, const Mat<T>& q, const Mat<T>& k, const Mat<T>& v, Mat<T>& out,
                                std::unique_ptr<AttentionTape>* tape) const {
  detail::check_train_call("linear-elu", shape_, head, q, k, v);
  // q, k are (n, d_k), v is (n, d_v); kv is (d_k, d_v), ksum (d_k), den (n); out is (n, d_v).
  std::unique_ptr<EluLinearTape<T>> local;
  auto* t = &detail::reuse_tape(tape, local);
  // passes 1-3: the library's elu linear attention (features with their derivatives, the underflow
  // rescaling, the key-value summary, numerator over denominator), kept for the backward.
  out = elu_linear_attention(q, k, v, t, true);
  if (tape != nullptr) {
    t->v = v;
    t->out = out;
  }
}

template <typename T>
void EluLinearTrain<T>::backward(Eigen::Index head, const AttentionTape& tape, const Mat<T>& d_out, Mat<T>& d_q,
                                 Mat<T>& d_k, Mat<T>& d_v, std::vector<Mat<T>>* /*param_grads: none*/) const {
  const auto& t = detail::tape_as<EluLinearTape<T>>("linear-elu", tape);
  detail::check_train_call("linear-elu", shape_, head, t.phi_q, t.phi_k, t.v);
  detail::check_train_d_out("linear-elu", shape_, d_out);
  // g is (n, d_v): dL/d num; dden (n); dphi (n, d_k); dkv (d_k, d_v); dksum (d_k).
  // pass 1: out = diag(1/den) num: d num = diag(1/den) dO, d den_i = -(dO_i . out_i) / den_i.
  const Mat<T> g = t.den.cwiseInverse().asDiagonal() * d_out;
  const Vec<T> dden = -(g.cwiseProduct(t.out).rowwise().sum());
  // pass 2: num = phi(Q) kv, den = phi(Q) ksum.
  Mat<T> dphi(t.phi_q.rows(), t.phi_q.cols());
  dphi.noalias() = g * t.kv.transpose();
  dphi.noalias() += dden * t.ksum.transpose();
  d_q = dphi.cwiseProduct(t.dphi_q);
  Mat<T> dkv(t.kv.rows(), t.kv.cols());
  dkv.noalias() = t.phi_q.transpose() * g;
  Vec<T> dksum(t.ksum.size());
  dksum.noalias() = t.phi_q.transpose() * dden;
  // pass 3: kv = phi(K)^T V, ksum = phi(K)^T 1.
  d_v.resize(t.v.rows(), t.v.cols());
  d_v.noalias() = t.phi_k * dkv;
  dphi.noalias() = t.v * dkv.transpose();
  dphi.rowwise() += dksum.transpose();
  d_k = dphi.cwiseProduct(t.dphi_k);
}

template <typename T>
std::string ShenLinearTrain<T>::describe() const {
  return "linear-shen: softmax_row(q) (softmax_col(k)^T v) (Shen et al.'s efficient attention), no scale, " +
         shape_text(shape_);
}

template <typename T>
void ShenLinearTrain<T>::forward(Eigen::Index head, const Mat<T>& q, const Mat<T>& k, const Mat<T>& v, Mat<T>& out,
                                 std::unique_ptr<AttentionTape>* tape) const {
  detail::check_train_call("linear-shen", shape_, head, q, k, v);
  // q, k are (n, d_k), v is (n, d_v); qr_t is (d_k, n), kc (n, d_k), ctx (d_k, d_v); out is (n, d_v).
  std::unique_ptr<ShenLinearTape<T>> local;
  auto* t = &detail::reuse_tape(tape, local);
  // passes 1-4: the library's efficient attention (the two softmaxes, the context, the mix), kept for the
  // backward.
  out = efficient_attention(q, k, v, t);
  if (tape != nullptr) {
    t->v = v;
  }
}

template <typename T>
void ShenLinearTrain<T>::backward(Eigen::Index head, const AttentionTape& tape, const Mat<T>& d_out, Mat<T>& d_q,
                                  Mat<T>& d_k, Mat<T>& d_v, std::vector<Mat<T>>* /*param_grads: none*/) const {
  const auto& t = detail::tape_as<ShenLinearTape<T>>("linear-shen", tape);
  detail::check_train_call("linear-shen", shape_, head, t.kc, t.kc, t.v);
  detail::check_train_d_out("linear-shen", shape_, d_out);
  // pass 1: out = qr ctx: d qr^T = ctx dO^T (d_k, n), d ctx = qr^T dO (d_k, d_v).
  Mat<T> dqr_t(t.qr_t.rows(), t.qr_t.cols());
  dqr_t.noalias() = t.ctx * d_out.transpose();
  Mat<T> dctx(t.ctx.rows(), t.ctx.cols());
  dctx.noalias() = t.qr_t * d_out;
  // pass 2: through the feature softmax of each query (columns of qr_t).
  softmax_cols_backward_inplace(t.qr_t, dqr_t);
  d_q = dqr_t.transpose();
  // pass 3: ctx = kc^T V: d kc = V dctx^T (n, d_k), dV = kc dctx.
  d_v.resize(t.v.rows(), t.v.cols());
  d_v.noalias() = t.kc * dctx;
  d_k.resize(t.kc.rows(), t.kc.cols());
  d_k.noalias() = t.v * dctx.transpose();
  // pass 4: through the position softmax of each key feature (columns of kc).
  softmax_cols_backward_inplace(t.kc, d_k);
}

template class EluLinearTrain<float>;
template class EluLinearTrain<double>;
template class ShenLinearTrain<float>;
template class ShenLinearTrain<double>;

}  // namespace attnlab
