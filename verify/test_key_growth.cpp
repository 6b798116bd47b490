// Growing d_k (model/key_growth.hpp): the fast Z* and closed form against the dense ones of
// theory/weighted_lowrank on small instances, each grown model's scores against X' M_arm X'^T, arm (a)
// with zero new columns leaving the outputs unchanged, the Adam state after growth, bad input.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "attnlab/core/rng.hpp"
#include "attnlab/model/key_growth.hpp"
#include "attnlab/model/patch_embedding.hpp"
#include "attnlab/model/trainer.hpp"
#include "attnlab/model/vit_copy.hpp"
#include "attnlab/theory/weighted_lowrank.hpp"
#include "model_test_support.hpp"
#include "support.hpp"

using namespace attnlab;
using namespace attnlab::testing;

namespace {

using M = Mat<double>;
constexpr double kEps = std::numeric_limits<double>::epsilon();

// Rows of a LayerNorm output (centred, unit variance, then gamma and beta) with the bias column: X' has a
// null direction, as every layer's input in the model does. generic = false; otherwise Gaussian rows.
M stacked_input(Eigen::Index rows, Eigen::Index D, bool layernorm, Rng& rng) {
  M z = gaussian_matrix(rows, D, rng);
  if (layernorm) {
    const M gamma = M::Ones(1, D) + gaussian_matrix(1, D, rng, 0.3), beta = gaussian_matrix(1, D, rng, 0.2);
    for (Eigen::Index i = 0; i < rows; ++i) {
      z.row(i).array() -= z.row(i).mean();
      z.row(i) /= std::sqrt(z.row(i).squaredNorm() / static_cast<double>(D));
      z.row(i) = z.row(i).cwiseProduct(gamma) + beta;
    }
  }
  M x(rows, D + 1);
  x << z, M::Ones(rows, 1);
  return x;
}

// B = sign blockdiag(g) + X' M X'^T, formed densely.
M dense_b(const M& x, const std::vector<M>& g, double sign, const M& m) {
  M b = x * m * x.transpose();
  const Eigen::Index n = g[0].rows();
  for (std::size_t i = 0; i < g.size(); ++i) b.block(static_cast<Eigen::Index>(i) * n, static_cast<Eigen::Index>(i) * n, n, n) += sign * g[i];
  return b;
}

}  // namespace

