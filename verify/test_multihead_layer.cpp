// Checks of the multi-head layer and of the explainer's Linformer module (seed 003); the module under
// PyTorch itself is test_linformer_snippet_torch.cpp.
#include <doctest/doctest.h>

#include <string>

#include "attnlab/attention/linformer_snippet.hpp"
#include "attnlab/attention/multihead_layer.hpp"
#include "attnlab/linalg/residual_ratio.hpp"
#include "attnlab/core/softmax.hpp"
#include "support.hpp"

using namespace attnlab;

namespace {

const std::uint64_t kMultiheadLayerSeed = attnlab::testing::test_seed(4242);  // ATTNLAB_TEST_SEED overrides it

// Concat_h softmax(X Wq_h (X Wk_h)^T / sqrt(d_h)) X Wv_h, then W_O: the layer written out directly.
template <typename T>
Mat<T> direct_layer(const Mat<T>& x, const MultiheadWeights<T>& w) {
  const Eigen::Index dh = w.head_dim();
  Mat<T> concat(x.rows(), w.wq.cols());
  for (Eigen::Index h = 0; h < w.heads; ++h) {
    const Mat<T> q = x * w.wq.middleCols(h * dh, dh), k = x * w.wk.middleCols(h * dh, dh),
                 v = x * w.wv.middleCols(h * dh, dh);
    concat.middleCols(h * dh, dh) = softmax_rows(Mat<T>(q * k.transpose() / std::sqrt(static_cast<T>(dh)))) * v;
  }
  return concat * w.wo;
}

template <typename T>
void check_exact_layer() {
  Rng rng(kMultiheadLayerSeed);
  INFO("seed " << kMultiheadLayerSeed);
  for (Eigen::Index n : {Eigen::Index(1), Eigen::Index(2), Eigen::Index(3), Eigen::Index(37)})
    for (Eigen::Index heads : {Eigen::Index(1), Eigen::Index(2), Eigen::Index(4)}) {
      const Eigen::Index d_model = 8;
      const auto w = gaussian_multihead_weights(d_model, heads, rng);
      const MultiheadWeights<T> wt{w.wq.cast<T>(), w.wk.cast<T>(), w.wv.cast<T>(), w.wo.cast<T>(), Vec<T>(), heads};
      const Mat<T> x = gaussian_matrix<T>(n, d_model, rng);
      const Mat<T> got = multihead_layer(x, wt, exact_head_attention<T>());
      const Mat<T> want = direct_layer(x, wt);
      INFO("n " << n << " heads " << heads);
      // Same formula, different GEMM grouping: within c n eps of ||X|| ||W_V|| ||W_O|| (the output's scale).
      const double scale = static_cast<double>(x.norm() * wt.wv.norm() * wt.wo.norm());
      ATTNLAB_CHECK_RATIO_LT(residual_ratio<T>(static_cast<double>((got - want).norm()), static_cast<double>(n), scale),
                             kResidualRatioThreshold, "multihead_layer against the layer written out");
    }
}

}  // namespace

TEST_CASE("multihead layer with exact attention matches a direct per-head computation, float and double") {
  check_exact_layer<float>();
  check_exact_layer<double>();
}

