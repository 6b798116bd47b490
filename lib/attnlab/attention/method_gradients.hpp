// The gradients of the registry's methods (registry.hpp) from their hand-written backward passes: the backward of
// each method's trainable form (<method>_train.hpp) for Impl::reference, the fused FlashAttention-2 backward
// (fused_attention.hpp) for exact and streaming attention's Impl::fast. What the Python module's attnlab.attend_grad
// returns, so that users can check their own implementation's gradients against ours.
//
//   const AttentionMethod& m = attention_method("nystrom");
//   if (const std::string why = method_gradient_problem(m, Impl::reference, params, n_q, n_k); !why.empty()) ...
//   const MethodGradients<double> g = method_gradients(m, Impl::reference, q, k, v, d_out, params, draws);
#pragma once

#include <Eigen/Core>
#include <string>

#include "attnlab/attention/registry.hpp"
#include "attnlab/core/head_stack.hpp"

namespace attnlab {

// "" when method_gradients differentiates (method, impl, params) on n_q queries and n_k keys; else why not, one line
// in attend's flags: streaming's reference kernel has no backward (its fast kernel's is the fused one), the
// approximations have no fast backward, Nystrom's backward is the iterative pseudoinverse's with per-matrix
// initialisation and at least one iteration, and the trainable forms take as many keys as queries.
std::string method_gradient_problem(const AttentionMethod& method, Impl impl, const MethodParams& params, Eigen::Index n_q,
                                    Eigen::Index n_k);

template <typename T>
struct MethodGradients {
  HeadStack<T> out;         // (batch, heads, n_q, d_v): the forward the backward differentiates
  HeadStack<T> dq, dk, dv;  // (batch, heads, n_q, d), (batch, heads, n_k, d), (batch, heads, n_k, d_v)
};

// For every (batch, head): out = attention(q, k, v) as the method's backward pass has it computed (the trainable
// forward, its parameters and buffers set to the registry's draws, one draw shared by every head as
// run_attention shares it; or fused_attention keeping its row statistics), then dq, dk, dv = the gradients of
// sum(d_out o out). The forward is run_attention's function (for exact, linear-elu, linear-shen, random-fourier,
// favor and the fast kernels bit for bit; linformer and nystrom compute it in their own order). Heads in parallel;
// the same bits for any thread count. Throws std::invalid_argument with method_gradient_problem's line, or for
// shapes that do not agree (d_out must have the output's shape).
template <typename T>
MethodGradients<T> method_gradients(const AttentionMethod& method, Impl impl, const HeadStack<T>& q, const HeadStack<T>& k,
                                    const HeadStack<T>& v, const HeadStack<T>& d_out, const MethodParams& params,
                                    const MethodDraws& draws = {});

}  // namespace attnlab
