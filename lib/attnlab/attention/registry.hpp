// The attention methods in one table: each method's one name, its parameters, its reference kernel,
// its fast kernel (where it has one) and its counted cost. attend, bench_attention and
// exp_five_attentions_cost look methods up here, so a name is spelled the same everywhere
// (the trainer's trainable_attention_names() uses the same spellings, plus `symmetric`, which works
// on W_Q and W_K rather than on Q, K, V and so has no entry here).
//
//   const AttentionMethod& m = attention_method("linformer");   // std::invalid_argument lists the names
//   MethodParams p;  p.projected = 32;
//   const MethodDraws draws = m.draw(p, n, d, rng);              // E and F, shared by all heads
//   HeadStack<float> out = run_attention(m, Impl::fast, q, k, v, p, draws);
#pragma once

#include <Eigen/Core>
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "attnlab/attention/attention_cost.hpp"
#include "attnlab/attention/linformer.hpp"
#include "attnlab/attention/nystrom.hpp"
#include "attnlab/attention/random_features.hpp"
#include "attnlab/core/head_stack.hpp"
#include "attnlab/core/rng.hpp"

namespace attnlab {

// Every parameter of every method, with the defaults attend documents; a method reads only the ones
// AttentionMethod::parameters names.
struct MethodParams {
  Eigen::Index key_block = 64;         // streaming: keys per block
  Eigen::Index projected = 64;         // linformer: k, the rows E and F project to
  bool segment_mean_projection = false;  // linformer: E = F = segment means instead of N(0, 1/k) draws
  bool share_kv = false;               // linformer: one gaussian draw for E = F
  Eigen::Index features = 256;         // random-fourier, favor: D
  double temperature = 0;              // random-fourier: tau of softmax(Q K^T / tau); 0 means sqrt(d)
  bool iid = false;                    // favor: independent directions instead of orthogonal blocks
  NystromOptions nystrom;              // nystrom: landmarks (64), pseudoinverse and its options
};

// The random matrices of one call, drawn once and shared by every head (empty for the deterministic
// methods). attend can save them and read them back.
struct MethodDraws {
  std::optional<LinformerProjections<double>> projections;  // linformer: E, F (k x n)
  std::optional<RandomFeatureDraw> features;                // random-fourier, favor: omega (D x d)
};

// Which kernel of a method: the reference (written as the paper states the method, checked against
// the definition in verify/) or the fast one (blocked, GEMM-shaped, parallel over heads and blocks;
// checked against the reference). Both give the same result up to rounding.
enum class Impl { reference, fast };
std::string to_string(Impl impl);

template <typename T>
using AttentionKernel = HeadStack<T> (*)(const HeadStack<T>& q, const HeadStack<T>& k, const HeadStack<T>& v,
                                         const MethodParams& params, const MethodDraws& draws);

struct AttentionMethod {
  std::string name;                     // the one spelling: exact, streaming, linear-shen, ...
  std::string summary;                  // one line, for --help
  std::vector<std::string> parameters;  // the MethodParams fields it reads, by attend's flag names
  bool random = false;                  // whether draw() draws anything
  // The draws for n keys of width d (nothing for deterministic methods).
  MethodDraws (*draw)(const MethodParams& params, Eigen::Index n, Eigen::Index d, Rng& rng) = nullptr;
  AttentionKernel<float> reference_float = nullptr;
  AttentionKernel<double> reference_double = nullptr;
  AttentionKernel<float> fast_float = nullptr;  // null: the method has no fast kernel
  AttentionKernel<double> fast_double = nullptr;
  // Multiply-adds and workspace of one head with n queries and keys, d = d_v (attention_cost.hpp).
  AttentionCost (*cost)(const MethodParams& params, long long n, long long d, std::size_t scalar_bytes) = nullptr;
  // Bytes of its draws for n keys of width d, as draw() makes them (double) and as a kernel in scalars of
  // `scalar_bytes` bytes holds them too (nothing for deterministic methods): with cost's workspace, what a
  // caller needs to know before it allocates (attend's memory check).
  double (*draw_bytes)(const MethodParams& params, long long n, long long d, std::size_t scalar_bytes) = nullptr;

  bool has_fast() const { return fast_float != nullptr; }
};

// The methods, in the order tables list them: exact, streaming, linear-shen, linear-elu, linformer,
// random-fourier, favor, nystrom.
const std::vector<AttentionMethod>& attention_methods();
std::vector<std::string> attention_method_names();
// "exact, streaming, ..." for messages.
std::string attention_method_list();
// The method called `name`; std::invalid_argument naming the value and the valid names otherwise.
const AttentionMethod& attention_method(const std::string& name);

// One method's kernel on every head. Impl::fast on a method without a fast kernel, or with options
// its fast kernel does not take (nystrom's fast kernel: the iterative pseudoinverse with its default
// iterations and initialisation), throws std::invalid_argument naming them. A random method needs its
// draws (std::invalid_argument otherwise).
template <typename T>
HeadStack<T> run_attention(const AttentionMethod& method, Impl impl, const HeadStack<T>& q, const HeadStack<T>& k,
                           const HeadStack<T>& v, const MethodParams& params, const MethodDraws& draws = {});

// Whether the method's kernel for `impl` also reads heads held in C order in place (run_attention_c_order): the fast
// kernel of exact and streaming attention.
bool c_order_kernel_applies(const AttentionMethod& method, Impl impl);

// That kernel over heads held in C order, as NumPy holds them (fused_attention_c_order's arguments): the same output,
// bit for bit, as run_attention on the heads converted to a HeadStack. std::invalid_argument where
// c_order_kernel_applies is false.
template <typename T>
void run_attention_c_order(const AttentionMethod& method, Impl impl, const std::vector<T*>& out, const std::vector<const T*>& q,
                           const std::vector<const T*>& k, const std::vector<const T*>& v, Eigen::Index n_q, Eigen::Index n_k,
                           Eigen::Index d, Eigen::Index d_v, const MethodParams& params);

// Whether run_attention(method, Impl::fast, ...) accepts these parameters.
bool fast_kernel_applies(const AttentionMethod& method, const MethodParams& params);

}  // namespace attnlab
