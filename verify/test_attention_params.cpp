// Properties of the attention parameter pieces: counts, bias augmentation, zero-padded
// growth, head split, and the merged/factored score computations.
#include <doctest/doctest.h>

#include <limits>

#include "attnlab/theory/attention_loss.hpp"
#include "attnlab/theory/attention_params.hpp"
#include "attnlab/qk/qk_merge.hpp"
#include "attnlab/core/rng.hpp"
#include "support.hpp"

using namespace attnlab;

namespace {
const std::uint64_t kAttentionParamsSeed = attnlab::testing::test_seed(4204);  // ATTNLAB_TEST_SEED overrides it
}

TEST_CASE("parameter count: the same for every allowed head count, with and without bias") {
  for (std::int64_t de : {1, 2, 3, 64})
    for (std::int64_t dk : {1, 2, 3, 12, 64})
      for (std::int64_t dv : {1, 2, 6, 64})
        for (bool bias : {false, true}) {
          const AttentionShape one{de, dk, dv, 1, bias};
          const std::int64_t c1 = parameter_count(one);
          CHECK(c1 == (2 * (de + bias) * dk + (de + bias) * dv + (dv + bias) * de));
          if (!bias) CHECK(remark11_count(one) == double(c1));
          for (std::int64_t h = 1; h <= 64; ++h) {
            AttentionShape s = one;
            s.h = h;
            CHECK(head_count_allowed(s) == (dk % h == 0 && dv % h == 0));
            if (head_count_allowed(s)) CHECK(parameter_count(s) == c1);
            else CHECK_THROWS_AS(parameter_count(s), std::invalid_argument);
          }
        }
}

TEST_CASE("bias by augmentation: X with a ones column times W with a bias row equals X W + 1 b^T to rounding") {
  Rng rng(kAttentionParamsSeed);
  INFO("seed " << kAttentionParamsSeed);
  for (int n : {1, 2, 3, 17})
    for (int d : {1, 2, 3, 11}) {
      const Mat<float> x = gaussian_matrix<float>(n, d, rng), w = gaussian_matrix<float>(d, 5, rng);
      const Vec<float> b = gaussian_matrix<float>(5, 1, rng);
      const Mat<float> lhs = append_ones_column(x) * append_bias_row(w, b);
      Mat<float> rhs = x * w;
      rhs.rowwise() += b.transpose();
      // Both sum the same d + 1 products in possibly different orders: (d + 1) eps per entry
      // times the sum of magnitudes |X||W| + |b|.
      const Mat<double> mag = (x.cwiseAbs() * w.cwiseAbs()).cast<double>().rowwise() + b.cwiseAbs().cast<double>().transpose();
      const Mat<double> diff = (lhs - rhs).cast<double>().cwiseAbs();
      CHECK((diff.array() <= 2.0 * (d + 1) * std::numeric_limits<float>::epsilon() * mag.array()).all());
    }
}

TEST_CASE("zero-padded growth leaves X W_Q W_K^T X^T unchanged and new columns get zero gradient") {
  Rng rng(kAttentionParamsSeed + 1);
  INFO("seed " << kAttentionParamsSeed + 1);
  const int n = 6, d = 5, k = 2, p = 3;
  const Mat<double> x = gaussian_matrix(n, d, rng), wq = gaussian_matrix(d, k, rng), wk = gaussian_matrix(d, k, rng);
  const Mat<double> wq2 = zero_pad_columns(wq, p), wk2 = zero_pad_columns(wk, p);
  CHECK(wq2.cols() == k + p);
  CHECK(wq2.rightCols(p).isZero(0));
  ATTNLAB_CHECK_RATIO_LE((attention_scores(x, wq2, wk2, 1.0) - attention_scores(x, wq, wk, 1.0)).norm() /
                             (n * 2.2e-16 * x.squaredNorm() * wq.norm() * wk.norm()),
                         30, "zero-padded scores against the unpadded ones");
  CHECK((new_columns_block(gaussian_matrix(d, p, rng), k).leftCols(k)).isZero(0));
  AttentionLoss<double> loss(x, gaussian_matrix(d, 3, rng), gaussian_matrix(3, d, rng), gaussian_matrix(n, d, rng));
  const auto grads = factor_gradients(x, wq2, wk2, 1.0, loss.gradient(attention_scores(x, wq2, wk2, 1.0)));
  // The new columns of dL/dW_Q are X^T G X (new columns of W_K) = 0 exactly: a saddle.
  CHECK(grads.wq.rightCols(p).isZero(0));
  CHECK(grads.wk.rightCols(p).isZero(0));
  CHECK(grads.wq.leftCols(k).norm() > 0);
}

TEST_CASE("head split: the reference projection is bitwise the concatenation of per-head projections") {
  Rng rng(kAttentionParamsSeed + 2);
  INFO("seed " << kAttentionParamsSeed + 2);
  for (int h : {1, 2, 3, 4}) {
    const int d_head = 3, d_model = h * d_head, n = 5;
    const Mat<float> x = gaussian_matrix<float>(n, d_model, rng), w = gaussian_matrix<float>(d_model, d_model, rng);
    const Vec<float> b = gaussian_matrix<float>(d_model, 1, rng);
    const Mat<float> full = linear_forward_reference(x, w, b);
    const Mat<float> fast = linear_forward(x, w, b);
    for (int i = 0; i < h; ++i) {
      const Mat<float> head = linear_forward_reference(x, head_rows(w, h, i), head_rows(b, h, i));
      CHECK(head == full.middleCols(i * d_head, d_head));
      const Mat<float> head_fast = linear_forward(x, head_rows(w, h, i), head_rows(b, h, i));
      CHECK((head_fast - fast.middleCols(i * d_head, d_head)).norm() <=
            2.0f * (d_model + 1) * std::numeric_limits<float>::epsilon() * (x.norm() * w.norm() + b.norm()) * 4);
    }
  }
}

TEST_CASE("factored and merged scores agree, and counts match the formulas and the crossover") {
  Rng rng(kAttentionParamsSeed + 3);
  INFO("seed " << kAttentionParamsSeed + 3);
  for (int n : {1, 2, 3, 9})
    for (int d : {1, 2, 5}) {
      const int dk = 1 + d / 2;
      const Mat<double> x = gaussian_matrix(n, d, rng), wq = gaussian_matrix(d, dk, rng), wk = gaussian_matrix(d, dk, rng);
      const Mat<double> diff = factored_scores(x, wq, wk) - merged_scores(x, Mat<double>(wq * wk.transpose()));
      ATTNLAB_CHECK_RATIO_LE(diff.norm() / (std::max(d, dk) * 2.2e-16 * x.squaredNorm() * wq.norm() * wk.norm()), 30,
                             "factored scores against merged ones");
    }
  CHECK(merged_parameter_count(64) == 4096);
  CHECK(factored_parameter_count(64, 16) == 2048);
  for (double n : {1.0, 16.0, 1024.0})
    for (double d : {8.0, 64.0}) {
      const double dk = crossover_head_dim(n, d);
      CHECK(factored_score_multiply_adds(n, d, dk) == doctest::Approx(merged_score_multiply_adds(n, d)));
      CHECK(factored_score_multiply_adds(n, d, 0.9 * dk) < merged_score_multiply_adds(n, d));
      CHECK(factored_score_multiply_adds(n, d, 1.1 * dk) > merged_score_multiply_adds(n, d));
    }
}
