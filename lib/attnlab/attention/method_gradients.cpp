// The gradients of the registry's methods from their hand-written backward passes (method_gradients.hpp).
#include "attnlab/attention/method_gradients.hpp"

#include <memory>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "attnlab/attention/exact_train.hpp"
#include "attnlab/attention/fused_attention.hpp"
#include "attnlab/attention/linear_train.hpp"
#include "attnlab/attention/linformer_train.hpp"
#include "attnlab/attention/nystrom_train.hpp"
#include "attnlab/attention/random_features_train.hpp"
#include "attnlab/core/head_stack_map.hpp"

namespace attnlab {

namespace {

std::string text(Eigen::Index x) { return std::to_string(x); }

template <typename T>
std::string stack_text(const HeadStack<T>& s) {
  return "(" + text(s.batch()) + ", " + text(s.heads()) + ", " + text(s.n()) + ", " + text(s.d()) + ")";
}

// The method's trainable form for one head's shapes (heads = 1: every head of the stack is head 0, as every head of
// run_attention shares one draw), its parameters and buffers set to the registry's draws.
template <typename T>
std::unique_ptr<TrainableAttention<T>> trainable_for(const AttentionMethod& method, const MethodParams& p, const MethodDraws& draws,
                                                     Eigen::Index n, Eigen::Index d, Eigen::Index d_v) {
  const detail::TrainShape shape{n, d, d_v, 1};
  const std::string& name = method.name;
  if (name == "exact") return std::make_unique<ExactTrain<T>>(shape);
  if (name == "linear-elu") return std::make_unique<EluLinearTrain<T>>(shape);
  if (name == "linear-shen") return std::make_unique<ShenLinearTrain<T>>(shape);
  if (name == "nystrom") return std::make_unique<NystromTrain<T>>(shape, p.nystrom.landmarks, p.nystrom.iterations);
  if (name == "linformer") {
    if (!draws.projections) throw std::invalid_argument("linformer needs its projections E and F (MethodDraws::projections)");
    auto t = std::make_unique<LinformerTrain<T>>(shape, draws.projections->k(), 0);
    *t->parameters()[0] = draws.projections->e.template cast<T>();
    *t->parameters()[1] = draws.projections->f.template cast<T>();
    return t;
  }
  if (name == "random-fourier" || name == "favor") {
    if (!draws.features) throw std::invalid_argument(name + " needs its features omega (MethodDraws::features)");
    const Eigen::Index D = draws.features->features();
    std::unique_ptr<TrainableAttention<T>> t;
    if (name == "favor") t = std::make_unique<FavorTrain<T>>(shape, D, 0);
    else t = std::make_unique<RandomFourierTrain<T>>(shape, D, 0, p.temperature);
    *t->buffers()[0] = draws.features->w.template cast<T>();
    return t;
  }
  throw std::logic_error("method_gradients: no trainable form of " + name);
}

// One head: the trainable forward with its tape, then the backward (Linformer's parameter gradients discarded).
template <typename T>
void head_gradients(const TrainableAttention<T>& t, std::vector<Mat<T>> param_grads, const Mat<T>& q, const Mat<T>& k,
                    const Mat<T>& v, const Mat<T>& d_out, Mat<T>& out, Mat<T>& dq, Mat<T>& dk, Mat<T>& dv) {
  std::unique_ptr<AttentionTape> tape;
  t.forward(0, q, k, v, out, &tape);
  t.backward(0, *tape, d_out, dq, dk, dv, &param_grads);
}

}  // namespace

std::string method_gradient_problem(const AttentionMethod& method, Impl impl, const MethodParams& params, Eigen::Index n_q,
                                    Eigen::Index n_k) {
  const std::string& name = method.name;
  if (impl == Impl::fast) {
    if (name == "exact" || name == "streaming") return {};
    return "--impl fast: " + name + " has no fast backward pass; use --impl reference";
  }
  if (name == "streaming")
    return "streaming's reference kernel has no backward pass: --impl fast differentiates its fused kernel "
           "(FlashAttention-2's backward)";
  if (name == "nystrom") {
    const NystromOptions& o = params.nystrom;
    if (o.pinv != PinvMethod::iterative || o.init != PinvInit::per_matrix)
      return "nystrom's backward pass takes --pinv iterative --pinv-init " + to_string(PinvInit::per_matrix) +
             " only (Nystromformer's iteration, differentiated through every step)";
    if (o.iterations < 1) return "nystrom's backward pass takes --pinv-iterations 1 to 1000, not 0";
  }
  if (n_q != n_k)
    return name + "'s backward pass needs as many keys as queries: n = " + text(n_k) + " keys but n = " + text(n_q) +
           " queries" + (name == "exact" ? " (--impl fast differentiates any)" : "");
  return {};
}

template <typename T>
MethodGradients<T> method_gradients(const AttentionMethod& method, Impl impl, const HeadStack<T>& q, const HeadStack<T>& k,
                                    const HeadStack<T>& v, const HeadStack<T>& d_out, const MethodParams& params,
                                    const MethodDraws& draws) {
  detail::check_same_heads(q, k, v);
  if (k.d() != q.d() || v.n() != k.n())
    throw std::invalid_argument("method_gradients: Q " + stack_text(q) + ", K " + stack_text(k) + " and V " + stack_text(v) +
                                " do not fit (K's d must be Q's, V's n K's)");
  if (d_out.batch() != q.batch() || d_out.heads() != q.heads() || d_out.n() != q.n() || d_out.d() != v.d())
    throw std::invalid_argument("method_gradients: d_out is " + stack_text(d_out) + " but the output is (" + text(q.batch()) +
                                ", " + text(q.heads()) + ", " + text(q.n()) + ", " + text(v.d()) + ")");
  if (const std::string why = method_gradient_problem(method, impl, params, q.n(), k.n()); !why.empty())
    throw std::invalid_argument(why);
  const Eigen::Index count = q.count();
  MethodGradients<T> g{HeadStack<T>::uninitialized(q.batch(), q.heads(), q.n(), v.d()), {}, {}, {}};
  if (impl == Impl::fast) {
    // The fused forward keeping each query's log-normaliser (bit for bit fused_attention's output; each head's query
    // blocks in parallel), then its FlashAttention-2 backward over every head.
    const Eigen::Index key_block = method.name == "streaming" ? params.key_block : 0;
    std::vector<Vec<T>> lse(static_cast<std::size_t>(count));
    for (Eigen::Index h = 0; h < count; ++h) g.out[h] = fused_attention(q[h], k[h], v[h], key_block, lse[static_cast<std::size_t>(h)]);
    StackGradients<T> s = fused_attention_backward(q, k, v, g.out, lse, d_out);
    g.dq = std::move(s.dq), g.dk = std::move(s.dk), g.dv = std::move(s.dv);
    return g;
  }
  const auto t = trainable_for<T>(method, params, draws, q.n(), q.d(), v.d());
  std::vector<Mat<T>> param_grads;
  for (const Mat<T>* p : t->parameters()) param_grads.push_back(Mat<T>::Zero(p->rows(), p->cols()));
  g.dq = HeadStack<T>::uninitialized(q.batch(), q.heads(), q.n(), q.d());
  g.dk = HeadStack<T>::uninitialized(k.batch(), k.heads(), k.n(), k.d());
  g.dv = HeadStack<T>::uninitialized(v.batch(), v.heads(), v.n(), v.d());
  // Exceptions must not escape an OpenMP region: head 0 first (every head has its shapes), then the rest in
  // parallel, each writing its own slots, so the result does not depend on the thread count.
  head_gradients(*t, param_grads, q[0], k[0], v[0], d_out[0], g.out[0], g.dq[0], g.dk[0], g.dv[0]);
#pragma omp parallel for schedule(dynamic)
  for (Eigen::Index h = 1; h < count; ++h) head_gradients(*t, param_grads, q[h], k[h], v[h], d_out[h], g.out[h], g.dq[h], g.dk[h], g.dv[h]);
  return g;
}

template MethodGradients<float> method_gradients(const AttentionMethod&, Impl, const HeadStack<float>&, const HeadStack<float>&,
                                                 const HeadStack<float>&, const HeadStack<float>&, const MethodParams&,
                                                 const MethodDraws&);
template MethodGradients<double> method_gradients(const AttentionMethod&, Impl, const HeadStack<double>&, const HeadStack<double>&,
                                                  const HeadStack<double>&, const HeadStack<double>&, const MethodParams&,
                                                  const MethodDraws&);

}  // namespace attnlab
