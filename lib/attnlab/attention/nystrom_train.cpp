// Nystrom attention, trainable: segment-mean landmarks and Nystromformer's iterative pseudoinverse,
// differentiated through every iteration and through the initial scaling.
#include "attnlab/attention/nystrom_train.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "attnlab/attention/nystrom.hpp"
#include "attnlab/linalg/iterative_pinv.hpp"

namespace attnlab {

namespace {

// The landmarks' backward: segment s of segment_means() averages rows [floor(s n / m),
// floor((s + 1) n / m)), so each of its rows receives d_mean_s / length.
template <typename T>
void add_segment_means_backward(const Mat<T>& d_means, Mat<T>& d_x) {
  const Eigen::Index n = d_x.rows(), m = d_means.rows();
  for (Eigen::Index s = 0; s < m; ++s) {
    const Eigen::Index lo = s * n / m, hi = (s + 1) * n / m;
    const auto share = (d_means.row(s) / static_cast<T>(hi - lo)).eval();
    d_x.middleRows(lo, hi - lo).rowwise() += share;
  }
}

}  // namespace

template <typename T>
NystromTrain<T>::NystromTrain(const detail::TrainShape& shape, Eigen::Index landmarks, int iterations)
    : shape_(shape),
      m_(landmarks == 0 ? std::min<Eigen::Index>(64, shape.n) : landmarks),
      iterations_(iterations == 0 ? kNystromformerPinvIterations : iterations) {
  if (m_ < 1 || m_ > shape.n)
    throw std::invalid_argument("nystrom: landmarks (= " + std::to_string(m_) + ") must lie in [1, n = " +
                                std::to_string(shape.n) + "]");
  if (iterations_ < 1)
    throw std::invalid_argument("nystrom: pinv_iterations (= " + std::to_string(iterations_) +
                                ") must be at least 1");
}

template <typename T>
std::string NystromTrain<T>::describe() const {
  return "nystrom: F Z (B v) with m = " + std::to_string(m_) +
         " segment-mean landmarks (default min(64, n)), Z = " + std::to_string(iterations_) +
         " iterations (default " + std::to_string(kNystromformerPinvIterations) +
         ") of Nystromformer's iterative pseudoinverse from Z_0 = A^T / (||A||_1 ||A||_inf), differentiated "
         "through every iterate and through Z_0's scale (subgradient at the first maximiser of each norm), n = " +
         std::to_string(shape_.n) + ", d_k = " + std::to_string(shape_.d_k) + ", d_v = " + std::to_string(shape_.d_v);
}

template <typename T>
void NystromTrain<T>::forward(Eigen::Index head, const Mat<T>& q, const Mat<T>& k, const Mat<T>& v, Mat<T>& out,
                              std::unique_ptr<AttentionTape>* tape) const {
  detail::check_train_call("nystrom", shape_, head, q, k, v);
  // q, k are (n, d_k), v is (n, d_v); q_l, k_l are (m, d_k); f_t (m, n), a_t (m, m), b_t (n, m):
  // the three kernels stored transposed (one column per softmax row); z, az, inner, outer (m, m).
  const Eigen::Index m = m_;
  const T scale = T(1) / std::sqrt(static_cast<T>(q.cols()));
  std::unique_ptr<NystromTape<T>> local;
  auto* t = &detail::reuse_tape(tape, local);
  // pass 1: landmarks by segment means.
  t->q_l = segment_means(q, m);
  t->k_l = segment_means(k, m);
  // pass 2: the three kernels, each a softmax along its rows (columns of the transposes, core's column
  // softmax, the maximum subtracted).
  t->f_t.resize(m, q.rows());
  t->f_t.noalias() = t->k_l * q.transpose();
  t->f_t *= scale;
  softmax_cols_inplace(t->f_t);
  t->a_t.resize(m, m);
  t->a_t.noalias() = t->k_l * t->q_l.transpose();
  t->a_t *= scale;
  softmax_cols_inplace(t->a_t);
  t->b_t.resize(k.rows(), m);
  t->b_t.noalias() = k * t->q_l.transpose();
  t->b_t *= scale;
  softmax_cols_inplace(t->b_t);
  // pass 3: Z_0 = alpha A^T with alpha = 1 / (||A||_1 ||A||_inf) (PinvInit::per_matrix, the library's
  // per_matrix_pinv_scale, which also says where the two norms are attained, for the backward):
  // A Z_0 = alpha A A^T then has its eigenvalues in (0, 1], where the iteration converges.
  const Mat<T> a = t->a_t.transpose();
  const PinvScale alpha = per_matrix_pinv_scale(a);
  t->alpha = static_cast<T>(alpha.alpha);
  t->argmax_col = alpha.argmax_col;
  t->argmax_row = alpha.argmax_row;
  t->z.resize(static_cast<std::size_t>(iterations_) + 1);
  t->steps.resize(static_cast<std::size_t>(iterations_));
  t->z[0] = t->alpha * t->a_t;
  // pass 4: Z_{s+1} = 1/4 Z_s (13 I - AZ_s (15 I - AZ_s (7 I - AZ_s))), the library's step, keeping AZ_s
  // and both brackets for the backward.
  for (int s = 0; s < iterations_; ++s) {
    const auto u = static_cast<std::size_t>(s);
    t->z[u + 1] = t->z[u];
    iterative_pinv_step(a, t->z[u + 1], &t->steps[u]);
  }
  // pass 5: right to left, F (Z (B V)): (m, d_v), (m, d_v), (n, d_v); no n x n matrix.
  t->bv.resize(m, v.cols());
  t->bv.noalias() = t->b_t.transpose() * v;
  t->zbv.resize(m, v.cols());
  t->zbv.noalias() = t->z.back() * t->bv;
  out.resize(q.rows(), v.cols());
  out.noalias() = t->f_t.transpose() * t->zbv;
  if (tape != nullptr) {
    t->q = q;
    t->k = k;
    t->v = v;
  }
}

template <typename T>
void NystromTrain<T>::backward(Eigen::Index head, const AttentionTape& tape, const Mat<T>& d_out, Mat<T>& d_q,
                               Mat<T>& d_k, Mat<T>& d_v, std::vector<Mat<T>>* /*param_grads: none*/) const {
  const auto& t = detail::tape_as<NystromTape<T>>("nystrom", tape);
  detail::check_train_call("nystrom", shape_, head, t.q, t.k, t.v);
  detail::check_train_d_out("nystrom", shape_, d_out);
  const Eigen::Index m = m_;
  const T scale = T(1) / std::sqrt(static_cast<T>(t.q.cols()));
  // pass 1: out = F zbv: d zbv = F^T dO (m, d_v), dF^T = zbv dO^T (m, n).
  Mat<T> dzbv(m, t.v.cols());
  dzbv.noalias() = t.f_t * d_out;
  Mat<T> dft(m, t.q.rows());
  dft.noalias() = t.zbv * d_out.transpose();
  // pass 2: zbv = Z bv: dZ = d zbv bv^T, d bv = Z^T d zbv; bv = B V: dB^T = V d bv^T (n, m), dV = B^T d bv.
  Mat<T> dz(m, m);
  dz.noalias() = dzbv * t.bv.transpose();
  Mat<T> dbv(m, t.v.cols());
  dbv.noalias() = t.z.back().transpose() * dzbv;
  Mat<T> dbt(t.k.rows(), m);
  dbt.noalias() = t.v * dbv.transpose();
  d_v.resize(t.v.rows(), t.v.cols());
  d_v.noalias() = t.b_t * dbv;
  // pass 3: back through the iterations, last first. With Y = A Z_s, I1 = 7 I - Y,
  // inner = 15 I - Y I1, outer = 13 I - Y inner, Z_{s+1} = 1/4 Z_s outer:
  //   dZ_s = 1/4 G outer^T, d outer = 1/4 Z_s^T G, dY = -d outer inner^T, d inner = -Y^T d outer,
  //   dY -= d inner I1^T, d I1 = -Y^T d inner, dY -= d I1, dA += dY Z_s^T, dZ_s += A^T dY.
  const Mat<T> a = t.a_t.transpose();
  const Mat<T> eye = Mat<T>::Identity(m, m);
  Mat<T> da = Mat<T>::Zero(m, m);
  Mat<T> dz_prev(m, m), douter(m, m), dy(m, m), dinner(m, m), di1(m, m), i1(m, m);
  for (int s = iterations_ - 1; s >= 0; --s) {
    const auto u = static_cast<std::size_t>(s);
    const PinvStepTerms<T>& step = t.steps[u];
    const Mat<T>& y = step.az;
    dz_prev.noalias() = T(0.25) * dz * step.outer.transpose();
    douter.noalias() = T(0.25) * t.z[u].transpose() * dz;
    dy.noalias() = -douter * step.inner.transpose();
    dinner.noalias() = -y.transpose() * douter;
    i1 = T(7) * eye - y;
    dy.noalias() -= dinner * i1.transpose();
    di1.noalias() = -y.transpose() * dinner;
    dy -= di1;
    da.noalias() += dy * t.z[u].transpose();
    dz_prev.noalias() += a.transpose() * dy;
    dz.swap(dz_prev);
  }
  // pass 4: Z_0 = alpha A^T: dA += alpha dZ_0^T, d alpha = <dZ_0, A^T>. alpha = 1 / (||A||_1 ||A||_inf):
  // d||A||_1 = -alpha / ||A||_1 d alpha, into column argmax_col of A as sign(A) (its subgradient at
  // the first maximiser); likewise ||A||_inf into row argmax_row. A > 0 entrywise (a softmax), so
  // sign(A) = 1 except where exp() underflowed to 0.
  da.noalias() += t.alpha * dz.transpose();
  if (t.alpha > T(0)) {
    const T dalpha = dz.cwiseProduct(t.a_t).sum();
    const T norm_one = t.a_t.row(t.argmax_col).cwiseAbs().sum();
    const T norm_inf = t.a_t.col(t.argmax_row).cwiseAbs().sum();
    const T d_one = -t.alpha / norm_one * dalpha, d_inf = -t.alpha / norm_inf * dalpha;
    da.col(t.argmax_col) += d_one * a.col(t.argmax_col).cwiseSign();
    da.row(t.argmax_row) += d_inf * a.row(t.argmax_row).cwiseSign();
  }
  // pass 5: through the three softmaxes (columns of the transposes): dS^T for A, F, B.
  Mat<T> dat = da.transpose();
  softmax_cols_backward_inplace(t.a_t, dat);
  softmax_cols_backward_inplace(t.f_t, dft);
  softmax_cols_backward_inplace(t.b_t, dbt);
  // pass 6: S_A^T = c K~ Q~^T, S_F^T = c K~ Q^T, S_B^T = c K Q~^T (c = 1 / sqrt(d_k)).
  Mat<T> dq_l(m, t.q.cols()), dk_l(m, t.k.cols());
  dq_l.noalias() = dat.transpose() * t.k_l;
  dq_l.noalias() += dbt.transpose() * t.k;
  dk_l.noalias() = dat * t.q_l;
  dk_l.noalias() += dft * t.q;
  d_q.resize(t.q.rows(), t.q.cols());
  d_q.noalias() = dft.transpose() * t.k_l;
  d_k.resize(t.k.rows(), t.k.cols());
  d_k.noalias() = dbt * t.q_l;
  // pass 7: the landmarks are segment means of Q and K.
  add_segment_means_backward(dq_l, d_q);
  add_segment_means_backward(dk_l, d_k);
  d_q *= scale;
  d_k *= scale;
}

template class NystromTrain<float>;
template class NystromTrain<double>;

}  // namespace attnlab
