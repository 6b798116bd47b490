// The score probe (G10-G12): it changes nothing in the model it copies (logits and gradients bit-identical),
// its S is X' M X'^T of the notation, and its dL/dS matches central finite differences through
// loss_with_offsets, for a tiny model in double with printed seed.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "attnlab/core/rng.hpp"
#include "attnlab/model/analysis/score_probe.hpp"
#include "attnlab/model/patch_embedding.hpp"
#include "attnlab/model/trainer.hpp"
#include "model_test_support.hpp"
#include "support.hpp"

using namespace attnlab;

namespace {

const std::uint64_t kScoreProbeSeed = attnlab::testing::test_seed(20251127);  // ATTNLAB_TEST_SEED overrides it

ViTConfig probe_config(const std::string& method) {
  ViTConfig c;
  c.image = 8;
  c.patch = 4;
  c.stride = 2;
  c.pad = 1;
  c.D = 8;
  c.heads = 2;
  c.layers = 2;
  c.mlp = 12;
  c.seed = kScoreProbeSeed;
  c.attention.method = method;
  return c;
}

ViT<double> probe_model(const std::string& method) {
  return ViT<double>(probe_config(method));
}

struct Images {
  std::vector<std::uint8_t> pixels, labels;
  ImageSet set() const { return {pixels, labels, 8}; }
};

Images random_images(int count, Rng& rng) {
  Images im;
  im.pixels.resize(static_cast<std::size_t>(count) * 64);
  im.labels.resize(static_cast<std::size_t>(count));
  for (auto& v : im.pixels) v = static_cast<std::uint8_t>(rng.next_u64() % 256);
  for (auto& v : im.labels) v = static_cast<std::uint8_t>(rng.next_u64() % 10);
  return im;
}

// Score weights scaled up so the attention is far from uniform (a uniform softmax would hide a transposed S).
void sharpen(ViT<double>& model, Rng& rng) {
  for (auto& b : model.params().blocks) {
    b.attn.Wq *= 60;
    b.attn.Wk *= 60;
    b.attn.bq = gaussian_matrix<double>(b.attn.bq.rows(), 1, rng, 1.0);
    b.attn.bk = gaussian_matrix<double>(b.attn.bk.rows(), 1, rng, 1.0);
  }
}

}  // namespace

TEST_CASE("score probe: the copy computes exactly what the model computes") {
  INFO("seed " << kScoreProbeSeed);
  Rng rng(kScoreProbeSeed);
  ViT<double> model = probe_model("exact");
  sharpen(model, rng);
  const Images im = random_images(3, rng);
  const ImageSet data = im.set();
  ScoreProbe<double> probe(model);
  for (std::int64_t i = 0; i < data.count(); ++i) {
    // The model itself on the same single image.
    ViTActivations<double> act;
    const std::int64_t one[1] = {i};
    patchify<double>(data.pixels, one, 8, 4, 2, 1, act.patches);
    ViTGrads<double> g_model = model.zero_grads(), g_probe = model.zero_grads();
    const std::uint8_t label[1] = {data.labels[static_cast<std::size_t>(i)]};
    const double loss_model = model.forward_backward(act, label, 0.5, &g_model);
    ImageScores<double> scores;
    const double loss_probe = probe.run(data, i, 0.5, scores, &g_probe);
    CHECK(loss_probe == loss_model);
    CHECK(probe.model().params().head_W == model.params().head_W);
    for (std::size_t l = 0; l < 2; ++l) {
      CHECK(g_probe.params.blocks[l].attn.Wq == g_model.params.blocks[l].attn.Wq);
      CHECK(g_probe.params.blocks[l].attn.bk == g_model.params.blocks[l].attn.bk);
      CHECK(scores.z[l] == act.blocks[l].ln1_out);
    }
    CHECK(g_probe.params.embed_pos == g_model.params.embed_pos);
    // Empty offsets: the loss is the run's loss, bit for bit.
    CHECK(probe.loss_with_offsets(data, i, 1, std::vector<Mat<double>>(2), 0.5) == loss_model);
  }
}

