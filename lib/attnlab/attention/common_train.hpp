// What every trainable attention pass shares: the call checks and the tape handling.
#pragma once

#include <Eigen/Dense>
#include <memory>
#include <stdexcept>
#include <string>

#include "attnlab/attention/trainable.hpp"
#include "attnlab/core/matrix.hpp"
#include "attnlab/core/softmax.hpp"

namespace attnlab::detail {

// The shapes one TrainableAttention object was built for (resolved: no zeros left).
struct TrainShape {
  Eigen::Index n = 0, d_k = 0, d_v = 0, heads = 1;
};

// q, k: n x d_k, v: n x d_v, head in [0, heads). Throws std::invalid_argument naming the value:
// a method is built for one layer's shapes (Linformer's E is k x n), so a call with other shapes
// is misuse, not an outcome.
template <typename T>
void check_train_call(const std::string& who, const TrainShape& s, Eigen::Index head, const Mat<T>& q,
                      const Mat<T>& k, const Mat<T>& v) {
  auto str = [](Eigen::Index x) { return std::to_string(x); };
  if (head < 0 || head >= s.heads)
    throw std::invalid_argument(who + ": head (= " + str(head) + ") outside [0, " + str(s.heads) + ")");
  if (q.rows() != s.n || q.cols() != s.d_k || k.rows() != s.n || k.cols() != s.d_k || v.rows() != s.n ||
      v.cols() != s.d_v)
    throw std::invalid_argument(who + ": q is " + str(q.rows()) + " x " + str(q.cols()) + ", k " + str(k.rows()) +
                                " x " + str(k.cols()) + ", v " + str(v.rows()) + " x " + str(v.cols()) +
                                "; built for q, k n x d_k = " + str(s.n) + " x " + str(s.d_k) + " and v n x d_v = " +
                                str(s.n) + " x " + str(s.d_v));
}

// d_out must be n x d_v, as the forward's output.
template <typename T>
void check_train_d_out(const std::string& who, const TrainShape& s, const Mat<T>& d_out) {
  if (d_out.rows() != s.n || d_out.cols() != s.d_v)
    throw std::invalid_argument(who + ": d_out is " + std::to_string(d_out.rows()) + " x " +
                                std::to_string(d_out.cols()) + ", the output is " + std::to_string(s.n) + " x " +
                                std::to_string(s.d_v));
}

// The method's own tape type, or std::invalid_argument when backward is handed another method's tape.
template <typename TapeT>
const TapeT& tape_as(const std::string& who, const AttentionTape& tape) {
  const auto* t = dynamic_cast<const TapeT*>(&tape);
  if (t == nullptr) throw std::invalid_argument(who + ": backward was given a tape from another method's forward");
  return *t;
}

// The tape a forward writes into: *tape itself when it already holds a TapeT (the trainer's tape
// from the previous step: its matrices keep their storage, so a step allocates nothing and touches
// no fresh pages; every field is overwritten), a new TapeT stored in *tape otherwise, or `local`
// when the caller wants no tape (the forward still needs the scratch).
template <typename TapeT>
TapeT& reuse_tape(std::unique_ptr<AttentionTape>* tape, std::unique_ptr<TapeT>& local) {
  if (tape == nullptr) {
    local = std::make_unique<TapeT>();
    return *local;
  }
  if (auto* t = dynamic_cast<TapeT*>(tape->get())) return *t;
  auto fresh = std::make_unique<TapeT>();
  TapeT& ref = *fresh;
  *tape = std::move(fresh);
  return ref;
}

// The softmax of every trainable method is core's (core/softmax.hpp); these names stay for the callers
// outside the attention layer that spell them detail:: (model/analysis/score_probe.cpp).
using attnlab::softmax_cols_backward_inplace;
using attnlab::softmax_cols_inplace;

}  // namespace attnlab::detail
