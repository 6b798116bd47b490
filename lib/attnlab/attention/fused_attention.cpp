// Fast exact softmax attention, fused per block of queries (and, streaming, per block of keys).
#include "attnlab/attention/fused_attention.hpp"

#include <atomic>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "attnlab/core/attention_check.hpp"
#include "attnlab/core/head_stack_map.hpp"
#include "attnlab/core/row_blocks.hpp"
#include "attnlab/core/softmax.hpp"
#include "attnlab/linalg/broadcast_gemm.hpp"

namespace attnlab {

namespace {

// Per-thread buffers, reused from block to block.
template <typename T>
struct Workspace {
  Mat<T> q_qd;    // (b_q, d): the block's queries, scaled
  Mat<T> s_qk;    // (b_q, b_k): scores, then their exponentials, one row per query
  Mat<T> acc_qv;  // (b_q, d_v): unnormalised output
  Vec<T> m_q, l_q, correction;  // (b_q): running maximum, normaliser, rescaling of the old sum
};

// Rows [i0, i0 + b_q) of softmax(Q K^T / sqrt(d)) V into `out`. Keys are taken `key_block` at a
// time (all at once for 0); with one block the correction below is exp(-inf) = 0 applied to a
// zero accumulator, and the kernel is the plain two-pass softmax. Queries run down the rows of
// every buffer, so a column of the block's scores is contiguous: both products are broadcast_gemm's
// (A's columns loaded, B's entries broadcast: K^T and V are read in place, never packed), and the
// softmax is vector arithmetic over queries.
// Q, K, V and Out are column-major matrices (a HeadStack's heads) or row-major maps (C-order arrays): either way
// the block's queries are copied into the workspace and K^T and V are read through their strides, so the products,
// and the output, are bit for bit the same.
template <typename T, typename Q, typename K, typename V, typename Out>
void attend_query_block(const Q& q, const K& k, const V& v, Eigen::Index i0, Eigen::Index b_q, Eigen::Index key_block,
                        Workspace<T>& w, Out& out, Vec<T>* lse) {
  const Eigen::Index n_k = k.rows();
  const Eigen::Index b_k = key_block > 0 ? std::min(key_block, n_k) : n_k;
  const T scale = T(1) / std::sqrt(static_cast<T>(q.cols()));
  // The scale goes on the b_q x d queries rather than the b_q x b_k scores: d / b_k as many products.
  w.q_qd.noalias() = q.middleRows(i0, b_q) * scale;
  w.m_q.setConstant(b_q, -std::numeric_limits<T>::infinity());
  w.l_q.setZero(b_q);
  w.correction.resize(b_q);
  w.acc_qv.resize(b_q, v.cols());
  for (Eigen::Index j0 = 0; j0 < n_k; j0 += b_k) {
    const Eigen::Index b = std::min(b_k, n_k - j0);
    // pass 1: scores of this key block, S = Q_b K_j^T (K_j^T read in place through its strides).
    w.s_qk.resize(b_q, b);
    broadcast_gemm(w.s_qk, w.q_qd, strided_view(k.middleRows(j0, b).transpose()), false);
    // pass 2: new running maximum, exponentials relative to it (never overflow), rescaled sums.
    online_softmax_block_rows(w.s_qk, w.m_q, w.l_q, w.correction);
    // pass 3: what was accumulated relative to the old maxima, rescaled, plus this block's S V_j.
    if (j0 > 0) w.acc_qv = w.correction.asDiagonal() * w.acc_qv;
    broadcast_gemm(w.acc_qv, w.s_qk, strided_view(v.middleRows(j0, b)), j0 > 0);
  }
  // pass 4: normalise; l_q >= 1 since the overall maximum's term is exactly exp(0).
  out.middleRows(i0, b_q).noalias() = w.l_q.cwiseInverse().asDiagonal() * w.acc_qv;
  // The backward's statistics: log of the normaliser relative to 0 (l_q >= 1, so the log is finite).
  if (lse != nullptr) lse->segment(i0, b_q) = (w.m_q.array() + w.l_q.array().log()).matrix();
}

// The heads of a HeadStack (or of one matrix): column-major matrices.
template <typename T>
struct MatrixHeads {
  const Mat<T>* q;
  const Mat<T>* k;
  const Mat<T>* v;
  Mat<T>* out;
  const Mat<T>& query(Eigen::Index h) const { return q[h]; }
  const Mat<T>& key(Eigen::Index h) const { return k[h]; }
  const Mat<T>& value(Eigen::Index h) const { return v[h]; }
  Mat<T>& output(Eigen::Index h) const { return out[h]; }
};

// Heads in C order (fused_attention_c_order): row-major maps of the caller's arrays.
template <typename T>
struct COrderHeads {
  using Rows = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  const std::vector<const T*>& q;
  const std::vector<const T*>& k;
  const std::vector<const T*>& v;
  const std::vector<T*>& out;
  Eigen::Index n_q, n_k, d, d_v;
  Eigen::Map<const Rows> query(Eigen::Index h) const { return {q[static_cast<std::size_t>(h)], n_q, d}; }
  Eigen::Map<const Rows> key(Eigen::Index h) const { return {k[static_cast<std::size_t>(h)], n_k, d}; }
  Eigen::Map<const Rows> value(Eigen::Index h) const { return {v[static_cast<std::size_t>(h)], n_k, d_v}; }
  Eigen::Map<Rows> output(Eigen::Index h) const { return {out[static_cast<std::size_t>(h)], n_q, d_v}; }
};

// The output of heads h < count, in parallel over (head, query block) pairs.
template <typename T, typename Heads>
void fused_heads(const Heads& heads, Eigen::Index count, Eigen::Index key_block, Vec<T>* lse = nullptr) {
  const detail::RowBlocks blocks{heads.query(0).rows(), kFusedQueryBlock};
  const Eigen::Index tasks = count * blocks.count();
#pragma omp parallel
  {
    Workspace<T> w;
#pragma omp for schedule(dynamic)
    for (Eigen::Index t = 0; t < tasks; ++t) {
      const Eigen::Index h = t / blocks.count(), i = t % blocks.count();
      decltype(auto) out = heads.output(h);  // a reference to a stack's matrix, or a map by value
      attend_query_block<T>(heads.query(h), heads.key(h), heads.value(h), blocks.begin(i), blocks.length(i), key_block, w, out,
                            lse != nullptr ? &lse[h] : nullptr);
    }
  }
}

template <typename T>
void fused_heads(const Mat<T>* q, const Mat<T>* k, const Mat<T>* v, Mat<T>* out, Eigen::Index count,
                 Eigen::Index key_block, Vec<T>* lse = nullptr) {
  fused_heads<T>(MatrixHeads<T>{q, k, v, out}, count, key_block, lse);
}

void check_key_block(Eigen::Index key_block) {
  if (key_block < 0)
    throw std::invalid_argument("fused_attention: key_block (= " + std::to_string(key_block) + ") must be >= 0");
}

// ---------------------------------------------------------------- backward

// One head's inputs to the backward, and its gradients.
template <typename T>
struct BackwardHead {
  const Mat<T>* q;
  const Mat<T>* k;
  const Mat<T>* v;
  const Mat<T>* d_out;
  const Vec<T>* lse;
  Vec<T> delta;  // D_i = sum_c dO_ic O_ic
  Mat<T>* dq;
  Mat<T>* dk;
  Mat<T>* dv;
};

// Per-thread buffers of the backward, reused from block pair to block pair.
template <typename T>
struct BackwardWorkspace {
  Mat<T> q_dq;   // (d, b_q): the query block, scaled and transposed
  Mat<T> do_dq;  // (d_v, b_q): the block's dO, transposed
  Mat<T> p_kq;   // (b_k, b_q): P^T of the block pair
  Mat<T> ds_kq;  // (b_k, b_q): dP^T, then in place dS^T
  Mat<T> dq_q;   // (b_q, d): dS_ij K_j, waiting for its turn to be added into dQ_i
};

// P^T and dS^T of the key rows [j0, j0 + b_k) against the query block held in w.q_dq, w.do_dq (columns
// [i0, i0 + b_q) of the transposed problem).
template <typename T>
void recompute_block(const BackwardHead<T>& h, Eigen::Index i0, Eigen::Index b_q, Eigen::Index j0, Eigen::Index b_k,
                     BackwardWorkspace<T>& w) {
  // S^T = K_j (Q_i^T / sqrt(d)); P^T = exp(S^T - lse_i), column c shifted by lse(i0 + c). lse_i is at least
  // the row's maximum score, so every exponent is <= 0 (up to rounding) and exp cannot overflow.
  w.p_kq.resize(b_k, b_q);
  broadcast_gemm(w.p_kq, h.k->middleRows(j0, b_k), strided_view(w.q_dq), false);
  // dP^T = V_j dO_i^T; dS^T = P^T o (dP^T - D_i), D_i down the columns.
  w.ds_kq.resize(b_k, b_q);
  broadcast_gemm(w.ds_kq, h.v->middleRows(j0, b_k), strided_view(w.do_dq), false);
  // Column by column, a scalar shift: Eigen vectorises exp() down a contiguous column, but not over a row vector
  // broadcast with rowwise(), which fell back to scalar expf for every entry (19% of the backward's time, perf).
  for (Eigen::Index c = 0; c < b_q; ++c) {
    auto p = w.p_kq.col(c).array();
    p = (p - (*h.lse)(i0 + c)).exp();
    auto ds = w.ds_kq.col(c).array();
    ds = p * (ds - h.delta(i0 + c));
  }
}

template <typename T>
void load_query_block(const BackwardHead<T>& h, Eigen::Index i0, Eigen::Index b_q, T scale, BackwardWorkspace<T>& w) {
  w.q_dq.noalias() = h.q->middleRows(i0, b_q).transpose() * scale;
  w.do_dq.noalias() = h.d_out->middleRows(i0, b_q).transpose();
}

// The order in which key blocks add into dQ: turn(h, i) = j while head h's query block i waits for key block j's
// dS_ij K_j. Adding in the order j = 0, 1, ... whichever thread runs which key block keeps dQ bit for bit the same
// for any thread count (floating-point addition does not commute with a change of order).
class DqTurns {
 public:
  DqTurns(Eigen::Index heads, Eigen::Index query_blocks)
      : query_blocks_(query_blocks), turn_(static_cast<std::size_t>(heads * query_blocks)) {}
  // Spins until key block j may add into (h, i). The key block it waits for was handed out earlier (tasks are
  // taken in increasing order, see backward_heads) and is running on another thread or done, and key block 0
  // never waits: no cycle, so no deadlock.
  void wait(Eigen::Index h, Eigen::Index i, Eigen::Index j) {
    const auto& t = at(h, i);
    for (int spins = 0; t.load(std::memory_order_acquire) != j; ++spins)
      if (spins > 64) std::this_thread::yield();
  }
  void pass(Eigen::Index h, Eigen::Index i, Eigen::Index j) { at(h, i).store(j + 1, std::memory_order_release); }

