// The Linformer explainer's (seed 003) LinformerAttention module, layer for layer, under PyTorch's shape rules.
#include "attnlab/attention/linformer_snippet.hpp"

#include <cmath>
#include <functional>
#include <numeric>

#include "attnlab/core/softmax.hpp"

namespace attnlab {

namespace {

using Shape = std::vector<std::int64_t>;

std::int64_t numel(const Shape& s) { return std::accumulate(s.begin(), s.end(), std::int64_t{1}, std::multiplies<>()); }

// nn.Linear(in, out) on the last axis: F.linear folds the leading axes into one and
// multiplies by weight^T (in x out); mm refuses unequal inner sizes with this message.
Shape linear(const Shape& x, std::int64_t in, std::int64_t out) {
  if (x.back() != in)
    throw SnippetShapeError("mat1 and mat2 shapes cannot be multiplied (" + std::to_string(numel(x) / x.back()) +
                            "x" + std::to_string(x.back()) + " and " + std::to_string(in) + "x" +
                            std::to_string(out) + ")");
  Shape y = x;
  y.back() = out;
  return y;
}

Shape transposed(Shape s, int a, int b) {
  const auto ia = static_cast<std::size_t>(a < 0 ? a + static_cast<int>(s.size()) : a);
  const auto ib = static_cast<std::size_t>(b < 0 ? b + static_cast<int>(s.size()) : b);
  std::swap(s[ia], s[ib]);
  return s;
}

Shape view(const Shape& x, Shape target) {
  // A single -1 is inferred from the element count, as torch.Tensor.view does.
  std::int64_t known = 1, infer = -1;
  for (std::size_t i = 0; i < target.size(); ++i)
    if (target[i] == -1) infer = static_cast<std::int64_t>(i);
    else known *= target[i];
  if (infer >= 0 && known > 0 && numel(x) % known == 0) target[static_cast<std::size_t>(infer)] = numel(x) / known;
  if (numel(target) != numel(x) || (infer >= 0 && known == 0))
    throw SnippetShapeError("shape '" + shape_string(target) + "' is invalid for input of size " +
                            std::to_string(numel(x)));
  return target;
}

// Batched matmul of (..., n, m) @ (..., m, p) with equal batch axes (the snippet's only case).
Shape matmul(const Shape& a, const Shape& b) {
  if (a[a.size() - 1] != b[b.size() - 2])
    throw SnippetShapeError("Expected size for first two dimensions of batch2 tensor to be: [" +
                            std::to_string(numel(a) / (a[a.size() - 1] * a[a.size() - 2])) + ", " +
                            std::to_string(a.back()) + "] but got: [" +
                            std::to_string(numel(b) / (b[b.size() - 1] * b[b.size() - 2])) + ", " +
                            std::to_string(b[b.size() - 2]) + "].");
  Shape c = a;
  c.back() = b.back();
  return c;
}

}  // namespace

std::string shape_string(const std::vector<std::int64_t>& shape) {
  std::string s = "(";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + ")";
}

SnippetConfig snippet_as_written(std::int64_t batch, std::int64_t seq_len, std::int64_t dim, std::int64_t heads,
                                 std::int64_t k) {
  SnippetConfig c{batch, seq_len, dim, heads, k, heads > 0 ? dim / heads : 0, 0.1};
  return c;
}

SnippetConfig snippet_corrected(std::int64_t batch, std::int64_t seq_len, std::int64_t dim, std::int64_t heads,
                                std::int64_t k) {
  SnippetConfig c{batch, seq_len, dim, heads, k, seq_len, 0.1};
  return c;
}

SnippetTrace trace_snippet(const SnippetConfig& c) {
  SnippetTrace t;
  std::string current;
  // Each step: the snippet's expression and the shape PyTorch would give it.
  const auto step = [&](std::string op, const std::function<Shape()>& f) {
    current = op;
    const Shape s = f();
    t.steps.push_back({std::move(op), s});
    return s;
  };
  try {
    step("assert dim % heads == 0", [&] {
      if (c.heads < 1 || c.dim % c.heads != 0) throw SnippetShapeError("dimension must be divisible by heads");
      return Shape{};
    });
    const std::int64_t dh = c.dim / c.heads;
    const Shape x{c.batch, c.seq_len, c.dim};
    step("x", [&] { return x; });
    const Shape split{c.batch, c.seq_len, c.heads, dh};
    const Shape q = step("q = self.to_q(x).view(b, n, heads, dim_head).transpose(1, 2)",
                         [&] { return transposed(view(linear(x, c.dim, c.dim), split), 1, 2); });
    Shape k = step("k = self.to_k(x).view(b, n, heads, dim_head).transpose(1, 2)",
                   [&] { return transposed(view(linear(x, c.dim, c.dim), split), 1, 2); });
    Shape v = step("v = self.to_v(x).view(b, n, heads, dim_head).transpose(1, 2)",
                   [&] { return transposed(view(linear(x, c.dim, c.dim), split), 1, 2); });
    k = step("k = k.transpose(-1, -2)", [&] { return transposed(k, -1, -2); });
    v = step("v = v.transpose(-1, -2)", [&] { return transposed(v, -1, -2); });
    Shape k_proj = step("k_proj = self.proj_k(k)", [&] { return linear(k, c.proj_in_features, c.k); });
    Shape v_proj = step("v_proj = self.proj_v(v)", [&] { return linear(v, c.proj_in_features, c.k); });
    k_proj = step("k_proj = k_proj.transpose(-1, -2)", [&] { return transposed(k_proj, -1, -2); });
    v_proj = step("v_proj = v_proj.transpose(-1, -2)", [&] { return transposed(v_proj, -1, -2); });
    const Shape scores = step("attn_scores = torch.matmul(q, k_proj.transpose(-1, -2)) * self.scale",
                              [&] { return matmul(q, transposed(k_proj, -1, -2)); });
    const Shape probs = step("attn_probs = self.dropout(attn_scores.softmax(dim=-1))", [&] { return scores; });
    Shape context = step("context = torch.matmul(attn_probs, v_proj)", [&] { return matmul(probs, v_proj); });
    context = step("context = context.transpose(1, 2).contiguous().view(b, n, -1)",
                   [&] { return view(transposed(context, 1, 2), Shape{c.batch, c.seq_len, -1}); });
    t.output_shape = step("return self.to_out(context)", [&] { return linear(context, c.dim, c.dim); });
    t.ran = true;
    t.output_shape_matches_input = t.output_shape == x;
  } catch (const SnippetShapeError& e) {
    t.failing_step = current;
    t.error = e.what();
    t.steps.push_back({current, {}});
  }
  return t;
}

SnippetWeights<double> snippet_default_weights(const SnippetConfig& c, Rng& rng) {
  // kaiming_uniform_(a = sqrt(5)) on an out x in weight has bound 1/sqrt(in); the bias uses the same bound.
  const auto linear_weight = [&](std::int64_t out, std::int64_t in) {
    const double b = 1.0 / std::sqrt(static_cast<double>(in));
    return uniform_matrix(out, in, rng, -b, b);
  };
  const auto linear_bias = [&](std::int64_t out, std::int64_t in) -> Vec<double> {
    const double b = 1.0 / std::sqrt(static_cast<double>(in));
    return uniform_matrix(out, 1, rng, -b, b);
  };
  SnippetWeights<double> w;
  w.to_q = linear_weight(c.dim, c.dim);
  w.to_k = linear_weight(c.dim, c.dim);
  w.to_v = linear_weight(c.dim, c.dim);
  w.proj_k = linear_weight(c.k, c.proj_in_features);
  w.proj_k_bias = linear_bias(c.k, c.proj_in_features);
  w.proj_v = linear_weight(c.k, c.proj_in_features);
  w.proj_v_bias = linear_bias(c.k, c.proj_in_features);
  w.to_out = linear_weight(c.dim, c.dim);
  w.to_out_bias = linear_bias(c.dim, c.dim);
  return w;
}

template <typename T>
HeadStack<T> snippet_forward(const SnippetConfig& c, const SnippetWeights<T>& w, const HeadStack<T>& x, bool training,
                             std::uint64_t dropout_seed) {
  if (x.batch() != c.batch || x.heads() != 1 || x.n() != c.seq_len || x.d() != c.dim)
    throw std::invalid_argument("snippet_forward: x is (" + std::to_string(x.batch()) + ", " +
                                std::to_string(x.heads()) + ", " + std::to_string(x.n()) + ", " +
                                std::to_string(x.d()) + "), the config says (" + std::to_string(c.batch) + ", 1, " +
                                std::to_string(c.seq_len) + ", " + std::to_string(c.dim) + ")");
  // PyTorch checks each layer's shapes as it reaches it; the trace applies the same rules first.
  const SnippetTrace trace = trace_snippet(c);
  if (!trace.ran) throw SnippetShapeError(trace.failing_step + ": " + trace.error);
  const Eigen::Index heads = c.heads, dh = c.dim / c.heads, n = c.seq_len;
  const T scale = T(1) / std::sqrt(static_cast<T>(dh));  // self.dim_head ** -0.5
  const T keep = T(1) - static_cast<T>(c.dropout);
  // Shapes per sequence: x n x dim; q, k, v n x dim (heads side by side); per head
  // q_h n x dh, k_proj k x dh, scores n x k, context n x dh; out n x dim.
  std::vector<Mat<T>> q(static_cast<std::size_t>(c.batch)), k(q.size()), v(q.size()), context(q.size());
  for (std::int64_t b = 0; b < c.batch; ++b) {
    // Step 1: nn.Linear(dim, dim, bias=False) computes x W^T.
    q[static_cast<std::size_t>(b)] = x[b] * w.to_q.transpose();
    k[static_cast<std::size_t>(b)] = x[b] * w.to_k.transpose();
    v[static_cast<std::size_t>(b)] = x[b] * w.to_v.transpose();
    context[static_cast<std::size_t>(b)].resize(n, c.dim);
  }
#pragma omp parallel for schedule(dynamic)
  for (Eigen::Index i = 0; i < c.batch * heads; ++i) {
    const auto b = static_cast<std::size_t>(i / heads);
    const Eigen::Index h = i % heads;
    // Step 2: proj_k acts on k.transpose(-1, -2) (dh x n) along its last axis, the sequence:
    // (k_h^T) W^T + bias, then transposed back: k_proj = W k_h + bias 1^T, k x dh.
    const Mat<T> k_proj = w.proj_k * k[b].middleCols(h * dh, dh) + w.proj_k_bias.replicate(1, dh);
    const Mat<T> v_proj = w.proj_v * v[b].middleCols(h * dh, dh) + w.proj_v_bias.replicate(1, dh);
    // Step 3: scores n x k, stable row softmax (max-subtracted), dropout in training mode.
    Mat<T> probs = (q[b].middleCols(h * dh, dh) * k_proj.transpose()) * scale;
    softmax_rows_inplace(probs);
    if (training && c.dropout > 0) {
      Rng rng(derive_seed(dropout_seed, static_cast<std::uint64_t>(i)));
      for (Eigen::Index col = 0; col < probs.cols(); ++col)
        for (Eigen::Index row = 0; row < probs.rows(); ++row)
          probs(row, col) = rng.uniform() < c.dropout ? T(0) : probs(row, col) / keep;
    }
    // Step 4: context, written into this head's columns (heads concatenated as in .view(b, n, -1)).
    context[b].middleCols(h * dh, dh) = probs * v_proj;
  }
  HeadStack<T> out(c.batch, 1, n, c.dim);
  for (std::int64_t b = 0; b < c.batch; ++b) {
    // Step 5: to_out, nn.Linear(dim, dim) with bias.
    out[b] = context[static_cast<std::size_t>(b)] * w.to_out.transpose();
    out[b].rowwise() += w.to_out_bias.transpose();
  }
  return out;
}

double snippet_multiply_adds(const SnippetConfig& c) {
  const double B = static_cast<double>(c.batch), N = static_cast<double>(c.seq_len), D = static_cast<double>(c.dim),
               K = static_cast<double>(c.k);
  // Four dim x dim projections; per head two k x n x dh sequence projections and two n x k x dh products.
  return B * (4 * N * D * D + 2 * K * N * D + 2 * N * K * D);
}

template HeadStack<float> snippet_forward<float>(const SnippetConfig&, const SnippetWeights<float>&,
                                                 const HeadStack<float>&, bool, std::uint64_t);
template HeadStack<double> snippet_forward<double>(const SnippetConfig&, const SnippetWeights<double>&,
                                                   const HeadStack<double>&, bool, std::uint64_t);

}  // namespace attnlab