TEST_CASE("StackedInput: Z* and the closed form without B equal the dense X^+ B X^+T and closed_form_lowrank") {
  Rng rng(kModelTestSeed + 50);
  INFO("seed " << kModelTestSeed + 50);
  const Eigen::Index n = 6, images = 3, D = 5, r = 3;
  for (bool layernorm : {false, true})
    for (double sign : {1.0, -1.0}) {
      INFO("layernorm rows " << layernorm << " sign " << sign);
      const M x = stacked_input(n * images, D, layernorm, rng);
      std::vector<M> g;
      for (Eigen::Index b = 0; b < images; ++b) g.push_back(gaussian_matrix(n, n, rng, 0.1));
      const M m = gaussian_matrix(D + 1, 2, rng) * gaussian_matrix(2, D + 1, rng);
      const StackedInput fast(x, n);
      CHECK(fast.rank() == (layernorm ? D : D + 1));  // LayerNorm's rows leave one null direction
      const M b = dense_b(x, g, sign, m);
      const M k = fast.projected_blocks(g);
      CHECK(fast.scores_norm(m) == doctest::Approx((x * m * x.transpose()).norm()).epsilon(1e-12));
      // Rounding of X^+ B X^+T: c N eps ||X^+||^2 ||B|| kappa; the ratio against 30.
      const auto& s = fast.singular_values();
      const double kappa = s(0) / s(fast.rank() - 1), xp2 = 1 / (s(fast.rank() - 1) * s(fast.rank() - 1));
      const double unit = static_cast<double>(n * images) * kEps * xp2 * b.norm() * kappa;
      const M z_dense = unconstrained_minimiser(b, x);
      ATTNLAB_CHECK_RATIO_LT((fast.z_star(k, sign, m) - z_dense).norm() / unit, 30, "Z* against the dense minimiser");
      // The ratio can fail: Z* for the other sign is off by 2 ||X^+ G X^+T||.
      ATTNLAB_CHECK_RATIO_GT((fast.z_star(k, -sign, m) - z_dense).norm() / unit, 30, "Z* of the other sign against the dense minimiser");
      // The closed form: the same product as closed_form_lowrank's, and its predicted minimum attained.
      const ClosedFormLowRank cf = closed_form_lowrank(b, x, r);
      const LowRankFactors f = fast.closed_form(k, sign, m, r);
      CHECK(f.left.cols() == r);
      ATTNLAB_CHECK_RATIO_LT((f.product() - cf.factors.product()).norm() / (unit * b.norm() * xp2), 30,
                             "closed form against closed_form_lowrank");
      CHECK(lowrank_objective<double>(b, x, f.product()) == doctest::Approx(cf.predicted_minimum()).epsilon(1e-10).scale(b.squaredNorm()));
      // The recipe arm: the truncated SVD of that Z*.
      const GrowthArm arm = sign > 0 ? GrowthArm::recipe : GrowthArm::descent;
      const LowRankFactors rec = grown_head_factors(fast, g, m, arm, r);
      ATTNLAB_CHECK_RATIO_LT((rec.product() - recipe_lowrank(b, x, r).product()).norm() / (unit * b.norm() * xp2), 30,
                             "grown head against recipe_lowrank");
      if (sign < 0) {
        const LowRankFactors cfa = grown_head_factors(fast, g, m, GrowthArm::closed_form, r);
        ATTNLAB_CHECK_RATIO_LT((cfa.product() - cf.factors.product()).norm() / (unit * b.norm() * xp2), 30,
                               "closed-form arm against closed_form_lowrank");
      }
    }
  // Bad input: no bias column, rows that are not images of n.
  M no_bias = gaussian_matrix(12, 4, rng);
  CHECK_THROWS_WITH_AS(StackedInput(no_bias, 6), doctest::Contains("not all ones"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(StackedInput(stacked_input(10, 3, false, rng), 6), doctest::Contains("n = 6"), std::invalid_argument);
  const StackedInput ok(stacked_input(12, 3, false, rng), 6);
  CHECK_THROWS_WITH_AS(ok.projected_blocks({M::Zero(6, 6)}), doctest::Contains("1 G blocks for 2 images"), std::invalid_argument);
  CHECK_THROWS_AS(grown_head_factors(ok, {M::Zero(6, 6), M::Zero(6, 6)}, M::Zero(4, 4), GrowthArm::random_columns, 2),
                  std::invalid_argument);
}

namespace {

ViTConfig tiny_exact(Eigen::Index key_width) {
  ViTConfig c;
  c.image = 8;
  c.D = 8;
  c.heads = 2;
  c.layers = 2;
  c.mlp = 12;
  c.seed = 77;
  c.key_width = key_width;
  c.attention.method = "exact";
  return c;
}

struct Batch {
  std::vector<std::uint8_t> pixels, labels;
  std::vector<std::int64_t> images;
};

Batch random_batch(Eigen::Index count, Rng& rng) {
  Batch b;
  b.pixels.resize(static_cast<std::size_t>(count * 64));
  for (auto& p : b.pixels) p = static_cast<std::uint8_t>(rng.next_u64() % 256);
  for (Eigen::Index i = 0; i < count; ++i) {
    b.labels.push_back(static_cast<std::uint8_t>(rng.next_u64() % 10));
    b.images.push_back(i);
  }
  return b;
}

// The model's forward on the batch (no tape): each layer's LN1 output in act.
void forward(const ViT<double>& m, const Batch& b, ViTActivations<double>& act) {
  patchify<double>(b.pixels, b.images, 8, 4, 2, 1, act.patches);
  m.forward_backward(act, {}, 1.0, nullptr);
}

}  // namespace

TEST_CASE("grow_key_width: each arm's grown scores equal X' M_arm X'^T, M_arm from the dense problem") {
  Rng rng(kModelTestSeed + 51);
  INFO("seed " << kModelTestSeed + 51);
  ViT<double> model(tiny_exact(2));
  for (auto& t : model.parameter_tensors())
    Eigen::Map<M>(t.data, t.rows, t.cols) += gaussian_matrix(t.rows, t.cols, rng, 0.4);
  const Eigen::Index images = 3, n = 16, D = 8, p = 3, dk2 = 5;
  const Batch data = random_batch(images, rng);
  ViTActivations<double> act;
  forward(model, data, act);
  // A growth batch: the real stacked inputs, arbitrary G blocks (the grower takes G as given).
  GrowthBatch batch;
  batch.n = n;
  for (Eigen::Index l = 0; l < 2; ++l) {
    M x(images * n, D + 1);
    x << act.blocks[static_cast<std::size_t>(l)].ln1_out, M::Ones(images * n, 1);
    batch.x_aug.push_back(x);
    batch.g.emplace_back();
    for (Eigen::Index h = 0; h < 2; ++h) {
      batch.g.back().emplace_back();
      for (Eigen::Index b = 0; b < images; ++b) batch.g.back().back().push_back(gaussian_matrix(n, n, rng, 0.05));
    }
  }
  for (GrowthArm arm : {GrowthArm::recipe, GrowthArm::descent, GrowthArm::closed_form}) {
    INFO(growth_arm_name(arm));
    auto grown = grow_key_width(model, {p, arm, 1, 0.02}, &batch);
    CHECK(grown->config().key_width == dk2);
    CHECK(grown->params().blocks[1].attn.Wq.cols() == 2 * dk2);
    CHECK(grown->params().blocks[0].mlp.W1 == model.params().blocks[0].mlp.W1);  // the rest unchanged
    for (Eigen::Index l = 0; l < 2; ++l)
      for (Eigen::Index h = 0; h < 2; ++h) {
        INFO("layer " << l << " head " << h);
        const M& x = batch.x_aug[static_cast<std::size_t>(l)];
        const auto& g = batch.g[static_cast<std::size_t>(l)][static_cast<std::size_t>(h)];
        const M m = head_score_matrix(model, l, h);
        const M b = dense_b(x, g, arm == GrowthArm::recipe ? 1.0 : -1.0, m);
        const M m_arm = arm == GrowthArm::closed_form ? closed_form_lowrank(b, x, dk2).factors.product()
                                                      : recipe_lowrank(b, x, dk2).product();
        // The grown head's scores from its own weights (q, k with biases, 1/sqrt(d_k')) on layer l's stacked input.
        const auto& a = grown->params().blocks[static_cast<std::size_t>(l)].attn;
        const M z = x.leftCols(D);
        const M q = (z * a.Wq.middleCols(h * dk2, dk2)).rowwise() + a.bq.segment(h * dk2, dk2).transpose();
        const M k = (z * a.Wk.middleCols(h * dk2, dk2)).rowwise() + a.bk.segment(h * dk2, dk2).transpose();
        const M s_grown = q * k.transpose() / std::sqrt(static_cast<double>(dk2));
        const M s_arm = x * m_arm * x.transpose();
        CHECK((s_grown - s_arm).norm() <= 1e-9 * s_arm.norm());
        CHECK((head_score_matrix(*grown, l, h) - m_arm).norm() <= 1e-9 * m_arm.norm());
      }
  }
}

TEST_CASE("grow_key_width, arm (a): zero new columns leave the outputs unchanged; drawn ones are N(0, 0.02^2)") {
  Rng rng(kModelTestSeed + 52);
  ViT<double> model(tiny_exact(2));
  for (auto& t : model.parameter_tensors())
    Eigen::Map<M>(t.data, t.rows, t.cols) += gaussian_matrix(t.rows, t.cols, rng, 0.4);
  const Batch data = random_batch(4, rng);
  ViTActivations<double> before, after;
  forward(model, data, before);
  auto zero = grow_key_width(model, {6, GrowthArm::random_columns, 3, 0.0}, nullptr);
  CHECK(zero->config().key_width == 8);
  forward(*zero, data, after);
  CHECK((after.logits - before.logits).norm() <= 1e-12 * before.logits.norm());
  for (Eigen::Index l = 0; l < 2; ++l)
    for (Eigen::Index h = 0; h < 2; ++h)
      CHECK((head_score_matrix(*zero, l, h) - head_score_matrix(model, l, h)).norm() <= 1e-13 * head_score_matrix(model, l, h).norm());
  // Drawn columns: old ones scaled by (8/2)^{1/4}, the 6 x 2 heads' new columns of sd 0.02, new biases 0.
  ViTConfig big = tiny_exact(2);
  big.D = 64;
  big.heads = 4;
  ViT<double> wide(big);
  auto drawn = grow_key_width(wide, {6, GrowthArm::random_columns, 3, 0.02}, nullptr);
  const auto& a = wide.params().blocks[0].attn;
  const auto& g = drawn->params().blocks[0].attn;
  CHECK(g.Wq.middleCols(8, 2).isApprox(a.Wq.middleCols(2, 2) * std::pow(4.0, 0.25), 1e-15));
  CHECK(g.bq.segment(10, 6).isZero());
  const M fresh = g.Wk.middleCols(26, 6);  // head 3's new key columns
  CHECK(std::abs(std::sqrt(fresh.squaredNorm() / static_cast<double>(fresh.size())) / 0.02 - 1) < 0.2);
  // Another seed draws other columns; the same seed the same.
  CHECK(grow_key_width(wide, {6, GrowthArm::random_columns, 4, 0.02}, nullptr)->params().blocks[0].attn.Wq != g.Wq);
  CHECK(grow_key_width(wide, {6, GrowthArm::random_columns, 3, 0.02}, nullptr)->params().blocks[0].attn.Wq == g.Wq);
}

TEST_CASE("adam_after_growth: Wq, Wk, bq, bk restart at their grown sizes, and the grown model trains") {
  Rng rng(kModelTestSeed + 53);
  ViT<float> model(tiny_exact(2));
  const Batch data = random_batch(8, rng);
  const ImageSet set{data.pixels, data.labels, 8};
  Trainer<float> trainer(model);
  for (int i = 0; i < 3; ++i) trainer.step(set, data.images, 1e-3);
  auto grown = grow_key_width(model, {6, GrowthArm::random_columns, 5, 0.02}, nullptr);
  Trainer<float> continued(*grown, adam_after_growth(trainer.adam(), *grown));
  const auto before = copy_vit<float>(*grown);
  const double loss = continued.step(set, data.images, 1e-3);
  CHECK(std::isfinite(loss));
  CHECK(continued.adam().steps() == 4);
  // A restarted tensor's first step moves every entry with a nonzero gradient by about lr (Adam's first step).
  const auto& w0 = before->params().blocks[0].attn.Wq;
  const auto& w1 = grown->params().blocks[0].attn.Wq;
  CHECK((w1 - w0).cwiseAbs().maxCoeff() == doctest::Approx(1e-3).epsilon(1e-3));
  // The ungrown model cannot continue with the grown state, nor the grown one with the old state.
  Trainer<float> mismatched(*grown, trainer.adam());
  CHECK_THROWS_WITH_AS(mismatched.step(set, data.images, 1e-3), doctest::Contains("changed size"), std::invalid_argument);
}

TEST_CASE("grow_key_width: refuses a non-exact model, p < 1 and a missing or mismatched batch") {
  ViTConfig lin = tiny_exact(0);
  lin.attention.method = "linformer";
  ViT<float> linformer(lin);
  CHECK_THROWS_WITH_AS(grow_key_width(linformer, {2, GrowthArm::random_columns, 1, 0.02}, nullptr),
                       doctest::Contains("exact attention"), std::invalid_argument);
  ViT<float> exact(tiny_exact(2));
  CHECK_THROWS_WITH_AS(grow_key_width(exact, {0, GrowthArm::random_columns, 1, 0.02}, nullptr), doctest::Contains("p = 0"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(grow_key_width(exact, {2, GrowthArm::recipe, 1, 0.02}, nullptr), doctest::Contains("growth batch"),
                       std::invalid_argument);
  GrowthBatch wrong;
  wrong.n = 16;
  wrong.x_aug.resize(2, Mat<double>::Ones(16, 5));
  wrong.g.resize(2);
  CHECK_THROWS_WITH_AS(grow_key_width(exact, {2, GrowthArm::closed_form, 1, 0.02}, &wrong), doctest::Contains("growth batch"),
                       std::invalid_argument);
}