TEST_CASE("multihead layer: the batched version equals the per-sequence one; shape errors name the value") {
  Rng rng(kMultiheadLayerSeed + 1);
  const Eigen::Index batch = 3, n = 16, d_model = 12, heads = 3;
  const auto w = gaussian_multihead_weights(d_model, heads, rng);
  HeadStack<double> x(batch, 1, n, d_model);
  for (Eigen::Index b = 0; b < batch; ++b) x[b] = gaussian_matrix(n, d_model, rng);
  const auto proj = gaussian_projections(n, 5, ProjectionSharing::separate, rng);
  const auto attend = linformer_head_attention(proj);
  const HeadStack<double> out = multihead_layer(x, w, attend);
  for (Eigen::Index b = 0; b < batch; ++b) CHECK(out[b] == multihead_layer(x[b], w, attend));
  MultiheadWeights<double> bad = w;
  bad.heads = 5;
  CHECK_THROWS_WITH_AS(multihead_layer(x[0], bad, attend), doctest::Contains("heads (= 5)"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(multihead_layer(Mat<double>(0, d_model), w, attend), doctest::Contains("n (= 0)"),
                       std::invalid_argument);
  // A Linformer head built for n = 16 meets a sequence of 10: the kernel's message comes through.
  CHECK_THROWS_WITH_AS(multihead_layer(Mat<double>(gaussian_matrix(10, d_model, rng)), w, attend),
                       doctest::Contains("n = 10"), std::invalid_argument);
}

TEST_CASE("explainer snippet: as written it fails at proj_k for the documented shapes") {
  const SnippetTrace t = trace_snippet(snippet_as_written(4, 4096, 512, 8, 256));
  CHECK_FALSE(t.ran);
  CHECK(t.failing_step == "k_proj = self.proj_k(k)");
  // k.transpose(-1, -2) is (4, 8, 64, 4096): folded to 2048 x 4096 against weight^T of 64 x 256.
  CHECK(t.error == "mat1 and mat2 shapes cannot be multiplied (2048x4096 and 64x256)");
  // It runs only where the sequence length happens to equal dim_head.
  const SnippetTrace t64 = trace_snippet(snippet_as_written(4, 64, 512, 8, 256));
  CHECK(t64.ran);
  CHECK(t64.output_shape_matches_input);
  const SnippetTrace fixed = trace_snippet(snippet_corrected(4, 4096, 512, 8, 256));
  CHECK(fixed.ran);
  CHECK(shape_string(fixed.output_shape) == "(4, 4096, 512)");
  CHECK(trace_snippet(snippet_as_written(4, 64, 500, 8, 256)).error == "dimension must be divisible by heads");
}

TEST_CASE("explainer snippet, corrected, in eval mode with zero projection biases is our Linformer layer") {
  Rng rng(kMultiheadLayerSeed + 2);
  INFO("seed " << kMultiheadLayerSeed + 2);
  for (Eigen::Index n : {Eigen::Index(1), Eigen::Index(3), Eigen::Index(24)}) {
    const SnippetConfig c = snippet_corrected(2, n, 8, 2, 4);
    SnippetWeights<double> sw = snippet_default_weights(c, rng);
    sw.proj_k_bias.setZero();
    sw.proj_v_bias.setZero();
    HeadStack<double> x(c.batch, 1, n, c.dim);
    for (Eigen::Index b = 0; b < c.batch; ++b) x[b] = gaussian_matrix(n, c.dim, rng);
    const HeadStack<double> got = snippet_forward(c, sw, x, false, 0);
    // nn.Linear computes x W^T, so W_Q = to_q^T, ...; proj_k.weight is E (k x n).
    const MultiheadWeights<double> w{sw.to_q.transpose(), sw.to_k.transpose(), sw.to_v.transpose(),
                                     sw.to_out.transpose(), sw.to_out_bias, c.heads};
    const HeadStack<double> want = multihead_layer(x, w, linformer_head_attention<double>({sw.proj_k, sw.proj_v}));
    INFO("n " << n);
    for (Eigen::Index b = 0; b < c.batch; ++b)
      ATTNLAB_CHECK_RATIO_LT(residual_ratio<double>((got[b] - want[b]).norm(), n, want[b].norm() + 1.0),
                             kResidualRatioThreshold, "the snippet's forward against multihead_layer");
    // Training mode (the module's state after construction): dropout changes values, never shapes or finiteness.
    const HeadStack<float> train = snippet_forward(c, sw.cast<float>(), x.cast<float>(), true, 99);
    CHECK(train[0].allFinite());
    CHECK(train[0].rows() == n);
  }
  const SnippetConfig as_written = snippet_as_written(1, 16, 8, 2, 4);
  HeadStack<double> x(1, 1, 16, 8);
  CHECK_THROWS_AS(snippet_forward(as_written, snippet_default_weights(as_written, rng), x, false, 0),
                  SnippetShapeError);
}