TEST_CASE("score probe: S = X' M X'^T with X' = [z | 1], M = W'_Q W'_K^T / sqrt(d_k)") {
  INFO("seed " << kScoreProbeSeed + 1);
  Rng rng(kScoreProbeSeed + 1);
  ViT<double> model = probe_model("exact");
  sharpen(model, rng);
  const Images im = random_images(1, rng);
  ScoreProbe<double> probe(model);
  ImageScores<double> sc;
  probe.run(im.set(), 0, 1.0, sc);
  const Eigen::Index n = model.config().tokens(), D = model.config().D, H = model.config().heads;
  for (std::size_t l = 0; l < 2; ++l) {
    const auto& p = model.params().blocks[l].attn;
    const Eigen::Index dk = p.Wq.cols() / H;
    Mat<double> x(n, D + 1);
    x << sc.z[l], Mat<double>::Ones(n, 1);
    for (Eigen::Index h = 0; h < H; ++h) {
      Mat<double> wq(D + 1, dk), wk(D + 1, dk);
      wq << p.Wq.middleCols(h * dk, dk), p.bq.segment(h * dk, dk).transpose();
      wk << p.Wk.middleCols(h * dk, dk), p.bk.segment(h * dk, dk).transpose();
      const Mat<double> m = wq * wk.transpose() / std::sqrt(double(dk));
      const Mat<double> s = x * m * x.transpose();
      const Mat<double>& got = sc.s[l][static_cast<std::size_t>(h)];
      REQUIRE(got.rows() == n);
      // Two orderings of the same sums: rounding of order (D + 1) eps |x|^2 |M|; the ratio against 30.
      const double unit = double(D + 1) * 2.2e-16 * x.squaredNorm() * m.norm();
      ATTNLAB_CHECK_RATIO_LE((got - s).norm() / unit, 30, "probed scores against X M X^T");
      CHECK(s.cwiseAbs().maxCoeff() > 1.0);  // sharpened: the check compares real, non-uniform scores
    }
  }
}

TEST_CASE("score probe: dL/dS against central finite differences of loss_with_offsets") {
  INFO("seed " << kScoreProbeSeed + 2);
  Rng rng(kScoreProbeSeed + 2);
  ViT<double> model = probe_model("exact");
  sharpen(model, rng);
  const Images im = random_images(2, rng);
  const ImageSet data = im.set();
  ScoreProbe<double> probe(model);
  const Eigen::Index n = model.config().tokens();
  for (std::int64_t image = 0; image < 2; ++image) {
    ImageScores<double> sc;
    probe.run(data, image, 1.0, sc);
    for (Eigen::Index l = 0; l < 2; ++l)
      for (std::size_t h = 0; h < 2; ++h) {
        std::vector<Mat<double>> offsets(2);
        offsets[h] = Mat<double>::Zero(n, n);
        const Mat<double>& g = sc.g[static_cast<std::size_t>(l)][h];
        CHECK(g.cwiseAbs().maxCoeff() > 1e-8);
        // Rows of dL/dS sum to zero: softmax is invariant to adding a constant to a row.
        CHECK(g.rowwise().sum().cwiseAbs().maxCoeff() <= 1e-14 * n * g.cwiseAbs().maxCoeff() + 1e-300);
        const auto entries = testing::sample_entries(n * n, 24, rng);
        const double ratio = testing::fd_ratio(
            offsets[h], g, [&] { return probe.loss_with_offsets(data, image, l, offsets, 1.0); }, entries);
        INFO("image " << image << " layer " << l << " head " << h);
        ATTNLAB_CHECK_RATIO_LE(ratio, testing::kFdTolerance, "dL/dS");
      }
  }
}

TEST_CASE("score probe: refusals") {
  CHECK_THROWS_AS(ScoreProbe<double>(probe_model("linear-elu")), std::invalid_argument);
  Rng rng(kScoreProbeSeed + 3);
  const Images im = random_images(1, rng);
  ScoreProbe<double> probe(probe_model("exact"));
  ImageScores<double> sc;
  CHECK_THROWS_AS(probe.run(im.set(), 1, 1.0, sc), std::out_of_range);
  CHECK_THROWS_AS(probe.loss_with_offsets(im.set(), 0, 2, std::vector<Mat<double>>(2), 1.0), std::invalid_argument);
  CHECK_THROWS_AS(probe.loss_with_offsets(im.set(), 0, 0, std::vector<Mat<double>>(1), 1.0), std::invalid_argument);
  std::vector<Mat<double>> wrong(2);
  wrong[0] = Mat<double>::Zero(3, 3);
  CHECK_THROWS_AS(probe.loss_with_offsets(im.set(), 0, 0, wrong, 1.0), std::invalid_argument);
  // After a refused call the probe still computes the model's loss.
  CHECK(probe.loss_with_offsets(im.set(), 0, 0, std::vector<Mat<double>>(2), 1.0) == probe.run(im.set(), 0, 1.0, sc));
}