 private:
  std::atomic<Eigen::Index>& at(Eigen::Index h, Eigen::Index i) { return turn_[static_cast<std::size_t>(h * query_blocks_ + i)]; }
  Eigen::Index query_blocks_;
  std::vector<std::atomic<Eigen::Index>> turn_;  // value-initialised: every turn starts at key block 0
};

// The key rows [j0, j0 + b_k) (key block j of head `head`) against every query block i, in order: dV_j and dK_j,
// which this task owns, and dS_ij K_j added into dQ_i in key-block order (DqTurns).
template <typename T>
void backward_key_block(const BackwardHead<T>& h, Eigen::Index head, Eigen::Index j, Eigen::Index j0, Eigen::Index b_k,
                        Eigen::Index key_blocks, T scale, DqTurns& turns, BackwardWorkspace<T>& w) {
  const detail::RowBlocks queries{h.q->rows(), kBackwardQueryBlock};
  auto dv = h.dv->middleRows(j0, b_k);
  auto dk = h.dk->middleRows(j0, b_k);
  dv.setZero();
  dk.setZero();
  for (Eigen::Index i = 0; i < queries.count(); ++i) {
    const Eigen::Index i0 = queries.begin(i), b_q = queries.length(i);
    load_query_block(h, i0, b_q, scale, w);
    recompute_block(h, i0, b_q, j0, b_k, w);
    broadcast_gemm(dv, w.p_kq, strided_view(h.d_out->middleRows(i0, b_q)), true);
    broadcast_gemm(dk, w.ds_kq, strided_view(h.q->middleRows(i0, b_q)), true);
    // dS_ij K_j before taking the turn, so the wait holds up only the addition (dS_ij^T is the transposed left
    // factor: broadcast_gemm_tn transposes it once into its own buffer).
    w.dq_q.resize(b_q, h.k->cols());
    broadcast_gemm_tn(w.dq_q, w.ds_kq, strided_view(h.k->middleRows(j0, b_k)), false);
    turns.wait(head, i, j);
    auto dq = h.dq->middleRows(i0, b_q);
    dq += w.dq_q;
    if (j + 1 == key_blocks) dq *= scale;  // the last addition: dQ = dS K / sqrt(d)
    turns.pass(head, i, j);
  }
  dk *= scale;  // S = Q K^T / sqrt(d): dK = dS^T Q / sqrt(d)
}

// Every head's gradients, in parallel over (head, key block) tasks after pass 0 per head. The tasks are taken from
// one counter in increasing order (not `omp for`, whose dynamic schedule does not promise an order): a task only
// ever waits for one taken before it.
template <typename T>
void backward_heads(std::vector<BackwardHead<T>>& heads, const Mat<T>* out) {
  const auto count = static_cast<Eigen::Index>(heads.size());
  const detail::RowBlocks queries{heads[0].q->rows(), kBackwardQueryBlock}, keys{heads[0].k->rows(), kBackwardKeyBlock};
  const T scale = T(1) / std::sqrt(static_cast<T>(heads[0].q->cols()));
  DqTurns turns(count, queries.count());
  std::atomic<Eigen::Index> next{0};
#pragma omp parallel
  {
    BackwardWorkspace<T> w;
#pragma omp for schedule(static)
    for (Eigen::Index h = 0; h < count; ++h) {
      heads[h].delta = heads[h].d_out->cwiseProduct(out[h]).rowwise().sum();
      heads[h].dq->setZero();
    }
    // (the implicit barrier of omp for: every D is ready and every dQ zero before the key blocks start)
    for (Eigen::Index t = next.fetch_add(1); t < count * keys.count(); t = next.fetch_add(1)) {
      const Eigen::Index h = t / keys.count(), j = t % keys.count();
      backward_key_block(heads[h], h, j, keys.begin(j), keys.length(j), keys.count(), scale, turns, w);
    }
  }
}

template <typename T>
void check_backward_shapes(const Mat<T>& q, const Mat<T>& k, const Mat<T>& v, const Mat<T>& out, const Vec<T>& lse,
                           const Mat<T>& d_out) {
  detail::check_attention_shapes("fused_attention_backward", q, k, v);
  const auto shape = [](const Mat<T>& m) { return std::to_string(m.rows()) + " x " + std::to_string(m.cols()); };
  if (out.rows() != q.rows() || out.cols() != v.cols())
    throw std::invalid_argument("fused_attention_backward: out is " + shape(out) + "; the forward's is " +
                                std::to_string(q.rows()) + " x " + std::to_string(v.cols()));
  if (d_out.rows() != out.rows() || d_out.cols() != out.cols())
    throw std::invalid_argument("fused_attention_backward: d_out is " + shape(d_out) + " but out is " + shape(out));
  if (lse.size() != q.rows())
    throw std::invalid_argument("fused_attention_backward: lse has " + std::to_string(lse.size()) + " entries for " +
                                std::to_string(q.rows()) + " queries");
  if (!lse.allFinite()) throw std::invalid_argument("fused_attention_backward: lse has a non-finite entry");
}

}  // namespace

template <typename T>
Mat<T> fused_attention(const Mat<T>& q, const Mat<T>& k, const Mat<T>& v, Eigen::Index key_block) {
  detail::check_attention_shapes("fused_attention", q, k, v);
  check_key_block(key_block);
  Mat<T> out(q.rows(), v.cols());
  fused_heads(&q, &k, &v, &out, 1, key_block);
  return out;
}

template <typename T>
HeadStack<T> fused_attention(const HeadStack<T>& q, const HeadStack<T>& k, const HeadStack<T>& v,
                             Eigen::Index key_block) {
  detail::check_same_heads(q, k, v);
  detail::check_attention_shapes("fused_attention", q[0], k[0], v[0]);
  check_key_block(key_block);
  auto out = HeadStack<T>::uninitialized(q.batch(), q.heads(), q.n(), v.d());
  fused_heads(&q[0], &k[0], &v[0], &out[0], q.count(), key_block);
  return out;
}

template <typename T>
void fused_attention_into(Mat<T>& out, const Mat<T>& q, const Mat<T>& k, const Mat<T>& v, Eigen::Index key_block) {
  detail::check_attention_shapes("fused_attention_into", q, k, v);
  check_key_block(key_block);
  // Other blocks read every row of K and V while this one's output is written.
  if (&out == &k || &out == &v) throw std::invalid_argument("fused_attention_into: the output must not be k or v");
  if (out.rows() != q.rows() || out.cols() != v.cols()) {
    // Resizing q would lose the queries before they are read.
    if (&out == &q)
      throw std::invalid_argument("fused_attention_into: the output is q, but q has " + std::to_string(q.cols()) +
                                  " columns and the output needs v's " + std::to_string(v.cols()));
    out.resize(q.rows(), v.cols());
  }
  fused_heads(&q, &k, &v, &out, 1, key_block);
}

template <typename T>
void fused_attention_into(HeadStack<T>& out, const HeadStack<T>& q, const HeadStack<T>& k, const HeadStack<T>& v,
                          Eigen::Index key_block) {
  detail::check_same_heads(q, k, v);
  detail::check_attention_shapes("fused_attention_into", q[0], k[0], v[0]);
  check_key_block(key_block);
  if (&out == &k || &out == &v) throw std::invalid_argument("fused_attention_into: the output must not be k or v");
  if (out.batch() != q.batch() || out.heads() != q.heads() || out.n() != q.n() || out.d() != v.d()) {
    if (&out == &q)
      throw std::invalid_argument("fused_attention_into: the output is q, but q's heads have " + std::to_string(q.d()) +
                                  " columns and the output needs v's " + std::to_string(v.d()));
    out = HeadStack<T>::uninitialized(q.batch(), q.heads(), q.n(), v.d());
  }
  fused_heads(&q[0], &k[0], &v[0], &out[0], q.count(), key_block);
}

template <typename T>
Mat<T> fused_attention(const Mat<T>& q, const Mat<T>& k, const Mat<T>& v, Eigen::Index key_block, Vec<T>& lse) {
  detail::check_attention_shapes("fused_attention", q, k, v);
  check_key_block(key_block);
  Mat<T> out(q.rows(), v.cols());
  lse.resize(q.rows());
  fused_heads(&q, &k, &v, &out, 1, key_block, &lse);
  return out;
}

template <typename T>
AttentionGradients<T> fused_attention_backward(const Mat<T>& q, const Mat<T>& k, const Mat<T>& v, const Mat<T>& out,
                                               const Vec<T>& lse, const Mat<T>& d_out) {
  check_backward_shapes(q, k, v, out, lse, d_out);
  AttentionGradients<T> g{Mat<T>(q.rows(), q.cols()), Mat<T>(k.rows(), k.cols()), Mat<T>(v.rows(), v.cols())};
  std::vector<BackwardHead<T>> heads{{&q, &k, &v, &d_out, &lse, {}, &g.dq, &g.dk, &g.dv}};
  backward_heads(heads, &out);
  return g;
}

template <typename T>
StackGradients<T> fused_attention_backward(const HeadStack<T>& q, const HeadStack<T>& k, const HeadStack<T>& v,
                                           const HeadStack<T>& out, const std::vector<Vec<T>>& lse,
                                           const HeadStack<T>& d_out) {
  detail::check_same_heads(q, k, v);
  if (out.count() != q.count() || d_out.count() != q.count() || static_cast<Eigen::Index>(lse.size()) != q.count())
    throw std::invalid_argument("fused_attention_backward: out, d_out and lse must have one entry per head of Q (" +
                                std::to_string(q.count()) + ")");
  for (Eigen::Index h = 0; h < q.count(); ++h) check_backward_shapes(q[h], k[h], v[h], out[h], lse[h], d_out[h]);
  // Left unset: backward_heads zeroes dQ, and each key block's task its dK and dV rows, before adding into them.
  StackGradients<T> g{HeadStack<T>::uninitialized(q.batch(), q.heads(), q.n(), q.d()),
                      HeadStack<T>::uninitialized(k.batch(), k.heads(), k.n(), k.d()),
                      HeadStack<T>::uninitialized(v.batch(), v.heads(), v.n(), v.d())};
  std::vector<BackwardHead<T>> heads;
  for (Eigen::Index h = 0; h < q.count(); ++h)
    heads.push_back({&q[h], &k[h], &v[h], &d_out[h], &lse[static_cast<std::size_t>(h)], {}, &g.dq[h], &g.dk[h], &g.dv[h]});
  backward_heads(heads, &out[0]);
  return g;
}

template <typename T>
void fused_attention_c_order(const std::vector<T*>& out, const std::vector<const T*>& q, const std::vector<const T*>& k,
                             const std::vector<const T*>& v, Eigen::Index n_q, Eigen::Index n_k, Eigen::Index d,
                             Eigen::Index d_v, Eigen::Index key_block) {
  const std::size_t count = q.size();
  if (count == 0 || k.size() != count || v.size() != count || out.size() != count)
    throw std::invalid_argument("fused_attention_c_order: " + std::to_string(q.size()) + " query heads, " + std::to_string(k.size()) +
                                " key, " + std::to_string(v.size()) + " value and " + std::to_string(out.size()) +
                                " output heads; need as many of each, at least one");
  if (n_q < 1 || n_k < 1 || d < 1 || d_v < 0)
    throw std::invalid_argument("fused_attention_c_order: heads of n_q = " + std::to_string(n_q) + ", n_k = " + std::to_string(n_k) +
                                ", d = " + std::to_string(d) + ", d_v = " + std::to_string(d_v) +
                                "; need n_q, n_k and d at least 1, d_v at least 0");
  check_key_block(key_block);
  const COrderHeads<T> heads{q, k, v, out, n_q, n_k, d, d_v};
  fused_heads<T>(heads, static_cast<Eigen::Index>(count), key_block);
}

template Mat<float> fused_attention(const Mat<float>&, const Mat<float>&, const Mat<float>&, Eigen::Index, Vec<float>&);
template Mat<double> fused_attention(const Mat<double>&, const Mat<double>&, const Mat<double>&, Eigen::Index, Vec<double>&);
template AttentionGradients<float> fused_attention_backward(const Mat<float>&, const Mat<float>&, const Mat<float>&,
                                                            const Mat<float>&, const Vec<float>&, const Mat<float>&);
template AttentionGradients<double> fused_attention_backward(const Mat<double>&, const Mat<double>&, const Mat<double>&,
                                                             const Mat<double>&, const Vec<double>&, const Mat<double>&);
template StackGradients<float> fused_attention_backward(const HeadStack<float>&, const HeadStack<float>&,
                                                        const HeadStack<float>&, const HeadStack<float>&,
                                                        const std::vector<Vec<float>>&, const HeadStack<float>&);
template StackGradients<double> fused_attention_backward(const HeadStack<double>&, const HeadStack<double>&,
                                                         const HeadStack<double>&, const HeadStack<double>&,
                                                         const std::vector<Vec<double>>&, const HeadStack<double>&);
template void fused_attention_into(Mat<float>&, const Mat<float>&, const Mat<float>&, const Mat<float>&, Eigen::Index);
template void fused_attention_into(Mat<double>&, const Mat<double>&, const Mat<double>&, const Mat<double>&, Eigen::Index);
template void fused_attention_into(HeadStack<float>&, const HeadStack<float>&, const HeadStack<float>&,
                                   const HeadStack<float>&, Eigen::Index);
template void fused_attention_into(HeadStack<double>&, const HeadStack<double>&, const HeadStack<double>&,
                                   const HeadStack<double>&, Eigen::Index);
template Mat<float> fused_attention(const Mat<float>&, const Mat<float>&, const Mat<float>&, Eigen::Index);
template Mat<double> fused_attention(const Mat<double>&, const Mat<double>&, const Mat<double>&, Eigen::Index);
template HeadStack<float> fused_attention(const HeadStack<float>&, const HeadStack<float>&, const HeadStack<float>&,
                                          Eigen::Index);
template HeadStack<double> fused_attention(const HeadStack<double>&, const HeadStack<double>&,
                                           const HeadStack<double>&, Eigen::Index);
template void fused_attention_c_order(const std::vector<float*>&, const std::vector<const float*>&, const std::vector<const float*>&,
                                      const std::vector<const float*>&, Eigen::Index, Eigen::Index, Eigen::Index, Eigen::Index,
                                      Eigen::Index);
template void fused_attention_c_order(const std::vector<double*>&, const std::vector<const double*>&,
                                      const std::vector<const double*>&, const std::vector<const double*>&, Eigen::Index,
                                      Eigen::Index, Eigen::Index, Eigen::Index, Eigen::Index);

}  // namespace attnlab
