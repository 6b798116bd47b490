// The Linformer explainer's (seed 003) LinformerAttention module, layer for layer, under PyTorch's shape rules.
#pragma once

#include <Eigen/Dense>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "attnlab/core/head_stack.hpp"
#include "attnlab/core/matrix.hpp"
#include "attnlab/core/rng.hpp"

namespace attnlab {

// The module's constructor arguments and the input's shape. The snippet builds its
// sequence projections as nn.Linear(dim_head, k) ("as written"); Linformer's E, F need
// nn.Linear(seq_len, k) ("corrected"), which fixes the sequence length at construction.
struct SnippetConfig {
  std::int64_t batch = 4, seq_len = 4096, dim = 512, heads = 8, k = 256;
  std::int64_t proj_in_features = 64;  // in_features of proj_k and proj_v
  double dropout = 0.1;                // nn.Dropout(0.1) on the attention probabilities
};

// The snippet's own usage example: batch 4, L 4096, dim 512, heads 8, k 256, proj_k = nn.Linear(dim // heads, k).
SnippetConfig snippet_as_written(std::int64_t batch, std::int64_t seq_len, std::int64_t dim, std::int64_t heads,
                                 std::int64_t k);
// The same with proj_k = nn.Linear(seq_len, k), projecting the sequence axis as Linformer does.
SnippetConfig snippet_corrected(std::int64_t batch, std::int64_t seq_len, std::int64_t dim, std::int64_t heads,
                                std::int64_t k);

// What PyTorch raises (RuntimeError / AssertionError) when the module meets a shape it cannot take.
struct SnippetShapeError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct SnippetStep {
  std::string operation;            // the snippet's expression, e.g. "k_proj = self.proj_k(k)"
  std::vector<std::int64_t> shape;  // the tensor's shape after it (empty when the step failed)
};

// The forward pass on shapes only, applying PyTorch's rules at every layer: nn.Linear
// acts on the last axis and needs its size to equal in_features (otherwise mm fails with
// "mat1 and mat2 shapes cannot be multiplied (AxB and CxD)" on the input folded to 2-D),
// view needs the element count to match, matmul needs the inner sizes to agree.
struct SnippetTrace {
  std::vector<SnippetStep> steps;
  bool ran = false;                       // reached the end and returned
  std::string failing_step;               // the operation that raised, if any
  std::string error;                      // PyTorch's message for it
  std::vector<std::int64_t> output_shape; // when ran
  bool output_shape_matches_input = false;
};
SnippetTrace trace_snippet(const SnippetConfig& config);

// "(4, 4096, 512)": a shape as PyTorch prints torch.Size.
std::string shape_string(const std::vector<std::int64_t>& shape);

// The module's parameters, stored as nn.Linear stores them: weight out_features x in_features.
template <typename T>
struct SnippetWeights {
  Mat<T> to_q, to_k, to_v;        // dim x dim, bias=False
  Mat<T> proj_k, proj_v;          // k x proj_in_features
  Vec<T> proj_k_bias, proj_v_bias;  // k
  Mat<T> to_out;                  // dim x dim
  Vec<T> to_out_bias;             // dim

  template <typename U>
  SnippetWeights<U> cast() const {
    return {to_q.template cast<U>(),        to_k.template cast<U>(),        to_v.template cast<U>(),
            proj_k.template cast<U>(),      proj_v.template cast<U>(),      proj_k_bias.template cast<U>(),
            proj_v_bias.template cast<U>(), to_out.template cast<U>(),      to_out_bias.template cast<U>()};
  }
};

// nn.Linear's default initialisation: weight and bias ~ U(-1/sqrt(in), 1/sqrt(in)).
SnippetWeights<double> snippet_default_weights(const SnippetConfig& config, Rng& rng);

// The forward pass, numerically, for x of shape (batch, 1, seq_len, dim) stored as a HeadStack.
// Throws SnippetShapeError with trace_snippet's message where PyTorch would raise. In training
// mode (the module's state right after construction) dropout zeroes each attention probability
// with probability p and scales the rest by 1 / (1 - p), drawing from derive_seed(dropout_seed, b * heads + h).
template <typename T>
HeadStack<T> snippet_forward(const SnippetConfig& config, const SnippetWeights<T>& w, const HeadStack<T>& x,
                             bool training, std::uint64_t dropout_seed);

// Multiply-adds of one forward pass (all four projections, both sequence projections, attention).
double snippet_multiply_adds(const SnippetConfig& config);

}  // namespace attnlab
