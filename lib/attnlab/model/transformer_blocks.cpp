// The block stack: shapes, methods, forward and backward (transformer_blocks.hpp).
#include "attnlab/model/transformer_blocks.hpp"

#include <stdexcept>

#include "attnlab/core/rng.hpp"

namespace attnlab {

template <typename T>
std::vector<BlockParams<T>> shaped_blocks(const BlockShape& c) {
  const Eigen::Index D = c.D, K = c.heads * c.key_width;
  std::vector<BlockParams<T>> blocks(static_cast<std::size_t>(c.layers));
  for (auto& b : blocks) {
    b.ln1_gamma = b.ln1_beta = b.ln2_gamma = b.ln2_beta = Vec<T>::Zero(D);
    b.attn.Wq = b.attn.Wk = Mat<T>::Zero(D, K);
    b.attn.Wv = b.attn.Wo = Mat<T>::Zero(D, D);
    b.attn.bq = b.attn.bk = Vec<T>::Zero(K);
    b.attn.bv = b.attn.bo = Vec<T>::Zero(D);
    b.mlp.W1 = Mat<T>::Zero(D, c.mlp);
    b.mlp.b1 = Vec<T>::Zero(c.mlp);
    b.mlp.W2 = Mat<T>::Zero(c.mlp, D);
    b.mlp.b2 = Vec<T>::Zero(D);
  }
  return blocks;
}

template <typename T>
BlockAttention<T> make_block_attention(const TrainableAttentionConfig& attention,
                                                                         const BlockShape& shape, Eigen::Index n,
                                                                         std::uint64_t seed, const AttentionFactory<T>& factory,
                                                                         const std::string& who) {
  BlockAttention<T> out;
  for (Eigen::Index l = 0; l < shape.layers; ++l) {
    TrainableAttentionConfig a = attention;
    a.n = n;
    a.d_k = shape.key_width;
    a.d_v = shape.D / shape.heads;
    a.heads = shape.heads;
    a.seed = derive_seed(seed, 1000 + static_cast<std::uint64_t>(l));
    out.push_back(factory(a));
    if (!out.back()) throw std::invalid_argument(who + ": no attention method for '" + a.method + "'");
  }
  return out;
}

template <typename T>
void blocks_forward(const std::vector<BlockParams<T>>& blocks,
                    const BlockAttention<T>& attention, Eigen::Index n,
                    Eigen::Index heads, std::vector<Mat<T>>& x, std::vector<BlockTape<T>>& tapes, bool train) {
  const std::size_t L = blocks.size();
  x.resize(L + 1);
  tapes.resize(L);
  for (std::size_t l = 0; l < L; ++l) {
    auto& a = tapes[l];
    const auto& b = blocks[l];
    // h = x + MHA(LN1(x))
    layernorm_forward(x[l], b.ln1_gamma, b.ln1_beta, a.ln1_out, a.ln1);
    mha_forward(a.ln1_out, b.attn, *attention[l], n, heads, a.attn_out, a.mha, train);
    a.h = x[l] + a.attn_out;
    // x' = h + MLP(LN2(h))
    layernorm_forward(a.h, b.ln2_gamma, b.ln2_beta, a.ln2_out, a.ln2);
    mlp_forward(a.ln2_out, b.mlp, a.mlp_out, a.mlp);
    x[l + 1] = a.h + a.mlp_out;
  }
}

template <typename T>
void blocks_backward(const std::vector<BlockParams<T>>& blocks,
                     const BlockAttention<T>& attention, Eigen::Index n,
                     Eigen::Index heads, std::vector<BlockTape<T>>& tapes, Mat<T>& dx, Mat<T>& dh, Mat<T>& dz, Mat<T>& dtmp,
                     std::vector<BlockParams<T>>& grads, std::vector<std::vector<Mat<T>>>& method_grads) {
  for (std::size_t l = blocks.size(); l-- > 0;) {
    auto& a = tapes[l];
    const auto& b = blocks[l];
    auto& gb = grads[l];
    // x' = h + MLP(LN2(h)): dh = dx + LN2^T MLP^T dx.
    mlp_backward(a.ln2_out, b.mlp, a.mlp, dx, dz, gb.mlp);
    layernorm_backward(dz, a.ln2, b.ln2_gamma, dtmp, gb.ln2_gamma, gb.ln2_beta);
    dh = dx + dtmp;
    // h = x + MHA(LN1(x)): dx = dh + LN1^T MHA^T dh.
    mha_backward(a.ln1_out, b.attn, *attention[l], n, heads, a.mha, dh, dz, gb.attn,
                 method_grads[l].empty() ? nullptr : &method_grads[l]);
    layernorm_backward(dz, a.ln1, b.ln1_gamma, dtmp, gb.ln1_gamma, gb.ln1_beta);
    dx = dh + dtmp;
  }
}

template <typename T>
void append_method_parameters(const BlockAttention<T>& attention, std::size_t l, const std::string& pre,
                              std::vector<TensorRef<T>>& out) {
  const auto names = attention[l]->parameter_names();
  const auto mats = attention[l]->parameters();
  for (std::size_t i = 0; i < mats.size(); ++i) out.push_back(tensor_ref(pre + names[i], *mats[i]));
}

template <typename T>
void append_method_gradients(const BlockAttention<T>& attention, std::vector<std::vector<Mat<T>>>& method_grads,
                             std::size_t l, const std::string& pre, std::vector<TensorRef<T>>& out) {
  const auto names = attention[l]->parameter_names();
  for (std::size_t i = 0; i < method_grads[l].size(); ++i) out.push_back(tensor_ref(pre + names[i], method_grads[l][i]));
}

template <typename T>
std::vector<TensorRef<T>> method_buffer_tensors(const BlockAttention<T>& attention) {
  std::vector<TensorRef<T>> out;
  for (std::size_t l = 0; l < attention.size(); ++l) {
    const auto names = attention[l]->buffer_names();
    const auto mats = attention[l]->buffers();
    for (std::size_t i = 0; i < mats.size(); ++i)
      out.push_back(tensor_ref("block" + std::to_string(l) + ".attn.method." + names[i], *mats[i]));
  }
  return out;
}

template <typename T>
std::vector<std::vector<Mat<T>>> zero_method_grads(const BlockAttention<T>& attention) {
  std::vector<std::vector<Mat<T>>> grads;
  for (const auto& a : attention) {
    std::vector<Mat<T>> m;
    for (Mat<T>* p : a->parameters()) m.push_back(Mat<T>::Zero(p->rows(), p->cols()));
    grads.push_back(std::move(m));
  }
  return grads;
}

template <typename T>
void initialise_tensors(const std::vector<TensorRef<T>>& tensors, Rng& rng, double std) {
  for (const auto& t : tensors) {
    Eigen::Map<Mat<T>> m(t.data, t.rows, t.cols);
    if (t.is_vector)
      m.setConstant(t.name.ends_with(".gamma") ? T(1) : T(0));
    else
      m = gaussian_matrix<T>(t.rows, t.cols, rng, std);
  }
}

#define ATTNLAB_BLOCKS(T)                                                                                              \
  template std::vector<BlockParams<T>> shaped_blocks<T>(const BlockShape&);                                            \
  template BlockAttention<T> make_block_attention<T>(                                \
      const TrainableAttentionConfig&, const BlockShape&, Eigen::Index, std::uint64_t, const AttentionFactory<T>&,     \
      const std::string&);                                                                                             \
  template void blocks_forward<T>(const std::vector<BlockParams<T>>&, const BlockAttention<T>&, \
                                  Eigen::Index, Eigen::Index, std::vector<Mat<T>>&, std::vector<BlockTape<T>>&, bool);  \
  template void blocks_backward<T>(const std::vector<BlockParams<T>>&,                                                 \
                                   const BlockAttention<T>&, Eigen::Index, Eigen::Index, \
                                   std::vector<BlockTape<T>>&, Mat<T>&, Mat<T>&, Mat<T>&, Mat<T>&,                     \
                                   std::vector<BlockParams<T>>&, std::vector<std::vector<Mat<T>>>&);      \
  template void append_method_parameters<T>(const BlockAttention<T>&, std::size_t, const std::string&,               \
                                            std::vector<TensorRef<T>>&);                                             \
  template void append_method_gradients<T>(const BlockAttention<T>&, std::vector<std::vector<Mat<T>>>&, std::size_t, \
                                           const std::string&, std::vector<TensorRef<T>>&);                          \
  template std::vector<TensorRef<T>> method_buffer_tensors<T>(const BlockAttention<T>&);                             \
  template std::vector<std::vector<Mat<T>>> zero_method_grads<T>(const BlockAttention<T>&);                          \
  template void initialise_tensors<T>(const std::vector<TensorRef<T>>&, Rng&, double);
ATTNLAB_BLOCKS(float)
ATTNLAB_BLOCKS(double)
#undef ATTNLAB_BLOCKS

}  // namespace attnlab
