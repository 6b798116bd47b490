// A multi-head attention layer, Concat(head_1, ..., head_h) W_O, with the attention method as a parameter.
#include "attnlab/attention/multihead_layer.hpp"

#include <cmath>
#include <stdexcept>
#include <string>

namespace attnlab {

namespace {

std::string str(Eigen::Index v) { return std::to_string(v); }

template <typename T>
void check_weights(const MultiheadWeights<T>& w, Eigen::Index d_model) {
  if (w.heads < 1) throw std::invalid_argument("multihead_layer: heads (= " + str(w.heads) + ") must be at least 1");
  const Eigen::Index width = w.wq.cols();
  if (width < 1 || width % w.heads != 0)
    throw std::invalid_argument("multihead_layer: heads (= " + str(w.heads) + ") must divide the projection width (= " +
                                str(width) + ")");
  for (const Mat<T>* m : {&w.wq, &w.wk, &w.wv})
    if (m->rows() != d_model || m->cols() != width)
      throw std::invalid_argument("multihead_layer: W_Q, W_K, W_V must be " + str(d_model) + " x " + str(width) +
                                  ", one is " + str(m->rows()) + " x " + str(m->cols()));
  if (w.wo.rows() != width)
    throw std::invalid_argument("multihead_layer: W_O has " + str(w.wo.rows()) + " rows, the heads give " + str(width));
  if (w.bo.size() != 0 && w.bo.size() != w.wo.cols())
    throw std::invalid_argument("multihead_layer: b_O has length " + str(w.bo.size()) + ", W_O has " +
                                str(w.wo.cols()) + " columns");
}

// Head h of sequence x into columns [h d_h, (h + 1) d_h) of `concat`.
template <typename T>
void run_head(const Mat<T>& x, const MultiheadWeights<T>& w, const HeadAttention<T>& attend, Eigen::Index h,
              Mat<T>& concat) {
  const Eigen::Index dh = w.head_dim();
  // Pass 1: this head's slice of the projections (n x d_h each).
  const Mat<T> q = x * w.wq.middleCols(h * dh, dh);
  const Mat<T> k = x * w.wk.middleCols(h * dh, dh);
  const Mat<T> v = x * w.wv.middleCols(h * dh, dh);
  // Pass 2: the head's attention; heads write disjoint column blocks, so threads never share data.
  const Mat<T> o = attend(q, k, v);
  if (o.rows() != x.rows() || o.cols() != dh)
    throw std::invalid_argument("multihead_layer: a head returned " + str(o.rows()) + " x " + str(o.cols()) +
                                ", expected " + str(x.rows()) + " x " + str(dh));
  concat.middleCols(h * dh, dh) = o;
}

template <typename T>
Mat<T> output_projection(const Mat<T>& concat, const MultiheadWeights<T>& w) {
  // Pass 3: Concat(head_1, ..., head_h) W_O (+ b_O).
  Mat<T> out = concat * w.wo;
  if (w.bo.size() != 0) out.rowwise() += w.bo.transpose();
  return out;
}

}  // namespace

MultiheadWeights<double> gaussian_multihead_weights(Eigen::Index d_model, Eigen::Index heads, Rng& rng) {
  if (d_model < 1 || heads < 1 || d_model % heads != 0)
    throw std::invalid_argument("gaussian_multihead_weights: heads (= " + str(heads) + ") must divide d_model (= " +
                                str(d_model) + ")");
  const double s = 1.0 / std::sqrt(static_cast<double>(d_model));
  MultiheadWeights<double> w;
  w.wq = gaussian_matrix(d_model, d_model, rng, s);
  w.wk = gaussian_matrix(d_model, d_model, rng, s);
  w.wv = gaussian_matrix(d_model, d_model, rng, s);
  w.wo = gaussian_matrix(d_model, d_model, rng, s);
  w.heads = heads;
  return w;
}

template <typename T>
HeadAttention<T> exact_head_attention() {
  return [](const Mat<T>& q, const Mat<T>& k, const Mat<T>& v) { return linformer_reference_attention(q, k, v); };
}

template <typename T>
HeadAttention<T> linformer_head_attention(LinformerProjections<T> proj) {
  return [proj = std::move(proj)](const Mat<T>& q, const Mat<T>& k, const Mat<T>& v) {
    return linformer_attention(q, k, v, proj);
  };
}

template <typename T>
Mat<T> multihead_layer(const Mat<T>& x, const MultiheadWeights<T>& w, const HeadAttention<T>& attend) {
  // Shapes: x n x d_model; per head q, k, v n x d_h; concat n x (heads d_h); out n x d_out.
  if (x.rows() < 1) throw std::invalid_argument("multihead_layer: n (= " + str(x.rows()) + ") must be at least 1");
  check_weights(w, x.cols());
  Mat<T> concat(x.rows(), w.wq.cols());
  for (Eigen::Index h = 0; h < w.heads; ++h) run_head(x, w, attend, h, concat);
  return output_projection(concat, w);
}

template <typename T>
HeadStack<T> multihead_layer(const HeadStack<T>& x, const MultiheadWeights<T>& w, const HeadAttention<T>& attend) {
  if (x.heads() != 1)
    throw std::invalid_argument("multihead_layer: the input stack has " + str(x.heads()) +
                                " heads; pass sequences as (batch, 1, n, d_model)");
  if (x.n() < 1) throw std::invalid_argument("multihead_layer: n (= " + str(x.n()) + ") must be at least 1");
  check_weights(w, x.d());
  const Eigen::Index batch = x.batch(), heads = w.heads;
  std::vector<Mat<T>> concat(static_cast<std::size_t>(batch), Mat<T>(x.n(), w.wq.cols()));
  // One head of one sequence per iteration; a head's shape error is rethrown after the loop,
  // since an exception must not leave an OpenMP region.
  std::vector<std::string> errors(static_cast<std::size_t>(batch * heads));
#pragma omp parallel for schedule(dynamic)
  for (Eigen::Index i = 0; i < batch * heads; ++i) {
    try {
      run_head(x[i / heads], w, attend, i % heads, concat[static_cast<std::size_t>(i / heads)]);
    } catch (const std::exception& e) {
      errors[static_cast<std::size_t>(i)] = e.what();
    }
  }
  for (const auto& e : errors)
    if (!e.empty()) throw std::invalid_argument(e);
  HeadStack<T> out(batch, 1, x.n(), w.wo.cols());
#pragma omp parallel for schedule(dynamic)
  for (Eigen::Index b = 0; b < batch; ++b) out[b] = output_projection(concat[static_cast<std::size_t>(b)], w);
  return out;
}

#define ATTNLAB_MULTIHEAD_INSTANTIATE(T)                                                                  \
  template HeadAttention<T> exact_head_attention<T>();                                                    \
  template HeadAttention<T> linformer_head_attention<T>(LinformerProjections<T>);                         \
  template Mat<T> multihead_layer<T>(const Mat<T>&, const MultiheadWeights<T>&, const HeadAttention<T>&); \
  template HeadStack<T> multihead_layer<T>(const HeadStack<T>&, const MultiheadWeights<T>&, const HeadAttention<T>&);
ATTNLAB_MULTIHEAD_INSTANTIATE(float)
ATTNLAB_MULTIHEAD_INSTANTIATE(double)
#undef ATTNLAB_MULTIHEAD_INSTANTIATE

}  // namespace attnlab
