// Applies a per-head attention kernel to every head of (batch, heads, n, d) stacks, heads in parallel.
#pragma once

#include <stdexcept>
#include <string>

#include "attnlab/core/head_stack.hpp"

namespace attnlab::detail {

// Throws std::invalid_argument unless the stacks agree in batch and heads (n may differ between
// Q and K, V: cross attention).
template <typename T>
void check_same_heads(const HeadStack<T>& q, const HeadStack<T>& k, const HeadStack<T>& v) {
  if (q.batch() != k.batch() || q.heads() != k.heads() || k.batch() != v.batch() || k.heads() != v.heads())
    throw std::invalid_argument("attention: head stacks differ in (batch, heads): Q (" + std::to_string(q.batch()) +
                                ", " + std::to_string(q.heads()) + "), K (" + std::to_string(k.batch()) + ", " +
                                std::to_string(k.heads()) + "), V (" + std::to_string(v.batch()) + ", " +
                                std::to_string(v.heads()) + ")");
}

// out[i] = kernel(q[i], k[i], v[i]) for every flat head index i, in parallel over heads.
// Each head writes only its own slot, so the result does not depend on the thread count.
template <typename T, typename Kernel>
HeadStack<T> map_heads(const HeadStack<T>& q, const HeadStack<T>& k, const HeadStack<T>& v, Kernel kernel) {
  check_same_heads(q, k, v);
  auto out = HeadStack<T>::uninitialized(q.batch(), q.heads(), q.n(), v.d());
  const Eigen::Index count = q.count();
  // Exceptions must not escape an OpenMP region: shapes are checked on head 0 first, and
  // every head has the same shapes, so no head can throw after that.
  if (count > 0) out[0] = kernel(q[0], k[0], v[0]);
  // (No parallel region for one head: starting one costs a wake-up of the runtime's threads even with nothing to
  // share, several microseconds against a small head's work.)
  if (count > 1) {
#pragma omp parallel for schedule(dynamic)
    for (Eigen::Index i = 1; i < count; ++i) out[i] = kernel(q[i], k[i], v[i]);
  }
  return out;
}

}  // namespace attnlab::detail
